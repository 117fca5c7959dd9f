/* check_stats_file.c: unit tests of the statistics report emitter
 * (src/stats_report.c) and of the statistics file protocol as xalloc-stat
 * reads it (tools/xalloc-stat/statfile.c): sequence lock under a racing
 * writer, validation (magic, versions, sizes), symlinks, permissions,
 * stale files, and the request area. Runs on synthetic statistics built
 * here, so it needs no allocator; the live library is tested by
 * check_stats_live.c. */
#define _GNU_SOURCE
#include <check.h>
#include <time.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "statfile.h"
#include "stats_report.h"

/* ---- helpers ---- */

struct sink {
    char *buf;
    size_t len, cap;
    int lines;
    int bad_line; /* a line without its '\n' */
};

static void sink_line(void *arg, const char *line)
{
    struct sink *s = arg;
    size_t n = strlen(line);
    if (n == 0 || line[n - 1] != '\n' || memchr(line, '\n', n - 1))
        s->bad_line = 1;
    if (s->len + n + 1 > s->cap) {
        s->cap = (s->len + n + 1) * 2;
        s->buf = realloc(s->buf, s->cap);
        ck_assert_ptr_nonnull(s->buf);
    }
    memcpy(s->buf + s->len, line, n + 1);
    s->len += n;
    s->lines++;
}

static struct xalloc_stats synth; /* 40 KiB: static */

static void fill_synthetic(struct xalloc_stats *s)
{
    memset(s, 0, sizeof *s);
    s->size = sizeof *s;
    s->version_major = XALLOC_STATS_VERSION_MAJOR;
    s->version_minor = XALLOC_STATS_VERSION_MINOR;
    s->allocated = 3u << 20;
    s->requested = 3000000;
    s->active = 4u << 20;
    s->resident = 5u << 20;
    s->mapped = 8u << 20;
    s->nmalloc = 123456;
    s->nfree = 1234;
    s->narenas = 2;
    s->nnodes = 1;
    s->threads = 3;
    s->arenas_count = 2;
    s->arenas[0].allocated = 2u << 20;
    s->arenas[0].threads = 2;
    s->arenas[0].huge_backed = 2u << 20;
    s->arenas[1].allocated = 1u << 20;
    s->arenas[1].threads = 1;
    s->classes_count = 3;
    s->classes[0].size = 16;
    s->classes[0].live = 100;
    s->classes[0].capacity = 4096;
    s->classes[0].slabs = 1;
    s->classes[0].nmalloc = 150;
    s->classes[0].nfree = 50;
    /* class 1 unused: no line in the text report */
    s->classes[1].size = 32;
    s->classes[2].size = 48;
    s->classes[2].live = 10;
    s->classes[2].capacity = 40;
    s->classes[2].slabs = 1;
    s->classes[2].nmalloc = 10;
}

static struct xalloc_stats_file_config synth_config[2] = {
    {"thp", "never", "XALLOC_CONF"},
    {"decay_ms", "1000", "default"},
};

static struct sink emit(enum xa_report_format fmt, const char *program)
{
    struct sink s = {0};
    struct xa_report_info info = {
        .pid = 4242,
        .program = program,
        .library_version = "1.0.0",
        .age_ns = UINT64_MAX,
        .config = synth_config,
        .config_count = 2,
    };
    fill_synthetic(&synth);
    xa_stats_report_emit(&synth, &info, fmt, sink_line, &s);
    ck_assert_int_eq(s.bad_line, 0);
    ck_assert_ptr_nonnull(s.buf);
    return s;
}

static int count_matches(const char *text, const char *re_src)
{
    regex_t re;
    ck_assert_int_eq(regcomp(&re, re_src, REG_EXTENDED | REG_NEWLINE), 0);
    int n = 0;
    regmatch_t m;
    for (const char *p = text; *p && regexec(&re, p, 1, &m, 0) == 0; n++) {
        if (m.rm_eo == 0)
            p++; /* empty match: step over one character */
        else
            p += m.rm_eo;
    }
    regfree(&re);
    return n;
}

/* ---- emitter ---- */

START_TEST(test_bytes_units)
{
    char b[32];
    ck_assert_str_eq(xa_stats_report_bytes(b, 0), "0 B");
    ck_assert_str_eq(xa_stats_report_bytes(b, 1023), "1023 B");
    ck_assert_str_eq(xa_stats_report_bytes(b, 1024), "1.0 KiB");
    ck_assert_str_eq(xa_stats_report_bytes(b, 1536), "1.5 KiB");
    ck_assert_str_eq(xa_stats_report_bytes(b, 10u << 20), "10.0 MiB");
    ck_assert_str_eq(xa_stats_report_bytes(b, (1u << 20) - 1), "1024.0 KiB");
    ck_assert_str_eq(xa_stats_report_bytes(b, 3ull << 40), "3.0 TiB");
    ck_assert_str_eq(xa_stats_report_bytes(b, UINT64_MAX), "16.0 EiB");
}
END_TEST

START_TEST(test_text_report)
{
    struct sink s = emit(XA_REPORT_TEXT, "redis-server");
    const char *t = s.buf;
    ck_assert_ptr_nonnull(strstr(t, "pid 4242 (redis-server)"));
    /* Totals first, then arenas, then size classes, then configuration. */
    const char *tot = strstr(t, "\nTotals\n"), *ar = strstr(t, "\nArenas: 2 on 1 NUMA node\n"),
               *cl = strstr(t, "\nSize classes: 2 of 3 in use\n"),
               *cf = strstr(t, "\nConfiguration\n");
    ck_assert_ptr_nonnull(tot);
    ck_assert_ptr_nonnull(ar);
    ck_assert_ptr_nonnull(cl);
    ck_assert_ptr_nonnull(cf);
    ck_assert(tot < ar && ar < cl && cl < cf);
    ck_assert_int_eq(count_matches(t, "^  allocated +3\\.0 MiB  bytes in live blocks"), 1);
    ck_assert_int_eq(count_matches(t, "^  mapped +8\\.0 MiB "), 1);
    ck_assert_int_eq(count_matches(t, "^  nmalloc +123456  "), 1);
    ck_assert_int_eq(count_matches(t, "^  utilisation +75\\.0%"), 1);
    /* Every total field has a line. */
#define ONE(n, u, d) ck_assert_int_eq(count_matches(t, "^  " #n " "), 1);
    XALLOC_STATS_TOTALS(ONE)
#undef ONE
    /* Two arena rows in each of the two arena tables. */
    ck_assert_int_eq(count_matches(t, "^ +0 +0 +2 +2\\.0 MiB"), 1);
    ck_assert_int_eq(count_matches(t, "^ +1 +0 +1 +1\\.0 MiB"), 1);
    /* Used classes only: 16 bytes 100 live 2.4% util; 48 bytes 25.0%. */
    ck_assert_int_eq(count_matches(t, "^ +0 +16 +100 +1\\.6 KiB +1 +4096 +2\\.4% +150 +50$"), 1);
    ck_assert_int_eq(count_matches(t, "^ +2 +48 +10 +480 B +1 +40 +25\\.0% +10 +0$"), 1);
    ck_assert_int_eq(count_matches(t, "^ +1 +32 "), 0);
    ck_assert_int_eq(count_matches(t, "^  thp +never +XALLOC_CONF$"), 1);
    ck_assert_int_eq(count_matches(t, "^  decay_ms +1000 +default$"), 1);
    free(s.buf);
}
END_TEST

START_TEST(test_json_report)
{
    struct sink s = emit(XA_REPORT_JSON, "we\"ird\\name\t");
    /* jq is the arbiter of valid JSON; it is a CI dependency. */
    char path[] = "/tmp/xs-json-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, s.buf, s.len), (ssize_t)s.len);
    close(fd);
    char cmd[512];
    snprintf(cmd, sizeof cmd,
             "jq -e '.pid == 4242 and .program == \"we\\\"ird\\\\name\\t\" and "
             ".totals.allocated == 3145728 and .totals.nmalloc == 123456 and "
             "(.arenas|length) == 2 and .arenas[0].huge_backed == 2097152 and "
             "(.classes|length) == 3 and .classes[2].utilisation == 0.25 and "
             ".classes[0].live == 100 and .config[0].source == \"XALLOC_CONF\"' %s >/dev/null",
             path);
    int rc = system(cmd);
    unlink(path);
    ck_assert_msg(rc == 0, "jq rejected the JSON:\n%s", s.buf);
    free(s.buf);
}
END_TEST

START_TEST(test_prometheus_report)
{
    struct sink s = emit(XA_REPORT_PROMETHEUS, "a\"b");
    const char *t = s.buf;
    /* Every line is a comment or a sample with the pid and program labels. */
    int lines = 0;
    for (const char *p = t; *p; p++)
        lines += *p == '\n';
    int comments = count_matches(t, "^# (HELP|TYPE) xalloc_[a-z_]+ .+$");
    int samples = count_matches(
        t, "^xalloc_[a-z_]+\\{pid=\"4242\",program=\"a\\\\\"b\"[^}]*\\} [0-9]+$");
    ck_assert_int_eq(lines, comments + samples);
    ck_assert_int_eq(count_matches(t, "^# TYPE xalloc_allocated_bytes gauge$"), 1);
    ck_assert_int_eq(count_matches(t, "^# TYPE xalloc_nmalloc_total counter$"), 1);
    ck_assert_int_eq(count_matches(t, "^xalloc_allocated_bytes\\{[^}]*\\} 3145728$"), 1);
    ck_assert_int_eq(count_matches(t, "^xalloc_arena_allocated_bytes\\{[^}]*arena=\"1\"\\} 1048576$"), 1);
    ck_assert_int_eq(count_matches(t, "^xalloc_class_live\\{[^}]*class=\"2\",size=\"48\"\\} 10$"), 1);
    /* The unused class has no samples. */
    ck_assert_int_eq(count_matches(t, "size=\"32\""), 0);
    /* HELP and TYPE once per family, before its samples. */
    ck_assert_int_eq(count_matches(t, "^# TYPE xalloc_arena_threads gauge$"), 1);
    ck_assert(strstr(t, "# TYPE xalloc_arena_threads") < strstr(t, "\nxalloc_arena_threads{"));
    ck_assert_int_eq(count_matches(t, "^xalloc_config_info\\{.*option=\"thp\",value=\"never\",source=\"XALLOC_CONF\"\\} 1$"), 1);
    free(s.buf);
}
END_TEST

START_TEST(test_config_and_summary)
{
    struct sink s = emit(XA_REPORT_CONFIG, "svc");
    ck_assert_int_eq(s.lines, 4);
    ck_assert_int_eq(count_matches(s.buf, "^  option +value +source$"), 1);
    ck_assert_int_eq(count_matches(s.buf, "^  thp +never +XALLOC_CONF$"), 1);
    free(s.buf);
    struct sink l = {0};
    struct xa_report_info info = {.pid = 77, .program = "a-very-long-program-name", .age_ns = UINT64_MAX,
                                  .summary_header = 1};
    fill_synthetic(&synth);
    xa_stats_report_emit(&synth, &info, XA_REPORT_SUMMARY, sink_line, &l);
    ck_assert_int_eq(l.lines, 2);
    ck_assert_int_eq(count_matches(l.buf, "^ +77 a-very-long-prog +3\\.0 MiB +4\\.0 MiB +5\\.0 MiB +8\\.0 MiB +0 B +2 +3$"), 1);
    free(l.buf);
}
END_TEST

/* ---- synthetic statistics files ---- */

static char tmpdir[64];

static void make_tmpdir(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/xs-test-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
    chmod(tmpdir, 01777); /* like /dev/shm: others may create, not remove */
}

static void remove_tmpdir(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    ck_assert_int_eq(system(cmd), 0);
}

static uint64_t self_start_ticks(void)
{
    char buf[1024];
    FILE *f = fopen("/proc/self/stat", "re");
    ck_assert_ptr_nonnull(f);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')') + 1;
    for (int field = 2; field < 22 && *p; p++)
        if (*p == ' ')
            field++;
    return strtoull(p, NULL, 10);
}

/* Lays out a file as the library does; returns the writable mapping. */
static struct xalloc_stats_file_header *make_file(const char *path, long pid, uint64_t ticks,
                                                  size_t *size_out)
{
    size_t off = (sizeof(struct xalloc_stats_file_header) + 63) & ~(size_t)63;
    size_t size = (off + sizeof(struct xalloc_stats) + 4095) & ~(size_t)4095;
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    ck_assert_msg(fd >= 0, "create %s: %s", path, strerror(errno));
    ck_assert_int_eq(ftruncate(fd, (off_t)size), 0);
    struct xalloc_stats_file_header *h =
        mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ck_assert_ptr_ne(h, MAP_FAILED);
    close(fd);
    struct stat sb;
    h->version_major = XALLOC_STATS_FILE_VERSION_MAJOR;
    h->version_minor = XALLOC_STATS_FILE_VERSION_MINOR;
    h->header_size = sizeof *h;
    h->file_size = size;
    h->snapshot_offset = off;
    h->snapshot_size = sizeof(struct xalloc_stats);
    h->pid = (int32_t)pid;
    h->uid = geteuid();
    h->pidns_ino = stat("/proc/self/ns/pid", &sb) == 0 ? sb.st_ino : 0;
    h->start_ticks = ticks;
    snprintf(h->program, sizeof h->program, "synthetic");
    h->magic = XALLOC_STATS_FILE_MAGIC;
    fill_synthetic(xalloc_stats_file_snapshot(h));
    memcpy(h->config, synth_config, sizeof synth_config);
    h->config_count = 2;
    xalloc_stats_file_write_begin(h);
    xalloc_stats_file_write_end(h);
    *size_out = size;
    return h;
}

/* ---- sequence lock ---- */

struct writer_arg {
    struct xalloc_stats_file_header *h;
    volatile int stop;
    uint64_t writes;
};

/* Writes snapshots in which every total and every arena field holds the
 * same value, as fast as it can: any mix of two writes is detectable. */
static void write_pattern(struct xalloc_stats_file_header *h, uint64_t v)
{
    struct xalloc_stats *s = xalloc_stats_file_snapshot(h);
    xalloc_stats_file_write_begin(h);
#define SET(n, u, d) s->n = v;
    XALLOC_STATS_TOTALS(SET)
#undef SET
    for (unsigned a = 0; a < 8; a++) {
#define SETA(n, u, d) s->arenas[a].n = v;
        XALLOC_STATS_ARENA(SETA)
#undef SETA
    }
    s->timestamp_ns = v;
    h->publish_count = v;
    xalloc_stats_file_write_end(h);
}

static void *writer(void *p)
{
    struct writer_arg *w = p;
    for (uint64_t v = 1; !w->stop; v++) {
        write_pattern(w->h, v);
        w->writes = v;
        /* A pause, so a reader's copy (tens of microseconds on a loaded
         * machine) can complete between two writes; odd writes go straight
         * on, so reads also overlap writes. */
        if (v & 1) {
            struct timespec ts = {0, 20000};
            nanosleep(&ts, NULL);
        }
    }
    return NULL;
}

START_TEST(test_seqlock_never_torn)
{
    char path[128], err[256];
    size_t size;
    make_tmpdir();
    snprintf(path, sizeof path, "%s/xalloc.%d", tmpdir, (int)getpid());
    struct xalloc_stats_file_header *h = make_file(path, getpid(), self_start_ticks(), &size);
    xalloc_stats_file_snapshot(h)->arenas_count = 8;
    struct xs_file f;
    ck_assert_int_eq(xs_open_path(path, false, &f, err, sizeof err), XS_OK);
    write_pattern(h, 0);
    struct writer_arg w = {.h = h};
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, writer, &w), 0);
    static struct xs_snapshot snap;
    uint64_t reads = 0, distinct = 0, last = 0;
    /* At least 1 s, and on a loaded machine until enough reads overlapped
     * enough writes (at most 20 s). */
    uint64_t end = xs_now_ns() + 1000000000u, hard_end = end + 19000000000u;
    while (xs_now_ns() < end ||
           ((reads <= 100 || distinct <= 20 || __atomic_load_n(&w.writes, __ATOMIC_RELAXED) <= 1000) &&
            xs_now_ns() < hard_end)) {
        ck_assert_int_eq(xs_read(&f, &snap, 1000, err, sizeof err), XS_OK);
        uint64_t v = snap.stats.allocated;
#define CHK(n, u, d) ck_assert_uint_eq(snap.stats.n, v);
        XALLOC_STATS_TOTALS(CHK)
#undef CHK
        for (unsigned a = 0; a < 8; a++) {
#define CHKA(n, u, d) ck_assert_uint_eq(snap.stats.arenas[a].n, v);
            XALLOC_STATS_ARENA(CHKA)
#undef CHKA
        }
        ck_assert_uint_eq(snap.hdr.publish_count, v);
        ck_assert_uint_ge(v, last); /* never goes back in time */
        distinct += v != last;
        last = v;
        reads++;
    }
    w.stop = 1;
    pthread_join(t, NULL);
    /* The test means something only if reads overlapped many writes. */
    ck_assert_uint_gt(reads, 100);
    ck_assert_uint_gt(distinct, 20);
    ck_assert_uint_gt(w.writes, 1000);
    xs_close(&f);
    munmap(h, size);
    remove_tmpdir();
}
END_TEST

START_TEST(test_unpublished_file_times_out)
{
    char path[128], err[256];
    size_t size;
    make_tmpdir();
    snprintf(path, sizeof path, "%s/xalloc.1", tmpdir);
    struct xalloc_stats_file_header *h = make_file(path, 1, 0, &size);
    h->seq = 0; /* made, never published */
    struct xs_file f;
    static struct xs_snapshot snap;
    ck_assert_int_eq(xs_open_path(path, false, &f, err, sizeof err), XS_OK);
    uint64_t t0 = xs_now_ns();
    ck_assert_int_eq(xs_read(&f, &snap, 200, err, sizeof err), XS_TIMEOUT);
    ck_assert_uint_lt(xs_now_ns() - t0, 2000000000u);
    ck_assert_ptr_nonnull(strstr(err, "no statistics published yet"));
    xs_close(&f);
    munmap(h, size);
    remove_tmpdir();
}
END_TEST

/* ---- validation ---- */

/* The reader checks the layout once, at open: a file rewritten or cut
 * short while it is open gives an error or the old layout's copy, never a
 * read outside the file (the tool must survive anything in it). */
START_TEST(test_file_changed_under_reader)
{
    char path[128], err[512];
    size_t size;
    struct xs_file f;
    static struct xs_snapshot snap;
    make_tmpdir();
    snprintf(path, sizeof path, "%s/xalloc.3", tmpdir);
    struct xalloc_stats_file_header *h = make_file(path, 3, 0, &size);
    ck_assert_int_eq(xs_open_path(path, false, &f, err, sizeof err), XS_OK);
    /* Sizes and offsets scribbled after the open are not looked at. */
    h->snapshot_offset = UINT64_MAX - 8;
    h->header_size = UINT32_MAX;
    h->snapshot_size = UINT64_MAX;
    h->config_count = UINT32_MAX;
    xalloc_stats_file_write_begin(h);
    xalloc_stats_file_write_end(h);
    ck_assert_int_eq(xs_read(&f, &snap, 100, err, sizeof err), XS_OK);
    ck_assert_uint_le(snap.hdr.config_count, XALLOC_STATS_FILE_MAX_CONFIG);
    ck_assert_uint_eq(snap.stats.version_major, XALLOC_STATS_VERSION_MAJOR);
    /* Cut short: an error, not SIGBUS. */
    ck_assert_int_eq(truncate(path, 4096), 0);
    ck_assert_int_eq(xs_read(&f, &snap, 100, err, sizeof err), XS_ERROR);
    ck_assert_msg(strstr(err, "cut short"), "%s", err);
    xs_close(&f);
    munmap(h, size);
    unlink(path);
}
END_TEST

START_TEST(test_rejects_bad_files)
{
    char path[128], err[512];
    size_t size;
    struct xs_file f;
    make_tmpdir();
    snprintf(path, sizeof path, "%s/xalloc.2", tmpdir);
    struct xalloc_stats_file_header *h = make_file(path, 2, 0, &size);

    h->version_major = 99;
    h->version_minor = 3;
    snprintf(h->library_version, sizeof h->library_version, "9.9.9");
    ck_assert_int_eq(xs_open_path(path, false, &f, err, sizeof err), XS_VERSION);
    ck_assert_msg(strstr(err, "format 99.3") && strstr(err, "9.9.9") && strstr(err, "reads format 1.x"),
                  "%s", err);
    h->version_major = XALLOC_STATS_FILE_VERSION_MAJOR;

    /* Snapshot struct of another major version. */
    static struct xs_snapshot snap;
    ck_assert_int_eq(xs_open_path(path, false, &f, err, sizeof err), XS_OK);
    xalloc_stats_file_snapshot(h)->version_major = 7;
    xalloc_stats_file_snapshot(h)->version_minor = 0;
    ck_assert_int_eq(xs_read(&f, &snap, 100, err, sizeof err), XS_VERSION);
    ck_assert_ptr_nonnull(strstr(err, "7.0"));
    xs_close(&f);

    h->snapshot_offset = size; /* snapshot beyond the end */
    ck_assert_int_eq(xs_open_path(path, false, &f, err, sizeof err), XS_ERROR);
    ck_assert_ptr_nonnull(strstr(err, "malformed"));

    h->magic = 0x1234;
    ck_assert_int_eq(xs_open_path(path, false, &f, err, sizeof err), XS_ERROR);
    ck_assert_ptr_nonnull(strstr(err, "not an xalloc statistics file"));
    munmap(h, size);

    /* A symlink at the path is never followed. */
    char link[160];
    snprintf(link, sizeof link, "%s/xalloc.3", tmpdir);
    ck_assert_int_eq(symlink(path, link), 0);
    ck_assert_int_eq(xs_open_path(link, false, &f, err, sizeof err), XS_ERROR);
    ck_assert_ptr_nonnull(strstr(err, "symbolic link"));

    snprintf(link, sizeof link, "%s/xalloc.4", tmpdir);
    ck_assert_int_eq(xs_open_path(link, false, &f, err, sizeof err), XS_NOT_XALLOC);
    remove_tmpdir();
}
END_TEST

START_TEST(test_other_user_denied)
{
    if (geteuid() != 0) {
        fprintf(stderr, "check_stats_file: not root: other-user test skipped\n");
        return;
    }
    char path[128], err[512];
    size_t size;
    make_tmpdir();
    snprintf(path, sizeof path, "%s/xalloc.5", tmpdir);
    struct xalloc_stats_file_header *h = make_file(path, 5, 0, &size);
    pid_t c = fork();
    ck_assert_int_ge(c, 0);
    if (c == 0) {
        struct xs_file f;
        if (setgid(65534) != 0 || setuid(65534) != 0)
            _exit(10);
        if (xs_open_path(path, false, &f, err, sizeof err) != XS_PERM)
            _exit(11);
        if (!strstr(err, "permission denied") || !strstr(err, "belongs to root"))
            _exit(12);
        if (xs_open_path(path, true, &f, err, sizeof err) != XS_PERM)
            _exit(13);
        _exit(0);
    }
    int st;
    ck_assert_int_eq(waitpid(c, &st, 0), c);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %d", st);
    munmap(h, size);
    remove_tmpdir();
}
END_TEST

/* ---- stale files ---- */

START_TEST(test_stale_dead_process_removed)
{
    char path[128], err[512], note[512];
    size_t size;
    make_tmpdir();
    pid_t c = fork();
    ck_assert_int_ge(c, 0);
    if (c == 0)
        _exit(0);
    ck_assert_int_eq(waitpid(c, NULL, 0), c);
    snprintf(path, sizeof path, "%s/xalloc.%d", tmpdir, (int)c);
    struct xalloc_stats_file_header *h = make_file(path, c, 12345, &size);
    munmap(h, size);
    struct xs_file f;
    ck_assert_int_eq(xs_open_pid(c, tmpdir, false, &f, note, sizeof note, err, sizeof err),
                     XS_NO_PROCESS);
    ck_assert_msg(strstr(err, "no such process") && strstr(err, "removed the stale"), "%s", err);
    ck_assert_int_eq(access(path, F_OK), -1);
    remove_tmpdir();
}
END_TEST

START_TEST(test_stale_reused_pid_removed)
{
    char path[128], err[512], note[512];
    size_t size;
    make_tmpdir();
    /* Our own pid, but another start time: an earlier process's file. */
    snprintf(path, sizeof path, "%s/xalloc.%d", tmpdir, (int)getpid());
    struct xalloc_stats_file_header *h = make_file(path, getpid(), self_start_ticks() + 1, &size);
    munmap(h, size);
    struct xs_file f;
    ck_assert_int_eq(xs_open_pid(getpid(), tmpdir, false, &f, note, sizeof note, err, sizeof err),
                     XS_NOT_XALLOC);
    ck_assert_msg(strstr(note, "removed the stale"), "note: %s", note);
    ck_assert_msg(strstr(err, "does not use xalloc"), "%s", err);
    ck_assert_int_eq(access(path, F_OK), -1);

    /* With the right start time the same file is found through --dir. */
    h = make_file(path, getpid(), self_start_ticks(), &size);
    ck_assert_int_eq(xs_open_pid(getpid(), tmpdir, false, &f, note, sizeof note, err, sizeof err),
                     XS_OK);
    /* Found in the process's own mount namespace: /proc/PID/root/... */
    ck_assert_msg(strlen(f.path) >= strlen(path) &&
                      strcmp(f.path + strlen(f.path) - strlen(path), path) == 0,
                  "%s", f.path);
    ck_assert_int_eq(f.ns_pid, getpid());
    xs_close(&f);
    munmap(h, size);
    remove_tmpdir();
}
END_TEST

/* ---- request area ---- */

struct server_arg {
    struct xalloc_stats_file_header *h;
    int32_t status;
    const char *answer;
    int served;
};

/* Plays the process's side: waits on the futex, answers one request. */
static void *server(void *p)
{
    struct server_arg *s = p;
    struct xalloc_stats_file_request *r = &s->h->request;
    for (int i = 0; i < 500; i++) {
        uint32_t seq = __atomic_load_n(&r->seq, __ATOMIC_ACQUIRE);
        if (seq != __atomic_load_n(&r->ack_seq, __ATOMIC_RELAXED)) {
            snprintf(r->message, sizeof r->message, "%s %u %s", s->answer, r->command, r->arg);
            r->status = s->status;
            r->result = 4096;
            __atomic_store_n(&r->ack_seq, seq, __ATOMIC_RELEASE);
            syscall(SYS_futex, &r->ack_seq, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
            s->served++;
            return NULL;
        }
        struct timespec ts = {0, 10000000};
        syscall(SYS_futex, &r->seq, FUTEX_WAIT, seq, &ts, NULL, 0);
    }
    return NULL;
}

START_TEST(test_request_roundtrip)
{
    char path[128], err[256], msg[256];
    size_t size;
    make_tmpdir();
    snprintf(path, sizeof path, "%s/xalloc.6", tmpdir);
    struct xalloc_stats_file_header *h = make_file(path, 6, 0, &size);
    struct xs_file f;
    ck_assert_int_eq(xs_open_path(path, true, &f, err, sizeof err), XS_OK);

    struct server_arg s = {.h = h, .status = 0, .answer = "ok"};
    pthread_t t;
    uint64_t result = 0;
    ck_assert_int_eq(pthread_create(&t, NULL, server, &s), 0);
    ck_assert_int_eq(xs_request(&f, XALLOC_STATS_CMD_SET, "decay_ms:0", 3000, &result, msg,
                                sizeof msg), XS_OK);
    pthread_join(t, NULL);
    ck_assert_int_eq(s.served, 1);
    ck_assert_str_eq(msg, "ok 2 decay_ms:0");
    ck_assert_uint_eq(result, 4096);
    ck_assert_uint_eq(h->request.requester_uid, geteuid());
    ck_assert_int_eq(h->request.owner, 0); /* released */

    s = (struct server_arg){.h = h, .status = EPERM, .answer = "no"};
    ck_assert_int_eq(pthread_create(&t, NULL, server, &s), 0);
    ck_assert_int_eq(xs_request(&f, XALLOC_STATS_CMD_PURGE, NULL, 3000, &result, msg,
                                sizeof msg), XS_REFUSED);
    pthread_join(t, NULL);
    ck_assert_str_eq(msg, "no 1 ");

    /* Nobody serves: bounded wait, then the request is withdrawn. */
    uint64_t t0 = xs_now_ns();
    ck_assert_int_eq(xs_request(&f, XALLOC_STATS_CMD_PURGE, NULL, 300, &result, msg,
                                sizeof msg), XS_TIMEOUT);
    ck_assert_uint_lt(xs_now_ns() - t0, 2000000000u);
    ck_assert_uint_eq(h->request.seq, h->request.ack_seq);
    ck_assert_int_eq(h->request.owner, 0);

    /* An area left held by a dead client is taken over. */
    pid_t c = fork();
    if (c == 0)
        _exit(0);
    waitpid(c, NULL, 0);
    h->request.owner = c;
    s = (struct server_arg){.h = h, .status = 0, .answer = "ok"};
    ck_assert_int_eq(pthread_create(&t, NULL, server, &s), 0);
    ck_assert_int_eq(xs_request(&f, XALLOC_STATS_CMD_PURGE, NULL, 3000, &result, msg,
                                sizeof msg), XS_OK);
    pthread_join(t, NULL);
    xs_close(&f);
    munmap(h, size);
    remove_tmpdir();
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("stats_file");
    TCase *e = tcase_create("emitter");
    tcase_add_test(e, test_bytes_units);
    tcase_add_test(e, test_text_report);
    tcase_add_test(e, test_json_report);
    tcase_add_test(e, test_prometheus_report);
    tcase_add_test(e, test_config_and_summary);
    suite_add_tcase(s, e);
    TCase *f = tcase_create("file");
    tcase_set_timeout(f, 30);
    tcase_add_test(f, test_seqlock_never_torn);
    tcase_add_test(f, test_unpublished_file_times_out);
    tcase_add_test(f, test_rejects_bad_files);
    tcase_add_test(f, test_file_changed_under_reader);
    tcase_add_test(f, test_other_user_denied);
    tcase_add_test(f, test_stale_dead_process_removed);
    tcase_add_test(f, test_stale_reused_pid_removed);
    tcase_add_test(f, test_request_roundtrip);
    suite_add_tcase(s, f);
    return s;
}

int main(void)
{
    SRunner *r = srunner_create(suite());
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? 1 : 0;
}
