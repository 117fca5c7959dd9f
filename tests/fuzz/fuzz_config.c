/* fuzz_config.c: libFuzzer target for the configuration parser. Each input
 * is parsed as a configuration file (the exact bytes, unterminated, so
 * AddressSanitizer catches any read past the end), then as an XALLOC_CONF
 * string, by xa_config_validate and by xalloc_config_set. After each parse
 * every option must hold a value inside its documented range, and every
 * message must be one line of printable text. Built by mk/config.mk with
 * clang -fsanitize=fuzzer,address,undefined. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "xalloc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what)
{
    fprintf(stderr, "fuzz_config: invariant broken: %s\n", what);
    abort();
}

static void check_message(const char *line, size_t len)
{
    if (len < 9 || len > 1024 || memcmp(line, "xalloc: ", 8) != 0)
        fail("message prefix or length");
    if (line[len - 1] != '\n')
        fail("message does not end in a newline");
    for (size_t i = 0; i + 1 < len; i++)
        if ((unsigned char)line[i] < 0x20 || (unsigned char)line[i] >= 0x7f)
            fail("message holds a control or non-ASCII byte");
}

static void check_string(const char *s, size_t size, bool abspath)
{
    const char *end = memchr(s, 0, size);
    if (!end)
        fail("string option not terminated");
    for (const char *p = s; p < end; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            fail("string option holds a control byte");
    if (abspath && end != s && s[0] != '/')
        fail("stats_dir is not absolute");
}

static void check_options(void)
{
    const struct xa_options *o = &xa_opt;
    if (o->thp < 0 || o->thp > 2 || o->numa < 0 || o->numa > 2 ||
        o->purge < 0 || o->purge > 1)
        fail("enum out of range");
    if (o->arenas < 1 || o->arenas > 1024)
        fail("arenas out of range");
    if (o->decay_ms < 0 || o->decay_ms > 3600000)
        fail("decay_ms out of range");
    if (o->stats_interval_ms < 10 || o->stats_interval_ms > 3600000)
        fail("stats_interval_ms out of range");
    if (o->tcache_max > 2097152)
        fail("tcache_max out of range");
    if (o->prof_sample < 1 || o->prof_sample > (1ull << 30))
        fail("prof_sample out of range");
    if (o->prof_interval > (64ull << 30))
        fail("prof_interval out of range");
    check_string(o->stats_dir, sizeof o->stats_dir, true);
    check_string(o->prof_dir, sizeof o->prof_dir, false);
    /* Every value prints, and prints the same way through both paths. */
    for (int i = 0; i < xa_config_option_count(); i++) {
        const char *name, *source, *doc;
        char v[300], v2[300];
        if (!xa_config_option_info(i, &name, v, sizeof v, &source, &doc))
            fail("option_info");
        if (xalloc_config_get(name, v2, sizeof v2, NULL) != 0 || strcmp(v, v2))
            fail("config_get disagrees with option_info");
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int ready;
    if (!ready) {
        xa_config_set_message_hook(check_message);
        ready = 1;
    }
    xa_config_reset_for_test();
    xa_config_parse_file_buffer((const char *)data, size, "fuzz.conf", "prog");
    check_options();

    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = 0;
    xa_config_parse_sources(NULL, false, s, "prog");
    check_options();
    xa_config_validate(s);
    char msg[200];
    memset(msg, 'x', sizeof msg);
    xalloc_config_set(s, msg, sizeof msg);
    if (!memchr(msg, 0, sizeof msg))
        fail("xalloc_config_set message not terminated");
    check_options();
    free(s);
    return 0;
}
