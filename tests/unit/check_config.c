/* check_config.c: unit tests of the tuning layer (src/config.c, options.def).
 * Drives the parser through its test seams (xa_config_parse_sources,
 * xa_config_load, xa_config_parse_file_buffer) with explicit inputs, so the
 * real environment and /etc/xalloc.conf are never involved, and captures
 * every message through the message hook to assert its exact text. */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "xalloc.h"

/* ---- message capture ---- */

static char cap[1 << 18];
static size_t cap_len;
static int cap_lines;

/* Every message is one complete line of printable ASCII. */
static void hook(const char *line, size_t len)
{
    ck_assert_uint_gt(len, 8);
    ck_assert(memcmp(line, "xalloc: ", 8) == 0);
    ck_assert_int_eq(line[len - 1], '\n');
    for (size_t i = 0; i + 1 < len; i++)
        ck_assert_msg(line[i] >= 0x20 && line[i] < 0x7f,
                      "byte %zu of a message is 0x%02x", i, (unsigned char)line[i]);
    if (cap_len + len < sizeof cap) {
        memcpy(cap + cap_len, line, len);
        cap_len += len;
        cap[cap_len] = 0;
    }
    cap_lines++;
}

static void setup(void)
{
    xa_config_reset_for_test();
    xa_config_set_message_hook(hook);
    cap_len = 0;
    cap[0] = 0;
    cap_lines = 0;
}

static void teardown(void)
{
    xa_config_set_message_hook(NULL);
}

static void clear_cap(void)
{
    cap_len = 0;
    cap[0] = 0;
    cap_lines = 0;
}

/* Value of an option as xalloc_config_get formats it (static buffer). */
static const char *val(const char *name)
{
    static char buf[512];
    ck_assert_int_eq(xalloc_config_get(name, buf, sizeof buf, NULL), 0);
    return buf;
}

static const char *src(const char *name)
{
    const char *s = NULL;
    char buf[8];
    ck_assert_int_eq(xalloc_config_get(name, buf, sizeof buf, &s), 0);
    return s;
}

static int env(const char *s)
{
    return xa_config_parse_sources(NULL, false, s, "prog");
}

static int default_arenas(void)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    ck_assert_int_eq(sched_getaffinity(0, sizeof set, &set), 0);
    int n = 4 * CPU_COUNT(&set);
    return n < 1 ? 1 : n > 1024 ? 1024 : n;
}

/* Expected message text with the default arenas substituted. */
static const char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
static const char *fmt(const char *f, ...)
{
    static char buf[4096];
    va_list ap;
    va_start(ap, f);
    vsnprintf(buf, sizeof buf, f, ap);
    va_end(ap);
    return buf;
}

static char tmp_path[64];

/* Writes a temporary config file; returns its path. */
static const char *tmp_file(const void *data, size_t len)
{
    strcpy(tmp_path, "/tmp/check_config_XXXXXX");
    int fd = mkstemp(tmp_path);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, data, len), (ssize_t)len);
    close(fd);
    return tmp_path;
}

static int file(const char *text, const char *envs, const char *exe)
{
    const char *p = tmp_file(text, strlen(text));
    int e = xa_config_parse_sources(p, true, envs, exe);
    unlink(p);
    return e;
}

/* ---- the table and the defaults ---- */

START_TEST(test_defaults)
{
    char ar[16];
    snprintf(ar, sizeof ar, "%d", default_arenas());
    ck_assert_str_eq(val("thp"), "default");
    ck_assert_str_eq(val("arenas"), ar);
    ck_assert_str_eq(val("numa"), "on");
    ck_assert_str_eq(val("decay_ms"), "1000");
    ck_assert_str_eq(val("purge"), "dontneed");
    ck_assert_str_eq(val("background_thread"), "auto");
    ck_assert_str_eq(val("tcache"), "on");
    ck_assert_str_eq(val("tcache_max"), "1m");
    ck_assert_str_eq(val("stats"), "on");
    ck_assert_str_eq(val("stats_dir"), "");
    ck_assert_str_eq(val("stats_interval_ms"), "1000");
    ck_assert_str_eq(val("stats_print"), "false");
    ck_assert_str_eq(val("verbose"), "false");
    ck_assert_str_eq(val("abort_on_error"), "false");
    ck_assert_str_eq(val("junk"), "false");
    ck_assert_str_eq(val("prof"), "false");
    ck_assert_str_eq(val("prof_sample"), "512k");
    ck_assert_str_eq(val("prof_dir"), "");
    ck_assert_str_eq(val("prof_interval"), "0");
    /* The raw fields the core reads. */
    ck_assert_int_eq(xa_opt.thp, XA_THP_DEFAULT);
    ck_assert_int_eq(xa_opt.arenas, default_arenas());
    ck_assert_int_eq(xa_opt.numa, XA_NUMA_ON);
    ck_assert_int_eq(xa_opt.decay_ms, 1000);
    ck_assert_int_eq(xa_opt.purge, XA_PURGE_DONTNEED);
    ck_assert(xa_opt.background_thread == XA_BG_AUTO && xa_opt.tcache && xa_opt.stats);
    ck_assert_uint_eq(xa_opt.tcache_max, 1024 * 1024);
    ck_assert_int_eq(xa_opt.stats_interval_ms, 1000);
    ck_assert(!xa_opt.stats_print && !xa_opt.verbose && !xa_opt.abort_on_error);
    ck_assert(!xa_opt.junk && !xa_opt.prof);
    ck_assert_uint_eq(xa_opt.prof_sample, 512 * 1024);
    ck_assert_uint_eq(xa_opt.prof_interval, 0);
    ck_assert_str_eq(xa_opt.stats_dir, "");
    ck_assert_str_eq(xa_opt.prof_dir, "");
    for (int i = 0; i < xa_config_option_count(); i++) {
        const char *name, *s;
        ck_assert(xa_config_option_info(i, &name, NULL, 0, &s, NULL));
        ck_assert_str_eq(s, "default");
    }
    ck_assert_int_eq(cap_lines, 0);
}
END_TEST

START_TEST(test_table)
{
    int n = xa_config_option_count();
    ck_assert_int_eq(n, 19);
    for (int i = 0; i < n; i++) {
        const char *name, *source, *doc;
        char v[300], v2[300];
        ck_assert(xa_config_option_info(i, &name, v, sizeof v, &source, &doc));
        ck_assert(name && *name && doc && strlen(doc) > 10);
        ck_assert_int_eq(xalloc_config_get(name, v2, sizeof v2, NULL), 0);
        ck_assert_str_eq(v, v2);
        for (int j = 0; j < i; j++) {
            const char *other;
            xa_config_option_info(j, &other, NULL, 0, NULL, NULL);
            ck_assert_str_ne(name, other);
        }
        /* The default, written back, parses without complaint. */
        char kv[400];
        snprintf(kv, sizeof kv, "%s:%s", name, v);
        ck_assert_int_eq(xa_config_validate(kv), 0);
    }
    ck_assert(!xa_config_option_info(-1, NULL, NULL, 0, NULL, NULL));
    ck_assert(!xa_config_option_info(n, NULL, NULL, 0, NULL, NULL));
    ck_assert_int_eq(cap_lines, 0);
}
END_TEST

/* ---- one test per type ---- */

START_TEST(test_bool)
{
    static const char *const t[] = {"true", "on", "yes", "1", "TRUE", "On", "YES"};
    static const char *const f[] = {"false", "off", "no", "0", "False", "OFF"};
    char kv[64];
    for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
        snprintf(kv, sizeof kv, "junk:%s,tcache:%s", t[i], f[i % 6]);
        ck_assert_int_eq(env(kv), 0);
        ck_assert(xa_opt.junk && !xa_opt.tcache);
        ck_assert_str_eq(val("junk"), "true");
        ck_assert_str_eq(val("tcache"), "off"); /* on/off options */
    }
    ck_assert_int_eq(env("junk:maybe"), 1);
    ck_assert_str_eq(cap, "xalloc: XALLOC_CONF: junk: 'maybe' is not a boolean "
                          "(true|false|on|off|yes|no|1|0); using false\n");
    ck_assert(!xa_opt.junk);
    clear_cap();
    ck_assert_int_eq(env("stats:2"), 1);
    ck_assert_str_eq(cap, "xalloc: XALLOC_CONF: stats: '2' is not a boolean "
                          "(true|false|on|off|yes|no|1|0); using on\n");
}
END_TEST

START_TEST(test_int)
{
    int da = default_arenas();
    ck_assert_int_eq(env("arenas:1"), 0);
    ck_assert_int_eq(xa_opt.arenas, 1);
    ck_assert_int_eq(env("arenas:1024"), 0);
    ck_assert_int_eq(xa_opt.arenas, 1024);
    ck_assert_int_eq(env("arenas:+7"), 0);
    ck_assert_int_eq(xa_opt.arenas, 7);
    ck_assert_str_eq(src("arenas"), "XALLOC_CONF");
    ck_assert_int_eq(cap_lines, 0);

    ck_assert_int_eq(env("arenas:0"), 1);
    ck_assert_str_eq(cap, fmt("xalloc: XALLOC_CONF: arenas: '0' is out of range 1..1024; using %d\n", da));
    ck_assert_int_eq(xa_opt.arenas, da);
    ck_assert_str_eq(src("arenas"), "default");
    clear_cap();
    ck_assert_int_eq(env("arenas:1025"), 1);
    ck_assert_str_eq(cap, fmt("xalloc: XALLOC_CONF: arenas: '1025' is out of range 1..1024; using %d\n", da));
    clear_cap();
    ck_assert_int_eq(env("arenas:-3"), 1);
    ck_assert_str_eq(cap, fmt("xalloc: XALLOC_CONF: arenas: '-3' is out of range 1..1024; using %d\n", da));
    clear_cap();
    ck_assert_int_eq(env("arenas:99999999999999999999999999"), 1);
    ck_assert(strstr(cap, "is out of range 1..1024"));
    clear_cap();
    ck_assert_int_eq(env("arenas:-99999999999999999999999999"), 1);
    ck_assert(strstr(cap, "is out of range 1..1024"));
    clear_cap();
    ck_assert_int_eq(env("arenas:abc"), 1);
    ck_assert_str_eq(cap, fmt("xalloc: XALLOC_CONF: arenas: 'abc' is not an integer; using %d\n", da));
    clear_cap();
    ck_assert_int_eq(env("arenas:12abc"), 1);
    ck_assert(strstr(cap, "'12abc' is not an integer"));
    clear_cap();
    ck_assert_int_eq(env("arenas:0x10"), 1);
    ck_assert(strstr(cap, "'0x10' is not an integer"));
    clear_cap();
    ck_assert_int_eq(env("arenas:-"), 1);
    ck_assert(strstr(cap, "'-' is not an integer"));
    ck_assert_int_eq(xa_opt.arenas, da);
}
END_TEST

START_TEST(test_size)
{
    static const struct {
        const char *in;
        uint64_t bytes;
        const char *shown;
    } ok[] = {
        {"0", 0, "0"},           {"1000", 1000, "1000"},  {"1536", 1536, "1536"},
        {"2048", 2048, "2k"},    {"64k", 65536, "64k"},   {"64K", 65536, "64k"},
        {"64kb", 65536, "64k"},  {"64KiB", 65536, "64k"}, {"1m", 1048576, "1m"},
        {"1MiB", 1048576, "1m"}, {"1mb", 1048576, "1m"},  {"1024k", 1048576, "1m"},
        {"100b", 100, "100"},
    };
    char kv[64];
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        snprintf(kv, sizeof kv, "tcache_max:%s", ok[i].in);
        ck_assert_int_eq(env(kv), 0);
        ck_assert_uint_eq(xa_opt.tcache_max, ok[i].bytes);
        ck_assert_str_eq(val("tcache_max"), ok[i].shown);
    }
    ck_assert_int_eq(env("prof_sample:1g,prof_interval:64g"), 0);
    ck_assert_uint_eq(xa_opt.prof_sample, 1ull << 30);
    ck_assert_str_eq(val("prof_sample"), "1g");
    ck_assert_uint_eq(xa_opt.prof_interval, 64ull << 30);
    ck_assert_int_eq(cap_lines, 0);

    ck_assert_int_eq(env("tcache_max:3m"), 1);
    ck_assert_str_eq(cap, "xalloc: XALLOC_CONF: tcache_max: '3m' is out of range 0..2m; using 1m\n");
    clear_cap();
    ck_assert_int_eq(env("tcache_max:2097153"), 1);
    ck_assert(strstr(cap, "'2097153' is out of range 0..2m"));
    clear_cap();
    ck_assert_int_eq(env("tcache_max:12q"), 1);
    ck_assert_str_eq(cap, "xalloc: XALLOC_CONF: tcache_max: '12q' is not a size "
                          "(bytes, or with a k, m or g suffix); using 1m\n");
    clear_cap();
    static const char *const bad[] = {"-1", "1.5m", "k", "1 k", "1kk", "1t", "0x100"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        snprintf(kv, sizeof kv, "tcache_max:%s", bad[i]);
        ck_assert_int_eq(env(kv), 1);
        ck_assert_msg(strstr(cap, "is not a size"), "%s: %s", bad[i], cap);
        clear_cap();
    }
    ck_assert_int_eq(env("prof_interval:99999999999999999999g"), 1);
    ck_assert(strstr(cap, "is out of range 0..64g"));
    clear_cap();
    ck_assert_int_eq(env("prof_interval:17179869184g"), 1); /* 2^34 GiB overflows */
    ck_assert(strstr(cap, "is out of range 0..64g"));
    clear_cap();
    ck_assert_int_eq(env("prof_sample:0"), 1);
    ck_assert_str_eq(cap, "xalloc: XALLOC_CONF: prof_sample: '0' is out of range 1..1g; using 512k\n");
    ck_assert_uint_eq(xa_opt.tcache_max, 1024 * 1024);
}
END_TEST

START_TEST(test_duration)
{
    ck_assert_int_eq(env("decay_ms:0"), 0);
    ck_assert_int_eq(xa_opt.decay_ms, 0);
    ck_assert_int_eq(env("decay_ms:500"), 0);
    ck_assert_int_eq(xa_opt.decay_ms, 500);
    ck_assert_int_eq(env("decay_ms:250ms"), 0);
    ck_assert_int_eq(xa_opt.decay_ms, 250);
    ck_assert_int_eq(env("decay_ms:2s"), 0);
    ck_assert_int_eq(xa_opt.decay_ms, 2000);
    ck_assert_str_eq(val("decay_ms"), "2000");
    ck_assert_int_eq(env("decay_ms:3600S"), 0);
    ck_assert_int_eq(xa_opt.decay_ms, 3600000);
    ck_assert_int_eq(env("stats_interval_ms:10"), 0);
    ck_assert_int_eq(xa_opt.stats_interval_ms, 10);
    ck_assert_int_eq(cap_lines, 0);

    ck_assert_int_eq(env("decay_ms:3601s"), 1);
    ck_assert_str_eq(cap, "xalloc: XALLOC_CONF: decay_ms: '3601s' is out of range 0..3600000; using 1000\n");
    clear_cap();
    ck_assert_int_eq(env("stats_interval_ms:5"), 1);
    ck_assert_str_eq(cap, "xalloc: XALLOC_CONF: stats_interval_ms: '5' is out of range 10..3600000; using 1000\n");
    clear_cap();
    ck_assert_int_eq(env("decay_ms:1min"), 1);
    ck_assert_str_eq(cap, "xalloc: XALLOC_CONF: decay_ms: '1min' is not a duration "
                          "(ms, or with an ms or s suffix); using 1000\n");
    clear_cap();
    static const char *const bad[] = {"1.5s", "-1", "s", "ms", "10us", "5 s", "1h"};
    char kv[64];
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        snprintf(kv, sizeof kv, "decay_ms:%s", bad[i]);
        ck_assert_int_eq(env(kv), 1);
        ck_assert_msg(strstr(cap, "is not a duration"), "%s: %s", bad[i], cap);
        clear_cap();
    }
    ck_assert_int_eq(env("decay_ms:99999999999999999999s"), 1);
    ck_assert(strstr(cap, "is out of range 0..3600000"));
    clear_cap();
    ck_assert_int_eq(env("decay_ms:18446744073709551s"), 1); /* x1000 overflows */
    ck_assert(strstr(cap, "is out of range 0..3600000"));
}
END_TEST

START_TEST(test_enum)
{
    ck_assert_int_eq(env("thp:always,numa:interleave,purge:free"), 0);
    ck_assert_int_eq(xa_opt.thp, XA_THP_ALWAYS);
    ck_assert_int_eq(xa_opt.numa, XA_NUMA_INTERLEAVE);
    ck_assert_int_eq(xa_opt.purge, XA_PURGE_FREE);
    ck_assert_str_eq(val("thp"), "always");
    ck_assert_str_eq(val("numa"), "interleave");
    ck_assert_str_eq(val("purge"), "free");
    ck_assert_int_eq(env("thp:NEVER,numa:off,purge:dontneed"), 0);
    ck_assert_int_eq(xa_opt.thp, XA_THP_NEVER);
    ck_assert_int_eq(xa_opt.numa, XA_NUMA_OFF);
    ck_assert_int_eq(xa_opt.purge, XA_PURGE_DONTNEED);
    ck_assert_int_eq(env("thp:default,numa:on"), 0);
    ck_assert_int_eq(xa_opt.thp, XA_THP_DEFAULT);
    ck_assert_int_eq(xa_opt.numa, XA_NUMA_ON);
    ck_assert_int_eq(cap_lines, 0);
    ck_assert_int_eq(env("thp:sometimes"), 1);
    ck_assert_str_eq(cap, "xalloc: XALLOC_CONF: thp: 'sometimes' is not one of "
                          "default|always|never; using default\n");
    clear_cap();
    ck_assert_int_eq(env("purge:madvise,numa:never"), 2);
    ck_assert_str_eq(cap, "xalloc: XALLOC_CONF: purge: 'madvise' is not one of dontneed|free; using dontneed\n"
                          "xalloc: XALLOC_CONF: numa: 'never' is not one of on|off|interleave; using on\n");
    clear_cap();
    ck_assert_int_eq(env("thp:never2"), 1);
    ck_assert_int_eq(env("thp:neve"), 1);
}
END_TEST

START_TEST(test_string)
{
    ck_assert_int_eq(env("stats_dir:/var/tmp/x y,prof_dir:profiles"), 0);
    ck_assert_str_eq(xa_opt.stats_dir, "/var/tmp/x y");
    ck_assert_str_eq(xa_opt.prof_dir, "profiles"); /* relative: the cwd's */
    ck_assert_int_eq(env("stats_dir:/a,stats_dir:"), 1); /* duplicate, not empty */
    ck_assert_str_eq(xa_opt.stats_dir, "");
    ck_assert_str_eq(cap, "xalloc: XALLOC_CONF: stats_dir: set more than once; using \"\"\n");
    clear_cap();
    ck_assert_int_eq(env("stats_dir:run/xalloc"), 1);
    ck_assert_str_eq(cap, "xalloc: XALLOC_CONF: stats_dir: 'run/xalloc' is not an absolute path; using \"\"\n");
    clear_cap();
    char kv[400] = "stats_dir:/";
    memset(kv + 11, 'a', 255);
    ck_assert_int_eq(env(kv), 1); /* 256 bytes */
    ck_assert(strstr(cap, "' is longer than 255 bytes; using \"\"\n"));
    ck_assert(strstr(cap, "'/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...'"));
    clear_cap();
    kv[11 + 254] = 0; /* 255 bytes fit */
    ck_assert_int_eq(env(kv), 0);
    ck_assert_uint_eq(strlen(xa_opt.stats_dir), 255);
    ck_assert_int_eq(env("stats_dir:/a\tb"), 1);
    ck_assert_str_eq(cap, "xalloc: XALLOC_CONF: stats_dir: '/a\\x09b' contains control characters; using \"\"\n");
}
END_TEST

/* ---- errors of syntax ---- */

START_TEST(test_unknown)
{
    ck_assert_int_eq(env("thp_mode:never"), 1);
    ck_assert_str_eq(cap, "xalloc: XALLOC_CONF: unknown option 'thp_mode' (did you mean 'thp'?)\n");
    clear_cap();
    static const char *const near[][2] = {
        {"arena:2", "arenas"},      {"THP:never", "thp"},     {"decay:5", "decay_ms"},
        {"tcache_size:1", "tcache_max"}, {"verbos:1", "verbose"}, {"stat:on", "stats"},
        {"purge_mode:free", "purge"}, {"backgroundthread:1", "background_thread"},
        {"stats_dirx:/", "stats_dir"}, {"Arenas:1", "arenas"},
    };
    for (size_t i = 0; i < sizeof near / sizeof *near; i++) {
        ck_assert_int_eq(env(near[i][0]), 1);
        ck_assert_msg(strstr(cap, fmt("(did you mean '%s'?)\n", near[i][1])), "%s: %s",
                      near[i][0], cap);
        clear_cap();
    }
    ck_assert_int_eq(env("zzz:1"), 1);
    ck_assert_str_eq(cap, "xalloc: XALLOC_CONF: unknown option 'zzz' (known: thp, arenas, numa, "
                          "decay_ms, purge, background_thread, tcache, tcache_max, stats, "
                          "stats_dir, stats_interval_ms, stats_print, verbose, abort_on_error, "
                          "junk, prof, prof_sample, prof_dir, prof_interval)\n");
    clear_cap();
    /* A huge key: echoed truncated, still one line. */
    static char big[100000];
    memset(big, 'k', sizeof big - 3);
    strcpy(big + sizeof big - 3, ":1");
    ck_assert_int_eq(env(big), 1);
    ck_assert_int_eq(cap_lines, 1);
    ck_assert(strstr(cap, "kkk...' (known: thp,"));
    ck_assert_uint_lt(cap_len, 700);
    /* The rest of the string still applies. */
    clear_cap();
    ck_assert_int_eq(env("bogus:1,arenas:3"), 1);
    ck_assert_int_eq(xa_opt.arenas, 3);
}
END_TEST

START_TEST(test_syntax)
{
    int da = default_arenas();
    ck_assert_int_eq(env("  thp : never ,\tarenas = 3 ,,, ,"), 0);
    ck_assert_int_eq(xa_opt.thp, XA_THP_NEVER);
    ck_assert_int_eq(xa_opt.arenas, 3);
    ck_assert_int_eq(env(""), 0);
    ck_assert_int_eq(env(","), 0);
    ck_assert_int_eq(cap_lines, 0);
    ck_assert_int_eq(env("arenas"), 1);
    ck_assert_str_eq(cap, fmt("xalloc: XALLOC_CONF: arenas: missing value (expected arenas:VALUE); using %d\n", da));
    clear_cap();
    ck_assert_int_eq(env("arenas:"), 1);
    ck_assert_str_eq(cap, fmt("xalloc: XALLOC_CONF: arenas: missing value (expected arenas:VALUE); using %d\n", da));
    clear_cap();
    ck_assert_int_eq(env(":5"), 1);
    ck_assert_str_eq(cap, "xalloc: XALLOC_CONF: missing option name in ':5'; ignored\n");
    clear_cap();
    /* Only the first ':' separates: a value may hold ':' and '='. */
    ck_assert_int_eq(env("stats_dir:/a:b=c"), 0);
    ck_assert_str_eq(xa_opt.stats_dir, "/a:b=c");
    ck_assert_int_eq(env("thp:never:always"), 1);
    ck_assert(strstr(cap, "'never:always' is not one of"));
}
END_TEST

START_TEST(test_duplicate_env)
{
    ck_assert_int_eq(env("arenas:2,thp:never,arenas:3"), 1);
    ck_assert_int_eq(xa_opt.arenas, 3);
    ck_assert_str_eq(cap, "xalloc: XALLOC_CONF: arenas: set more than once; using 3\n");
    clear_cap();
    /* A bad second value keeps the first. */
    ck_assert_int_eq(env("arenas:2,arenas:0"), 1);
    ck_assert_int_eq(xa_opt.arenas, 2);
    ck_assert_str_eq(cap, "xalloc: XALLOC_CONF: arenas: '0' is out of range 1..1024; using 2\n");
}
END_TEST

START_TEST(test_long_and_binary_values)
{
    static char big[200000];
    strcpy(big, "decay_ms:");
    memset(big + 9, '7', sizeof big - 10);
    ck_assert_int_eq(env(big), 1);
    ck_assert_int_eq(cap_lines, 1);
    ck_assert(strstr(cap, "decay_ms: '7777777777777777777777777777777777777777777777777777777777777777...'"
                          " is out of range 0..3600000; using 1000\n"));
    clear_cap();
    ck_assert_int_eq(env("thp:\x01\xff\x7f\\\"x"), 1);
    ck_assert_str_eq(cap, "xalloc: XALLOC_CONF: thp: '\\x01\\xff\\x7f\\\\\"x' is not one of "
                          "default|always|never; using default\n");
    clear_cap();
    ck_assert_int_eq(env("\xe2\x80\x8bthp:never"), 1); /* a zero-width space */
    ck_assert_str_eq(cap, "xalloc: XALLOC_CONF: unknown option '\\xe2\\x80\\x8bthp' (did you mean 'thp'?)\n");
    clear_cap();
    ck_assert_int_eq(env("thp:never\n,arenas:2\n"), 0); /* newlines are blanks */
    ck_assert_int_eq(xa_opt.arenas, 2);
}
END_TEST

/* ---- sources ---- */

START_TEST(test_precedence)
{
    const char *f = "arenas:2\nthp:never\ndecay_ms:5s\n";
    ck_assert_int_eq(file(f, "arenas:3,junk:on", "prog"), 0);
    ck_assert_int_eq(xa_opt.arenas, 3);
    ck_assert_str_eq(src("arenas"), "XALLOC_CONF");
    ck_assert_int_eq(xa_opt.thp, XA_THP_NEVER);
    ck_assert_str_eq(src("thp"), tmp_path);
    ck_assert_int_eq(xa_opt.decay_ms, 5000);
    ck_assert(xa_opt.junk);
    ck_assert_str_eq(src("numa"), "default");
    /* A bad value in the environment keeps the file's value. */
    ck_assert_int_eq(file(f, "arenas:0,thp:bad", "prog"), 2);
    ck_assert_int_eq(xa_opt.arenas, 2);
    ck_assert_str_eq(src("arenas"), tmp_path);
    ck_assert_str_eq(cap, "xalloc: XALLOC_CONF: arenas: '0' is out of range 1..1024; using 2\n"
                          "xalloc: XALLOC_CONF: thp: 'bad' is not one of default|always|never; using never\n");
    /* Each parse starts again from the defaults. */
    ck_assert_int_eq(env("junk:on"), 0);
    ck_assert_int_eq(xa_opt.thp, XA_THP_DEFAULT);
}
END_TEST

START_TEST(test_file_syntax)
{
    const char *f = "# xalloc.conf\n"
                    "\n"
                    "   # indented comment\n"
                    "thp:never   # trailing comment\n"
                    "arenas=3, decay_ms:250ms ,junk:yes\r\n"
                    "\t\n"
                    "stats_interval_ms: 2s";      /* unterminated last line */
    ck_assert_int_eq(file(f, NULL, "prog"), 0);
    ck_assert_int_eq(xa_opt.thp, XA_THP_NEVER);
    ck_assert_int_eq(xa_opt.arenas, 3);
    ck_assert_int_eq(xa_opt.decay_ms, 250);
    ck_assert(xa_opt.junk);
    ck_assert_int_eq(xa_opt.stats_interval_ms, 2000);
    ck_assert_int_eq(cap_lines, 0);

    ck_assert_int_eq(file("thp:never\n\ndecay_ms:abc\nbogus\n", NULL, "prog"), 2);
    ck_assert_str_eq(cap, fmt("xalloc: %s:3: decay_ms: 'abc' is not a duration (ms, or with an ms "
                              "or s suffix); using 1000\n"
                              "xalloc: %s:4: unknown option 'bogus' (known: thp, arenas, numa, "
                              "decay_ms, purge, background_thread, tcache, tcache_max, stats, "
                              "stats_dir, stats_interval_ms, stats_print, verbose, abort_on_error, "
                              "junk, prof, prof_sample, prof_dir, prof_interval)\n",
                              tmp_path, tmp_path));
    clear_cap();
    ck_assert_int_eq(file("arenas:2\n# x\narenas:4\n", NULL, "prog"), 1);
    ck_assert_int_eq(xa_opt.arenas, 4);
    ck_assert_str_eq(cap, fmt("xalloc: %s:3: arenas: set more than once (first at line 1); using 4\n", tmp_path));
    clear_cap();
    ck_assert_int_eq(file("", NULL, "prog"), 0);
    ck_assert_int_eq(file("\n\n\n", NULL, "prog"), 0);
    ck_assert_int_eq(file("arenas:5", NULL, "prog"), 0);
    ck_assert_int_eq(xa_opt.arenas, 5);
    ck_assert_int_eq(cap_lines, 0);
}
END_TEST

START_TEST(test_sections)
{
    const char *f = "arenas:2\n"
                    "junk:on\n"
                    "[prog]\n"
                    "arenas:5\n"
                    "[ other ]   # spaces are trimmed\n"
                    "arenas:7, thp:never\n"
                    "bogus_for_other:1\n"
                    "[prog]\n"
                    "decay_ms:9\n";
    ck_assert_int_eq(file(f, NULL, "prog"), 0);
    ck_assert_int_eq(xa_opt.arenas, 5);
    ck_assert_int_eq(xa_opt.decay_ms, 9);
    ck_assert_int_eq(xa_opt.thp, XA_THP_DEFAULT);
    ck_assert(xa_opt.junk);
    ck_assert_int_eq(cap_lines, 0); /* other's typo is not prog's business */

    ck_assert_int_eq(file(f, NULL, "other"), 1);
    ck_assert_int_eq(xa_opt.arenas, 7);
    ck_assert_int_eq(xa_opt.thp, XA_THP_NEVER);
    ck_assert_int_eq(xa_opt.decay_ms, 1000);
    ck_assert(strstr(cap, fmt("xalloc: %s:7: unknown option 'bogus_for_other' (", tmp_path)));
    ck_assert_int_eq(cap_lines, 1);
    clear_cap();
    ck_assert_int_eq(file(f, NULL, "nobody"), 0);
    ck_assert_int_eq(xa_opt.arenas, 2);
    /* Names match exactly. */
    ck_assert_int_eq(file(f, NULL, "Prog"), 0);
    ck_assert_int_eq(xa_opt.arenas, 2);
    ck_assert_int_eq(file(f, NULL, "prog2"), 0);
    ck_assert_int_eq(xa_opt.arenas, 2);
    /* The environment still beats a matching section. */
    ck_assert_int_eq(file(f, "arenas:11", "prog"), 0);
    ck_assert_int_eq(xa_opt.arenas, 11);
    /* Two matching sections setting one option: later wins, with a note. */
    ck_assert_int_eq(file("[prog]\narenas:3\n[prog]\narenas:4\n", NULL, "prog"), 1);
    ck_assert_int_eq(xa_opt.arenas, 4);
    ck_assert(strstr(cap, ":4: arenas: set more than once (first at line 2); using 4\n"));
    clear_cap();
    /* The global line and the section's are not duplicates. */
    ck_assert_int_eq(file("arenas:3\n[prog]\narenas:4\n", NULL, "prog"), 0);
    ck_assert_int_eq(xa_opt.arenas, 4);
}
END_TEST

START_TEST(test_bad_sections)
{
    const char *f = "arenas:2\n"
                    "[prog\n"
                    "arenas:5\n"
                    "[]\n"
                    "arenas:6\n"
                    "[prog] arenas:8\n"
                    "arenas:9\n";
    ck_assert_int_eq(file(f, NULL, "prog"), 3);
    ck_assert_int_eq(xa_opt.arenas, 2);
    ck_assert_str_eq(cap, fmt("xalloc: %s:2: malformed section header '[prog'; its options are ignored\n"
                              "xalloc: %s:4: malformed section header '[]'; its options are ignored\n"
                              "xalloc: %s:6: malformed section header '[prog] arenas:8'; its options are ignored\n",
                              tmp_path, tmp_path, tmp_path));
}
END_TEST

START_TEST(test_file_lines)
{
    /* A line over the limit is skipped; the next one still applies. */
    static char f[4096];
    memset(f, ' ', 2000);
    memcpy(f, "decay_ms:5", 10);
    strcpy(f + 2000, "\narenas:3\n");
    ck_assert_int_eq(file(f, NULL, "prog"), 1);
    ck_assert_int_eq(xa_opt.decay_ms, 1000);
    ck_assert_int_eq(xa_opt.arenas, 3);
    ck_assert_str_eq(cap, fmt("xalloc: %s:1: line longer than 1024 bytes; skipped\n", tmp_path));
    clear_cap();
    /* Exactly at the limit is fine. */
    memset(f, ' ', XA_CONF_LINE_MAX);
    memcpy(f, "decay_ms:5", 10);
    strcpy(f + XA_CONF_LINE_MAX, "\n");
    ck_assert_int_eq(file(f, NULL, "prog"), 0);
    ck_assert_int_eq(xa_opt.decay_ms, 5);

    /* NUL bytes: the line is skipped, the others apply. */
    static const char nul[] = "arenas:3\nthp:nev\0er\njunk:on";
    const char *p = tmp_file(nul, sizeof nul - 1);
    ck_assert_int_eq(xa_config_parse_sources(p, true, NULL, "prog"), 1);
    unlink(p);
    ck_assert_int_eq(xa_opt.arenas, 3);
    ck_assert_int_eq(xa_opt.thp, XA_THP_DEFAULT);
    ck_assert(xa_opt.junk);
    ck_assert_str_eq(cap, fmt("xalloc: %s:2: line contains a NUL byte; skipped\n", tmp_path));
    clear_cap();
    /* Binary garbage: messages, no crash, the defaults stay. */
    static unsigned char bin[4096];
    for (size_t i = 0; i < sizeof bin; i++)
        bin[i] = (unsigned char)(i * 131 + 7);
    p = tmp_file(bin, sizeof bin);
    ck_assert_int_ge(xa_config_parse_sources(p, true, NULL, "prog"), 1);
    unlink(p);
    ck_assert_int_eq(xa_opt.arenas, default_arenas());
}
END_TEST

START_TEST(test_file_problems)
{
    ck_assert_int_eq(xa_config_parse_sources("/nonexistent/xalloc.conf", true, NULL, "p"), 1);
    ck_assert_str_eq(cap, "xalloc: /nonexistent/xalloc.conf: cannot open (no such file); file ignored\n");
    clear_cap();
    /* The default path may be absent without a word. */
    ck_assert_int_eq(xa_config_parse_sources("/nonexistent/xalloc.conf", false, NULL, "p"), 0);
    ck_assert_int_eq(cap_lines, 0);
    ck_assert_int_eq(xa_config_parse_sources("/tmp", true, "arenas:3", "p"), 1);
    ck_assert_str_eq(cap, "xalloc: /tmp: cannot read (is a directory); file ignored\n");
    ck_assert_int_eq(xa_opt.arenas, 3); /* the environment still applies */
    clear_cap();

    static char big[XA_CONF_FILE_MAX + 100];
    memset(big, '\n', sizeof big);
    memcpy(big, "arenas:3\n", 9);
    const char *p = tmp_file(big, sizeof big);
    ck_assert_int_eq(xa_config_parse_sources(p, true, NULL, "p"), 1);
    ck_assert_str_eq(cap, fmt("xalloc: %s: larger than 65536 bytes; file ignored\n", p));
    ck_assert_int_eq(xa_opt.arenas, default_arenas());
    unlink(p);
    clear_cap();
    p = tmp_file(big, XA_CONF_FILE_MAX); /* exactly the limit */
    ck_assert_int_eq(xa_config_parse_sources(p, true, NULL, "p"), 0);
    ck_assert_int_eq(xa_opt.arenas, 3);
    unlink(p);
    /* Same limit for a buffer given directly. */
    ck_assert_int_eq(xa_config_parse_file_buffer(big, sizeof big, "buf", "p"), 1);
    clear_cap();
    ck_assert_int_eq(xa_config_parse_file_buffer("[p]\nthp:never", 13, "buf", "p"), 0);
    ck_assert_int_eq(xa_opt.thp, XA_THP_NEVER);
    ck_assert_str_eq(src("thp"), "buf");
}
END_TEST

START_TEST(test_load_sources)
{
    const char *f = "arenas:2\n";
    const char *p = tmp_file(f, strlen(f));
    ck_assert_int_eq(xa_config_load(false, "thp:never", p, "prog"), 0);
    ck_assert_int_eq(xa_opt.arenas, 2);
    ck_assert_int_eq(xa_opt.thp, XA_THP_NEVER);
    /* XALLOC_CONF_FILE="" means no file at all. */
    ck_assert_int_eq(xa_config_load(false, "thp:never", "", "prog"), 0);
    ck_assert_int_eq(xa_opt.arenas, default_arenas());
    ck_assert_int_eq(xa_opt.thp, XA_THP_NEVER);
    /* Secure mode: the environment is ignored; only /etc/xalloc.conf counts. */
    struct stat st;
    if (stat(XA_CONF_DEFAULT_FILE, &st) != 0) {
        ck_assert_int_eq(xa_config_load(true, "thp:never,arenas:0", p, "prog"), 0);
        ck_assert_int_eq(xa_opt.arenas, default_arenas());
        ck_assert_int_eq(xa_opt.thp, XA_THP_DEFAULT);
        ck_assert_int_eq(cap_lines, 0);
    }
    unlink(p);
    ck_assert_int_eq(xa_config_load(false, NULL, "/nonexistent.conf", "prog"), 1);
    ck_assert_str_eq(cap, "xalloc: /nonexistent.conf: cannot open (no such file); file ignored\n");
}
END_TEST

START_TEST(test_verbose)
{
    const char *f = "arenas:2\n\ndecay_ms:7\n";
    const char *p = tmp_file(f, strlen(f));
    ck_assert_int_eq(xa_config_load(false, "verbose:true,thp:never,decay_ms:8", p, "prog"), 0);
    unlink(p);
    ck_assert_int_eq(cap_lines, xa_config_option_count());
    ck_assert(strstr(cap, "xalloc: config: thp=never (XALLOC_CONF)\n"));
    ck_assert(strstr(cap, fmt("xalloc: config: arenas=2 (%s:1)\n", p)));
    ck_assert(strstr(cap, "xalloc: config: decay_ms=8 (XALLOC_CONF)\n"));
    ck_assert(strstr(cap, "xalloc: config: verbose=true (XALLOC_CONF)\n"));
    ck_assert(strstr(cap, "xalloc: config: tcache=on (default)\n"));
    ck_assert(strstr(cap, "xalloc: config: tcache_max=1m (default)\n"));
    ck_assert(strstr(cap, "xalloc: config: stats_dir=\"\" (default)\n"));
    ck_assert(strncmp(cap, "xalloc: config: thp=never", 25) == 0); /* table order */
    clear_cap();
    ck_assert_int_eq(xa_config_load(false, "thp:never", "", "prog"), 0);
    ck_assert_int_eq(cap_lines, 0);
}
END_TEST

START_TEST(test_abort_on_error)
{
    xa_config_load(false, "abort_on_error:true,arenas:0", "", "prog");
    ck_abort_msg("not reached: abort_on_error with an error must abort");
}
END_TEST

START_TEST(test_abort_on_error_later)
{
    /* Set after the error in the same string: still fatal. */
    xa_config_load(false, "arenas:0,abort_on_error:1", "", "prog");
    ck_abort_msg("not reached");
}
END_TEST

START_TEST(test_abort_on_error_from_file)
{
    /* The file is unlinked at once and named through /proc: the abort
     * leaves nothing behind in /tmp. */
    const char *f = "abort_on_error:true\n";
    const char *p = tmp_file(f, strlen(f));
    int fd = open(p, O_RDONLY);
    ck_assert_int_ge(fd, 0);
    unlink(p);
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    xa_config_load(false, "bogus:1", path, "prog");
    ck_abort_msg("not reached");
}
END_TEST

START_TEST(test_abort_on_error_quiet)
{
    ck_assert_int_eq(xa_config_load(false, "abort_on_error:true,arenas:3", "", "prog"), 0);
    ck_assert(xa_opt.abort_on_error);
    /* The environment may also switch it back off. */
    const char *f = "abort_on_error:true\n";
    const char *p = tmp_file(f, strlen(f));
    ck_assert_int_eq(xa_config_load(false, "abort_on_error:false,arenas:0", p, "prog"), 1);
    unlink(p);
    ck_assert(!xa_opt.abort_on_error);
}
END_TEST

START_TEST(test_validate)
{
    ck_assert_int_eq(env("arenas:3"), 0);
    ck_assert_int_eq(xa_config_validate("thp:never,arenas:0,bogus:1,decay_ms:2s"), 2);
    ck_assert_str_eq(cap, fmt("xalloc: XALLOC_CONF: arenas: '0' is out of range 1..1024; using %d\n"
                              "xalloc: XALLOC_CONF: unknown option 'bogus' (known: thp, arenas, numa, "
                              "decay_ms, purge, background_thread, tcache, tcache_max, stats, "
                              "stats_dir, stats_interval_ms, stats_print, verbose, abort_on_error, "
                              "junk, prof, prof_sample, prof_dir, prof_interval)\n",
                              default_arenas()));
    /* Nothing applied. */
    ck_assert_int_eq(xa_opt.arenas, 3);
    ck_assert_int_eq(xa_opt.thp, XA_THP_DEFAULT);
    ck_assert_int_eq(xa_config_validate("thp:never"), 0);
    ck_assert_int_eq(xa_config_validate(""), 0);
    ck_assert_int_eq(xa_config_validate(NULL), 0);
}
END_TEST

/* ---- run time ---- */

START_TEST(test_runtime_set)
{
    char msg[512];
    ck_assert_int_eq(xalloc_config_set("decay_ms:500", msg, sizeof msg), 0);
    ck_assert_str_eq(msg, "");
    ck_assert_int_eq(xa_opt.decay_ms, 500);
    ck_assert_str_eq(src("decay_ms"), "runtime");
    ck_assert_int_eq(xalloc_config_set("background_thread:on, stats_interval_ms:2s", msg, sizeof msg), 0);
    ck_assert_int_eq(xa_opt.background_thread, XA_BG_ON);
    /* The boolean words of its earlier form keep their meaning. */
    ck_assert_int_eq(xalloc_config_set("background_thread:false", msg, sizeof msg), 0);
    ck_assert_int_eq(xa_opt.background_thread, XA_BG_OFF);
    ck_assert_int_eq(xalloc_config_set("background_thread:auto", msg, sizeof msg), 0);
    ck_assert_int_eq(xa_opt.background_thread, XA_BG_AUTO);
    ck_assert_int_eq(xalloc_config_set("background_thread:sometimes", msg, sizeof msg), -1);
    ck_assert_int_eq(xa_opt.background_thread, XA_BG_AUTO);
    ck_assert_int_eq(xa_opt.stats_interval_ms, 2000);

    ck_assert_int_eq(xalloc_config_set("arenas:2", msg, sizeof msg), -1);
    ck_assert_str_eq(msg, fmt("xalloc_config_set: arenas: cannot change at run time (only decay_ms, "
                              "background_thread, stats_interval_ms can); using %d", default_arenas()));
    ck_assert_int_eq(xa_opt.arenas, default_arenas());
    ck_assert_int_eq(xalloc_config_set("decay_ms:soon", msg, sizeof msg), -1);
    ck_assert_str_eq(msg, "xalloc_config_set: decay_ms: 'soon' is not a duration (ms, or with an ms "
                          "or s suffix); using 500");
    /* All or nothing. */
    ck_assert_int_eq(xalloc_config_set("decay_ms:7,stats_interval_ms:1", msg, sizeof msg), -1);
    ck_assert_int_eq(xa_opt.decay_ms, 500);
    ck_assert(strstr(msg, "stats_interval_ms: '1' is out of range 10..3600000; using 2000"));
    ck_assert_int_eq(xalloc_config_set("", msg, sizeof msg), -1);
    ck_assert_str_eq(msg, "xalloc_config_set: no option given (expected key:value)");
    ck_assert_int_eq(xalloc_config_set(NULL, msg, sizeof msg), -1);
    ck_assert_int_eq(xalloc_config_set("nope:1", msg, sizeof msg), -1);
    ck_assert(strstr(msg, "unknown option 'nope'"));
    /* No room for a message is fine; a short buffer is truncated. */
    ck_assert_int_eq(xalloc_config_set("arenas:2", NULL, 0), -1);
    ck_assert_int_eq(xalloc_config_set("decay_ms:0", NULL, 0), 0);
    ck_assert_int_eq(xa_opt.decay_ms, 0);
    char small[8];
    ck_assert_int_eq(xalloc_config_set("arenas:2", small, sizeof small), -1);
    ck_assert_str_eq(small, "xalloc_");
    /* Run-time calls report to the caller, not to stderr. */
    ck_assert_int_eq(cap_lines, 0);
}
END_TEST

static volatile int stop_readers;

static void *reader(void *arg)
{
    long bad = 0;
    while (!__atomic_load_n(&stop_readers, __ATOMIC_RELAXED)) {
        int64_t v = __atomic_load_n(&xa_opt.decay_ms, __ATOMIC_RELAXED);
        if (v != 100 && v != 200000)
            bad++;
        char buf[32];
        xalloc_config_get("decay_ms", buf, sizeof buf, NULL);
        if (strcmp(buf, "100") && strcmp(buf, "200000"))
            bad++;
    }
    return (void *)bad;
}

START_TEST(test_runtime_concurrent)
{
    ck_assert_int_eq(xalloc_config_set("decay_ms:100", NULL, 0), 0);
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, reader, NULL);
    for (int i = 0; i < 20000; i++)
        ck_assert_int_eq(xalloc_config_set(i & 1 ? "decay_ms:100" : "decay_ms:200000", NULL, 0), 0);
    __atomic_store_n(&stop_readers, 1, __ATOMIC_RELAXED);
    for (int i = 0; i < 2; i++) {
        void *bad;
        pthread_join(t[i], &bad);
        ck_assert_ptr_eq(bad, NULL);
    }
}
END_TEST

START_TEST(test_get)
{
    char buf[4];
    const char *s = NULL;
    ck_assert_int_eq(xalloc_config_get("nope", buf, sizeof buf, &s), -1);
    ck_assert_int_eq(xalloc_config_get(NULL, buf, sizeof buf, &s), -1);
    ck_assert_int_eq(xalloc_config_get("thp", buf, sizeof buf, &s), 0);
    ck_assert_str_eq(buf, "def"); /* truncated, terminated */
    ck_assert_str_eq(s, "default");
    ck_assert_int_eq(xalloc_config_get("thp", NULL, 0, NULL), 0);
    ck_assert_int_eq(xalloc_config_get("thp ", buf, sizeof buf, NULL), -1);
}
END_TEST

static Suite *config_suite(void)
{
    Suite *s = suite_create("config");
    TCase *tc = tcase_create("parser");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_defaults);
    tcase_add_test(tc, test_table);
    tcase_add_test(tc, test_bool);
    tcase_add_test(tc, test_int);
    tcase_add_test(tc, test_size);
    tcase_add_test(tc, test_duration);
    tcase_add_test(tc, test_enum);
    tcase_add_test(tc, test_string);
    tcase_add_test(tc, test_unknown);
    tcase_add_test(tc, test_syntax);
    tcase_add_test(tc, test_duplicate_env);
    tcase_add_test(tc, test_long_and_binary_values);
    suite_add_tcase(s, tc);

    tc = tcase_create("sources");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_precedence);
    tcase_add_test(tc, test_file_syntax);
    tcase_add_test(tc, test_sections);
    tcase_add_test(tc, test_bad_sections);
    tcase_add_test(tc, test_file_lines);
    tcase_add_test(tc, test_file_problems);
    tcase_add_test(tc, test_load_sources);
    tcase_add_test(tc, test_verbose);
    tcase_add_test_raise_signal(tc, test_abort_on_error, SIGABRT);
    tcase_add_test_raise_signal(tc, test_abort_on_error_later, SIGABRT);
    tcase_add_test_raise_signal(tc, test_abort_on_error_from_file, SIGABRT);
    tcase_add_test(tc, test_abort_on_error_quiet);
    tcase_add_test(tc, test_validate);
    suite_add_tcase(s, tc);

    tc = tcase_create("runtime");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_runtime_set);
    tcase_add_test(tc, test_runtime_concurrent);
    tcase_add_test(tc, test_get);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(config_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
