/* churn.c: short-lived threads, as a server that starts a thread per
 * connection or request makes them. `threads` threads run one after
 * another, `live` at a time; each allocates `bytes` in all, in blocks of
 * 16 B..`max` bytes (log-uniform), keeping a window of `window` blocks
 * live (freeing the oldest as it goes), frees the rest and exits. What a
 * thread's first and last allocations cost (setting up and tearing down
 * its caches, per-thread state of a profiler) shows here, next to the
 * allocation work itself. */
#include "bench.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t bytes_per_thread, window;
static size_t max_sz;

struct worker {
    uint64_t rng;
    uint64_t checksum;
} BENCH_OWN_LINE;

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    char **ring = calloc(window, sizeof *ring);
    if (!ring) {
        fprintf(stderr, "churn: calloc failed\n");
        exit(1);
    }
    uint64_t done = 0, i = 0;
    while (done < bytes_per_thread) {
        size_t n = bench_rand_logsize(&w->rng, 16, max_sz);
        char *p = malloc(n);
        if (!p) {
            fprintf(stderr, "churn: malloc(%zu) failed\n", n);
            exit(1);
        }
        p[0] = (char)n;
        p[n - 1] = 1;
        char **slot = &ring[i++ % window];
        if (*slot) {
            w->checksum += (unsigned char)(*slot)[0];
            free(*slot);
        }
        *slot = p;
        done += n;
    }
    for (uint64_t k = 0; k < window; k++)
        free(ring[k]);
    free(ring);
    return NULL;
}

int main(int argc, char **argv)
{
    bench_args(argc, argv,
               "churn threads=N live=N bytes=N window=N max=N seed=N");
    unsigned threads = (unsigned)bench_arg_u64("threads", 200);
    unsigned live = (unsigned)bench_arg_u64("live", 2);
    bytes_per_thread = bench_arg_u64("bytes", 4u << 20);
    window = bench_arg_u64("window", 256);
    max_sz = (size_t)bench_arg_u64("max", 65536);
    uint64_t seed = bench_arg_u64("seed", 1);
    bench_args_done();
    if (threads < 1 || live < 1 || live > 64 || window < 1 || max_sz < 16) {
        fprintf(stderr, "churn: bad arguments\n");
        return 2;
    }
    struct worker *w = bench_calloc_lines(threads, sizeof *w);
    pthread_t tid[64];
    double t0 = bench_now();
    for (unsigned started = 0; started < threads; started += live) {
        unsigned batch = threads - started < live ? threads - started : live;
        for (unsigned k = 0; k < batch; k++) {
            w[started + k].rng = seed * 1000003u + started + k;
            if (pthread_create(&tid[k], NULL, worker_main, &w[started + k])) {
                perror("pthread_create");
                return 1;
            }
        }
        for (unsigned k = 0; k < batch; k++)
            pthread_join(tid[k], NULL);
    }
    double secs = bench_now() - t0;
    uint64_t sum = 0;
    for (unsigned i = 0; i < threads; i++)
        sum += w[i].checksum;
    free(w);

    bench_result_begin("churn");
    bench_kv_u64("threads", threads);
    bench_kv_f("secs", secs);
    bench_kv_f("threads_per_sec", threads / secs);
    bench_kv_u64("checksum", sum);
    bench_kv_u64("rss_final_kb", (uint64_t)bench_rss_kb());
    bench_result_end();
    return 0;
}
