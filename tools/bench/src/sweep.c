/* sweep.c: batches that move through the sizes (MicroQuill's sh6bench).
 * Each of T threads runs `rounds` rounds; round i allocates a batch of
 * 100-2000 blocks of 1 + 7i mod `max` bytes (the first byte of each
 * written), then frees the batch back to front on odd rounds, evens then
 * odds on even ones. Every few rounds the size class changes: what the
 * allocator kept for the classes it passed through (empty slabs, spans,
 * pages) is either reused by the class of the moment or held, cold and
 * resident, while that class takes other memory. The figure is ns per
 * malloc/free pair; the peak RSS is the allocator's slack. */
#include "bench.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static uint64_t rounds, max_size;
static pthread_barrier_t start_line;

typedef struct worker {
    pthread_t tid;
    uint64_t seed, pairs, check;
} worker;

static void *work(void *arg)
{
    worker *w = arg;
    uint64_t rng = w->seed;
    char **batch = malloc(2000 * sizeof *batch);
    if (!batch) {
        fprintf(stderr, "sweep: no memory for the batch\n");
        exit(1);
    }
    pthread_barrier_wait(&start_line);
    uint64_t pairs = 0, check = 0;
    for (uint64_t i = 0; i < rounds; i++) {
        size_t size = 1 + (size_t)((i * 7) % max_size);
        unsigned n = 100 + (unsigned)(bench_rand(&rng) % 1900);
        for (unsigned k = 0; k < n; k++) {
            if (!(batch[k] = malloc(size))) {
                fprintf(stderr, "sweep: malloc(%zu) failed\n", size);
                exit(1);
            }
            batch[k][0] = (char)k;
        }
        for (unsigned k = 0; k < n; k += 97)
            check += (unsigned char)batch[k][0];
        if (i & 1) {
            for (unsigned k = n; k-- > 0;)
                free(batch[k]);
        } else {
            for (unsigned k = 0; k < n; k += 2)
                free(batch[k]);
            for (unsigned k = 1; k < n; k += 2)
                free(batch[k]);
        }
        pairs += n;
    }
    free(batch);
    w->pairs = pairs;
    w->check = check;
    return NULL;
}

int main(int argc, char **argv)
{
    bench_args(argc, argv, "sweep threads=2 rounds=20000 max=1000 seed=1");
    unsigned threads = (unsigned)bench_arg_u64("threads", 2);
    rounds = bench_arg_u64("rounds", 20000);
    max_size = bench_arg_u64("max", 1000);
    uint64_t seed = bench_arg_u64("seed", 1);
    bench_args_done();
    if (threads < 1 || threads > 64 || max_size < 1) {
        fprintf(stderr, "sweep: threads must be 1..64, max >= 1\n");
        return 2;
    }
    worker w[64];
    pthread_barrier_init(&start_line, NULL, threads + 1);
    for (unsigned t = 0; t < threads; t++) {
        w[t].seed = seed * 0x9e3779b97f4a7c15ull + t + 1;
        if (pthread_create(&w[t].tid, NULL, work, &w[t]) != 0) {
            fprintf(stderr, "sweep: pthread_create failed\n");
            return 1;
        }
    }
    double t0 = bench_now();
    pthread_barrier_wait(&start_line);
    uint64_t pairs = 0, check = 0;
    for (unsigned t = 0; t < threads; t++) {
        pthread_join(w[t].tid, NULL);
        pairs += w[t].pairs;
        check += w[t].check;
    }
    double secs = bench_now() - t0;
    bench_result_begin("sweep");
    bench_kv_u64("pairs", pairs);
    bench_kv_f("secs", secs);
    bench_kv_f("ns_per_pair", secs * 1e9 / (double)pairs);
    bench_kv_u64("check", check);
    bench_result_end();
    return 0;
}
