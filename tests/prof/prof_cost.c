/* prof_cost.c: two micro figures of the profiler (tools/prof-bench).
 * Run under libxalloc-prof.so.1 with prof:true,prof_sample:1.
 *  1. One unwind: unw_backtrace at a known depth, timed directly, and the
 *     extra cost of a sampled malloc/free pair over the same pair with
 *     prof_active:false: from one call path over and over (the stack
 *     cache hits: no unwind), and from two paths in turns that share the
 *     cache's key: the entry keeps one of them, so one call in two hits
 *     and the other misses (unwind, intern); twice that figure less the
 *     first is the cost of a miss.
 *  2. One dump of a 10,000-stack profile: 10,000 distinct call paths each
 *     keep a block; the process asks itself for dumps through its
 *     statistics file (as xalloc-stat --dump does); the time of a no-op
 *     request (publish) is subtracted.
 * Prints one markdown paragraph. */
#define _GNU_SOURCE
#define UNW_LOCAL_ONLY
#include <dlfcn.h>
#include <libunwind.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "statfile.h"

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int (*config_set)(const char *, char *, size_t);

static void set(const char *kv)
{
    char msg[200];
    if (!config_set || config_set(kv, msg, sizeof msg) != 0) {
        fprintf(stderr, "prof_cost: cannot set %s (run under libxalloc-prof.so.1)\n", kv);
        exit(1);
    }
}

/* ---- 1: unwind ---- */

#define DEPTH 16
#define PAIRS 200000

void *volatile sink;
double chain(int d, int mode);

/* Two callers with the same frame of one allocating function (see
 * tests/prof/stack_cache.c): its malloc runs at the same stack address
 * whichever called it, the stacks differ one frame further out. */
void *pair_leaf(size_t size);
void *pair_a(size_t size);
void *pair_b(size_t size);
__attribute__((noinline)) void *pair_leaf(size_t size)
{
    void *p = malloc(size);
    __asm__ volatile("" : : "r"(p) : "memory"); /* no tail call */
    return p;
}

__attribute__((noinline, noclone)) void *pair_a(size_t size)
{
    void *p = pair_leaf(size);
    __asm__ volatile("" : : "r"(p) : "memory");
    return p;
}

__attribute__((noinline, noclone)) void *pair_b(size_t size)
{
    void *p = pair_leaf(size);
    __asm__ volatile("" : "+r"(p) : : "memory");
    return p;
}

/* Recurses to DEPTH frames, then times mode 0 (unw_backtrace), mode 1
 * (malloc/free pairs) or mode 2 (pairs through pair_a and pair_b in
 * turns). */
__attribute__((noinline)) double chain(int d, int mode)
{
    if (d > 0) {
        double r = chain(d - 1, mode);
        __asm__ volatile("" ::: "memory");
        return r;
    }
    double t0 = now_ns();
    if (mode == 0) {
        void *buf[64];
        for (int i = 0; i < PAIRS; i++)
            if (unw_backtrace(buf, 64) < DEPTH)
                abort();
    } else if (mode == 1) {
        for (int i = 0; i < PAIRS; i++) {
            sink = malloc(64);
            free(sink);
        }
    } else {
        void *(*volatile via[2])(size_t) = {pair_a, pair_b};
        for (int i = 0; i < PAIRS; i++) {
            sink = via[i & 1](64);
            free(sink);
        }
    }
    return (now_ns() - t0) / PAIRS;
}

/* ---- 2: dump ---- */

void *keep[16384];
void path0(unsigned k, int bit);
void path1(unsigned k, int bit);

/* Two functions chosen by the bits of k: 14 bits give 16384 paths. */
__attribute__((noinline)) void path0(unsigned k, int bit)
{
    if (bit == 14) {
        keep[k] = malloc(32);
        return;
    }
    ((k >> bit) & 1 ? path1 : path0)(k, bit + 1);
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void path1(unsigned k, int bit)
{
    if (bit == 14) {
        keep[k] = malloc(48);
        return;
    }
    ((k >> bit) & 1 ? path1 : path0)(k, bit + 1);
    __asm__ volatile("" ::: "memory");
}

static double request_ms(struct xs_file *f, uint32_t cmd, char *msg, size_t cap)
{
    uint64_t result;
    double t0 = now_ns();
    if (xs_request(f, cmd, NULL, 60000, &result, msg, cap) != XS_OK) {
        fprintf(stderr, "prof_cost: request failed: %s\n", msg);
        exit(1);
    }
    return (now_ns() - t0) / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(void)
{
    config_set = (int (*)(const char *, char *, size_t))dlsym(RTLD_DEFAULT, "xalloc_config_set");
    set("prof_active:true");
    double unw = chain(DEPTH, 0);
    set("prof_active:false");
    double off = chain(DEPTH, 1), off_turns = chain(DEPTH, 2);
    set("prof_active:true");
    double on = chain(DEPTH, 1), on_turns = chain(DEPTH, 2);

    for (unsigned k = 0; k < 10000; k++)
        path0(k, 0);

    struct xs_file f;
    char note[200], err[400], msg[200];
    int tries = 0;
    while (xs_open_pid(getpid(), NULL, true, &f, note, sizeof note, err, sizeof err) != XS_OK) {
        if (++tries > 100) {
            fprintf(stderr, "prof_cost: %s\n", err);
            return 1;
        }
        usleep(50000);
        free(malloc(100)); /* a slow path ticks the statistics */
    }
    double noop[5], dump[6];
    for (int i = 0; i < 5; i++)
        noop[i] = request_ms(&f, XALLOC_STATS_CMD_PUBLISH, msg, sizeof msg);
    for (int i = 0; i < 6; i++)
        dump[i] = request_ms(&f, XALLOC_STATS_CMD_DUMP, msg, sizeof msg);
    xs_close(&f);
    qsort(noop, 5, sizeof noop[0], cmp_double);
    qsort(dump + 1, 5, sizeof dump[0], cmp_double);
    printf("One unwind (unw_backtrace, %d frames deep): %.0f ns. A sampled malloc/free pair "
           "costs %.0f ns more than an unsampled one when its call stack repeats (the stack "
           "cache hits: record made and dropped; %.0f vs %.0f ns), %.0f ns more from two "
           "callers in turns that share the cache's key (%.0f vs %.0f ns; one call in two "
           "misses: a miss, with its unwind and stack intern, costs about %.0f ns). "
           "One dump of a 10,000-stack profile (heap file with MAPPED_LIBRARIES, plus collapsed "
           "stacks): %.1f ms the first time (symbol names looked up), %.1f ms after (median of "
           "5), request round trip (%.2f ms) subtracted.\n",
           DEPTH + 2, unw, on - off, on, off, on_turns - off_turns, on_turns, off_turns,
           2 * (on_turns - off_turns) - (on - off),
           dump[0] - noop[2], dump[3] - noop[2], noop[2]);
    return 0;
}
