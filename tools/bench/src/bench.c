/* bench.c: argument parsing, clocks, RSS readers and the RESULT line shared
 * by every workload (see bench.h). Linked into each workload program. */
#define _GNU_SOURCE
#include "bench.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- arguments ---- */

#define MAX_ARGS 64
static int n_args;
static char **args_v;
static bool args_used[MAX_ARGS];
static const char *args_usage = "";

static void usage_exit(const char *why, const char *what)
{
    fprintf(stderr, "%s: %s\nusage: %s\n", why, what, args_usage);
    exit(2);
}

void bench_args(int argc, char **argv, const char *usage)
{
    args_usage = usage;
    if (argc - 1 > MAX_ARGS)
        usage_exit("too many arguments", argv[0]);
    n_args = argc - 1;
    args_v = argv + 1;
    for (int i = 0; i < n_args; i++) {
        if (strcmp(args_v[i], "-h") == 0 || strcmp(args_v[i], "--help") == 0) {
            printf("usage: %s\n", usage);
            exit(0);
        }
        if (!strchr(args_v[i], '='))
            usage_exit("argument is not key=value", args_v[i]);
    }
}

/* Returns the value of key=value, or NULL; the last occurrence wins so a
 * runner can append overrides. */
static const char *arg_find(const char *key)
{
    size_t kl = strlen(key);
    const char *v = NULL;
    for (int i = 0; i < n_args; i++) {
        if (strncmp(args_v[i], key, kl) == 0 && args_v[i][kl] == '=') {
            v = args_v[i] + kl + 1;
            args_used[i] = true;
        }
    }
    return v;
}

uint64_t bench_arg_u64(const char *key, uint64_t def)
{
    const char *v = arg_find(key);
    if (!v)
        return def;
    char *end;
    errno = 0;
    double d = strtod(v, &end); /* accepts 1e6 as well as 1000000 */
    if (errno || end == v || d < 0)
        usage_exit("bad number", v);
    switch (*end) {
    case 'k': case 'K': d *= 1024.0; end++; break;
    case 'm': case 'M': d *= 1024.0 * 1024.0; end++; break;
    case 'g': case 'G': d *= 1024.0 * 1024.0 * 1024.0; end++; break;
    default: break;
    }
    if (*end)
        usage_exit("bad number", v);
    return (uint64_t)llround(d);
}

double bench_arg_f(const char *key, double def)
{
    const char *v = arg_find(key);
    if (!v)
        return def;
    char *end;
    double d = strtod(v, &end);
    if (end == v || *end)
        usage_exit("bad number", v);
    return d;
}

const char *bench_arg_str(const char *key, const char *def)
{
    const char *v = arg_find(key);
    return v ? v : def;
}

static long rss_cap_kb = 8192L * 1024;

void bench_args_done(void)
{
    rss_cap_kb = (long)bench_arg_u64("rss_cap_mb", 8192) * 1024;
    for (int i = 0; i < n_args; i++)
        if (!args_used[i])
            usage_exit("unknown argument", args_v[i]);
}

/* ---- time, memory ---- */

double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

uint64_t bench_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Reads a small /proc file into buf with raw read(2): no stdio, so the
 * reader itself does not allocate while the heap is being measured. */
static ssize_t read_small(const char *path, char *buf, size_t len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t got = 0;
    while (got + 1 < len) {
        ssize_t r = read(fd, buf + got, len - 1 - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    buf[got] = '\0';
    return (ssize_t)got;
}

static long proc_field_kb(const char *path, const char *field)
{
    char buf[4096];
    if (read_small(path, buf, sizeof buf) <= 0)
        return -1;
    size_t fl = strlen(field);
    for (char *line = buf; line && *line; line = strchr(line, '\n')) {
        if (*line == '\n')
            line++;
        if (strncmp(line, field, fl) == 0 && line[fl] == ':')
            return strtol(line + fl + 1, NULL, 10);
    }
    return -1;
}

long bench_status_kb(const char *field)
{
    return proc_field_kb("/proc/self/status", field);
}

long bench_smaps_kb(const char *field)
{
    return proc_field_kb("/proc/self/smaps_rollup", field);
}

long bench_rss_kb(void)
{
    char buf[256];
    if (read_small("/proc/self/statm", buf, sizeof buf) <= 0)
        return -1;
    char *p = buf;
    strtol(p, &p, 10); /* size */
    long resident = strtol(p, NULL, 10);
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

void bench_rss_guard(void)
{
    long rss = bench_rss_kb();
    if (rss > rss_cap_kb) {
        printf("RESULT workload=guard error=rss_cap rss_kb=%ld cap_kb=%ld\n",
               rss, rss_cap_kb);
        fflush(stdout);
        _exit(3);
    }
}

size_t bench_rand_logsize(uint64_t *s, size_t lo, size_t hi)
{
    /* Pick a power-of-two octave uniformly, then a size inside it. */
    double l = log2((double)lo), h = log2((double)hi);
    double u = (double)(bench_rand(s) >> 11) * 0x1.0p-53;
    size_t v = (size_t)exp2(l + u * (h - l));
    return v < lo ? lo : v > hi ? hi : v;
}

/* ---- misc ---- */

/* Thread-local: a shared global written by every thread on every operation
 * would make the threads fight over one cache line and measure that, not
 * the allocator. */
static __thread void *volatile bench_sink_slot;

void bench_sink(void *p)
{
    bench_sink_slot = p;
}

void *bench_calloc_lines(size_t n, size_t size)
{
    void *p = aligned_alloc(64, n * size);
    if (!p) {
        fprintf(stderr, "bench: out of memory for %zu x %zu bytes\n", n, size);
        exit(1);
    }
    return memset(p, 0, n * size);
}

void bench_marker(const char *name)
{
    char buf[96];
    int n = snprintf(buf, sizeof buf, "XBENCH:%s", name);
    ssize_t r = write(-1, buf, (size_t)n);
    (void)r;
}

const char *bench_malloc_owner(void)
{
    void *sym = dlsym(RTLD_DEFAULT, "malloc");
    Dl_info info;
    if (!sym || !dladdr(sym, &info) || !info.dli_fname)
        return "unknown";
    const char *slash = strrchr(info.dli_fname, '/');
    return slash ? slash + 1 : info.dli_fname;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

void bench_sort_u64(uint64_t *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_u64);
}

uint64_t bench_quantile(const uint64_t *sorted, size_t n, double q)
{
    if (n == 0)
        return 0;
    size_t rank = (size_t)ceil(q * (double)n); /* nearest-rank method */
    if (rank < 1)
        rank = 1;
    if (rank > n)
        rank = n;
    return sorted[rank - 1];
}

void bench_touch_pages(void *p, size_t n)
{
    volatile char *c = p;
    for (size_t i = 0; i < n; i += 4096)
        c[i] = (char)i;
    if (n)
        c[n - 1] = 1;
}

/* ---- the result line ---- */

static char res_buf[2048];
static size_t res_len;
static bool res_has_peak;

static void res_add(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void res_add(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(res_buf + res_len, sizeof res_buf - res_len, fmt, ap);
    va_end(ap);
    if (n > 0 && (size_t)n < sizeof res_buf - res_len)
        res_len += (size_t)n;
}

void bench_result_begin(const char *workload)
{
    res_len = 0;
    res_has_peak = false;
    res_add("RESULT workload=%s", workload);
}

void bench_kv_u64(const char *key, uint64_t v)
{
    if (strcmp(key, "rss_peak_kb") == 0)
        res_has_peak = true;
    res_add(" %s=%llu", key, (unsigned long long)v);
}

void bench_kv_f(const char *key, double v)
{
    res_add(" %s=%.6g", key, v);
}

void bench_kv_str(const char *key, const char *v)
{
    res_add(" %s=%s", key, v);
}

void bench_result_end(void)
{
    if (!res_has_peak)
        bench_kv_u64("rss_peak_kb", (uint64_t)bench_status_kb("VmHWM"));
    bench_kv_str("alloc", bench_malloc_owner());
    printf("%s\n", res_buf);
    fflush(stdout);
}
