/* cache.c: a cache at its size limit. Each of T threads fills `slots`
 * slots with blocks of log-uniform sizes in [min, max], writing each whole
 * block, then replaces a random slot `ops` times: the entry evicted is
 * freed and a new one allocated and written (an LRU cache, a session
 * table, a key-value store's values). The working set stays the same, and
 * far bigger than the caches: the block freed is cold, and in the steady
 * state every slab or span is nearly full, so where the free lands and
 * where the next malloc finds a block is what the allocator makes of it.
 * The figure is the steady phase only (ns per replacement; neither the
 * fill nor the final frees); the peak RSS is the fill's and the
 * allocator's slack. With ends=1 only the first and last 64 bytes of an
 * entry are written: buffers a short message fills (I/O buffers of a few
 * to 64 KiB), where the writes no longer hide the allocator's time. */
#include "bench.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t slots, ops;
static size_t min_size, max_size;
static bool ends_only;
static pthread_barrier_t fill_done, start_line, steady_done;

typedef struct worker {
    pthread_t tid;
    uint64_t seed, check;
} worker;

static char *entry_new(uint64_t *rng)
{
    size_t n = bench_rand_logsize(rng, min_size, max_size);
    char *p = malloc(n);
    if (!p) {
        fprintf(stderr, "cache: malloc(%zu) failed\n", n);
        exit(1);
    }
    if (ends_only && n > 128) {
        memset(p, (int)(n & 0x7f), 64);
        memset(p + n - 64, (int)(n & 0x7f), 64);
    } else {
        memset(p, (int)(n & 0x7f), n);
    }
    return p;
}

static void *work(void *arg)
{
    worker *w = arg;
    uint64_t rng = w->seed;
    char **slot = calloc(slots, sizeof *slot);
    if (!slot) {
        fprintf(stderr, "cache: no memory for the slots\n");
        exit(1);
    }
    for (uint64_t i = 0; i < slots; i++)
        slot[i] = entry_new(&rng);
    pthread_barrier_wait(&fill_done);
    pthread_barrier_wait(&start_line);
    uint64_t check = 0;
    for (uint64_t i = 0; i < ops; i++) {
        uint64_t k = bench_rand(&rng) % slots;
        check += (unsigned char)slot[k][0];
        free(slot[k]);
        slot[k] = entry_new(&rng);
    }
    pthread_barrier_wait(&steady_done);
    for (uint64_t i = 0; i < slots; i++)
        free(slot[i]);
    free(slot);
    w->check = check;
    return NULL;
}

int main(int argc, char **argv)
{
    bench_args(argc, argv, "cache threads=1 slots=100000 ops=2000000 min=16 max=256 ends=0 seed=1");
    unsigned threads = (unsigned)bench_arg_u64("threads", 1);
    slots = bench_arg_u64("slots", 100000);
    ops = bench_arg_u64("ops", 2000000);
    min_size = (size_t)bench_arg_u64("min", 16);
    max_size = (size_t)bench_arg_u64("max", 256);
    ends_only = bench_arg_u64("ends", 0) != 0;
    uint64_t seed = bench_arg_u64("seed", 1);
    bench_args_done();
    if (threads < 1 || threads > 64 || slots < 1 || min_size < 1 || max_size < min_size) {
        fprintf(stderr, "cache: threads must be 1..64, slots >= 1, 1 <= min <= max\n");
        return 2;
    }
    worker w[64];
    pthread_barrier_init(&fill_done, NULL, threads + 1);
    pthread_barrier_init(&start_line, NULL, threads + 1);
    pthread_barrier_init(&steady_done, NULL, threads + 1);
    for (unsigned t = 0; t < threads; t++) {
        w[t].seed = seed * 0x9e3779b97f4a7c15ULL + t + 1;
        if (pthread_create(&w[t].tid, NULL, work, &w[t]) != 0) {
            perror("pthread_create");
            return 1;
        }
    }
    pthread_barrier_wait(&fill_done);
    long rss_filled = bench_rss_kb();
    double t0 = bench_now();
    pthread_barrier_wait(&start_line);
    pthread_barrier_wait(&steady_done);
    double secs = bench_now() - t0;
    for (unsigned t = 0; t < threads; t++)
        pthread_join(w[t].tid, NULL);
    uint64_t check = 0;
    for (unsigned t = 0; t < threads; t++)
        check += w[t].check;
    bench_result_begin("cache");
    bench_kv_u64("ops", ops * threads);
    bench_kv_f("secs", secs);
    bench_kv_f("ns_per_op", secs * 1e9 / (double)(ops * threads));
    bench_kv_f("ops_per_sec", (double)(ops * threads) / secs);
    bench_kv_u64("rss_filled_kb", (uint64_t)rss_filled);
    bench_kv_u64("check", check);
    bench_result_end();
    return 0;
}
