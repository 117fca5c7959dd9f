/* malloc_test.c: the classic malloc-test (used to compare ptmalloc and
 * jemalloc): T threads each do R malloc/free pairs of S bytes, back to back.
 * It measures the allocator's fast path for one size; the callgrind rows of
 * the suite run it twice with different R and take the difference, so the
 * per-pair instruction count excludes start-up and thread creation.
 * batch=B (default 1): each thread allocates B blocks, then frees them in
 * the same order, in rounds (a request's buffers): with B blocks more
 * than one slab or span holds, an allocator that gives an emptied one
 * back at once takes it again every round. */
#include "bench.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static uint64_t pairs, batch;
static size_t size;
static pthread_barrier_t start_line;

static void *worker(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&start_line);
    if (batch > 1) {
        char **held = malloc(batch * sizeof *held);
        if (!held) {
            fprintf(stderr, "malloc_test: no memory for the batch\n");
            exit(1);
        }
        for (uint64_t i = 0; i < pairs; i += batch) {
            for (uint64_t k = 0; k < batch; k++) {
                if (!(held[k] = malloc(size))) {
                    fprintf(stderr, "malloc_test: malloc(%zu) failed\n", size);
                    exit(1);
                }
                held[k][0] = (char)k;
                bench_sink(held[k]);
            }
            for (uint64_t k = 0; k < batch; k++)
                free(held[k]);
        }
        free(held);
        return NULL;
    }
    for (uint64_t i = 0; i < pairs; i++) {
        char *p = malloc(size);
        if (!p) {
            fprintf(stderr, "malloc_test: malloc(%zu) failed\n", size);
            exit(1);
        }
        p[0] = (char)i; /* one write, so the block is really handed out */
        bench_sink(p);
        free(p);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    bench_args(argc, argv, "malloc_test threads=1 pairs=1000000 size=64 batch=1");
    unsigned threads = (unsigned)bench_arg_u64("threads", 1);
    pairs = bench_arg_u64("pairs", 1000000);
    size = (size_t)bench_arg_u64("size", 64);
    batch = bench_arg_u64("batch", 1);
    bench_args_done();
    if (threads < 1 || threads > 256 || size < 1 || batch < 1 || batch > 1000000) {
        fprintf(stderr, "malloc_test: threads must be 1..256, size >= 1, batch 1..1000000\n");
        return 2;
    }
    pairs = (pairs + batch - 1) / batch * batch; /* whole rounds */

    pthread_t tid[256];
    pthread_barrier_init(&start_line, NULL, threads + 1);
    for (unsigned t = 0; t < threads; t++)
        if (pthread_create(&tid[t], NULL, worker, NULL) != 0) {
            perror("pthread_create");
            return 1;
        }
    double t0 = bench_now();
    pthread_barrier_wait(&start_line);
    for (unsigned t = 0; t < threads; t++)
        pthread_join(tid[t], NULL);
    double secs = bench_now() - t0;

    uint64_t ops = pairs * threads;
    bench_result_begin("malloc-test");
    bench_kv_u64("threads", threads);
    bench_kv_u64("size", size);
    bench_kv_u64("batch", batch);
    bench_kv_u64("ops", ops);
    bench_kv_f("secs", secs);
    bench_kv_f("ops_per_sec", (double)ops / secs);
    /* Wall time of one pair as one thread sees it. */
    bench_kv_f("ns_per_pair", secs * 1e9 / (double)pairs);
    bench_result_end();
    return 0;
}
