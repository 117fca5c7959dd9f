/* falseshare.c: allocator-induced false sharing (Hoard's cache-scratch and
 * cache-thrash tests). mode=passive: the main thread allocates one small
 * object per worker (so they sit side by side, likely in one cache line) and
 * hands them out; each worker frees its object, then `iters` times
 * allocates an object of the same size, writes it `writes` times and frees
 * it. An allocator that gives the freed object, or its neighbour, back to
 * the worker makes the workers write one cache line from two cores.
 * mode=active: the same without the hand-off (each worker's own objects).
 * Time is the figure; it is only meaningful with threads >= 2 on >= 2 CPUs. */
#include "bench.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t iters, writes;
static size_t objsize;
static pthread_barrier_t start_line;

struct worker {
    char *given;
    pthread_t tid;
};

static void *work(void *arg)
{
    struct worker *w = arg;
    pthread_barrier_wait(&start_line);
    free(w->given);
    for (uint64_t i = 0; i < iters; i++) {
        volatile char *p = malloc(objsize);
        if (!p) {
            fprintf(stderr, "falseshare: malloc failed\n");
            exit(1);
        }
        for (uint64_t k = 0; k < writes; k++)
            p[k % objsize] = (char)(p[k % objsize] + 1);
        free((void *)p);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    bench_args(argc, argv,
               "falseshare mode=passive threads=2 objsize=8 iters=20000 writes=500");
    const char *mode = bench_arg_str("mode", "passive");
    unsigned threads = (unsigned)bench_arg_u64("threads", 2);
    objsize = (size_t)bench_arg_u64("objsize", 8);
    iters = bench_arg_u64("iters", 20000);
    writes = bench_arg_u64("writes", 500);
    bench_args_done();
    bool passive = strcmp(mode, "passive") == 0;
    if ((!passive && strcmp(mode, "active") != 0) || threads < 1 || threads > 256 ||
        objsize < 1) {
        fprintf(stderr, "falseshare: mode=passive|active, threads 1..256, objsize >= 1\n");
        return 2;
    }
    struct worker w[256];
    for (unsigned t = 0; t < threads; t++)
        w[t].given = passive ? malloc(objsize) : NULL;
    pthread_barrier_init(&start_line, NULL, threads + 1);
    for (unsigned t = 0; t < threads; t++)
        if (pthread_create(&w[t].tid, NULL, work, &w[t])) {
            perror("pthread_create");
            return 1;
        }
    double t0 = bench_now();
    pthread_barrier_wait(&start_line);
    for (unsigned t = 0; t < threads; t++)
        pthread_join(w[t].tid, NULL);
    double secs = bench_now() - t0;

    uint64_t ops = iters * threads;
    bench_result_begin(passive ? "falseshare-passive" : "falseshare-active");
    bench_kv_u64("threads", threads);
    bench_kv_u64("ops", ops);
    bench_kv_f("secs", secs);
    bench_kv_f("ops_per_sec", (double)ops / secs);
    bench_result_end();
    return 0;
}
