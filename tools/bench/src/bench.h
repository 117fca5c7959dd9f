/* bench.h: support shared by the benchmark workloads in tools/bench/src.
 *
 * Every workload is a plain program that uses only the C library's
 * malloc/free/realloc, so the runner can swap allocators with LD_PRELOAD and
 * each allocator runs the very same binary. Arguments are key=value words
 * (`malloc_test threads=2 size=9300 pairs=1000000`), and each program prints
 * exactly one line on stdout:
 *
 *   RESULT workload=NAME alloc=LIB key=value ...
 *
 * which tools/bench/run.py parses. Nothing here allocates through malloc
 * on a measured path. */
#ifndef XBENCH_H
#define XBENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- arguments ---- */

/* Records argv (key=value words) for the getters below. */
void bench_args(int argc, char **argv, const char *usage);
/* Integer argument with optional k/m/g suffix (powers of 1024). */
uint64_t bench_arg_u64(const char *key, uint64_t def);
double bench_arg_f(const char *key, double def);
const char *bench_arg_str(const char *key, const char *def);
/* Exits with the usage text if an argument was given that no getter asked
 * for, so a typo never silently runs the default. Call after all getters. */
void bench_args_done(void);

/* ---- time, memory ---- */

double bench_now(void);          /* CLOCK_MONOTONIC seconds */
uint64_t bench_now_ns(void);
long bench_status_kb(const char *field); /* "VmRSS", "VmHWM" from /proc/self/status */
/* A field of /proc/self/smaps_rollup, e.g. "AnonHugePages"; -1 if absent. */
long bench_smaps_kb(const char *field);
long bench_rss_kb(void);         /* current resident set, from /proc/self/statm */
/* Aborts the run (exit 3, with a RESULT error line) when the resident set
 * exceeds rss_cap_mb= (default 8192): a guard against an allocator that
 * maps huge pages where the workload touches one byte per block. */
void bench_rss_guard(void);

/* ---- random numbers: splitmix64, one state per thread ---- */

static inline uint64_t bench_rand(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
/* Uniform in [lo, hi]. */
static inline uint64_t bench_rand_range(uint64_t *s, uint64_t lo, uint64_t hi)
{
    return lo + bench_rand(s) % (hi - lo + 1);
}
/* Log-uniform in [lo, hi]: as many objects per doubling, like real heaps. */
size_t bench_rand_logsize(uint64_t *s, size_t lo, size_t hi);

/* ---- misc ---- */

/* Keeps the compiler from deleting a malloc/free pair whose block is unused. */
void bench_sink(void *p);

/* State that one thread writes as it runs (its rng, its counters) sits on
 * cache lines of its own: two threads' state on one line would bounce it
 * between cores on every step, and where the allocator under test happens
 * to put a small calloc'd array (48 bytes: one line, or two) would then
 * decide the result (larson varied 3x on that alone). */
#define BENCH_OWN_LINE __attribute__((aligned(64)))
/* n zeroed elements of size bytes (a multiple of 64: a BENCH_OWN_LINE
 * type), 64-aligned; exits with a message when out of memory. */
void *bench_calloc_lines(size_t n, size_t size);
/* Marks a phase boundary in an strace log: a write(2) to fd -1 that fails
 * with EBADF, costs one system call and shows up as
 *   write(-1, "XBENCH:NAME", ...) = -1 EBADF
 * so the runner can count system calls between two markers. */
void bench_marker(const char *name);
/* File name of the library that provides malloc (e.g. libjemalloc.so.2,
 * libc.so.6), so the runner can check that LD_PRELOAD took effect. */
const char *bench_malloc_owner(void);
/* Sorts n values in place; then bench_quantile reads the q-quantile
 * (0 <= q <= 1, nearest rank) of the sorted array. */
void bench_sort_u64(uint64_t *v, size_t n);
uint64_t bench_quantile(const uint64_t *sorted, size_t n, double q);
/* Writes one touch per 4 KiB page of [p, p+n), so the pages are resident. */
void bench_touch_pages(void *p, size_t n);

/* ---- the result line ---- */

void bench_result_begin(const char *workload);
void bench_kv_u64(const char *key, uint64_t v);
void bench_kv_f(const char *key, double v);
void bench_kv_str(const char *key, const char *v);
/* Appends rss_peak_kb (VmHWM) unless given, alloc=, prints the line, flushes. */
void bench_result_end(void);

#endif /* XBENCH_H */
