/* latency.c: per-request latency of a server-like mix. Each of `threads`
 * threads serves `requests` requests; a request allocates `allocs` blocks
 * of log-uniform sizes (min..max, 16 B-64 KiB), touches every page of each,
 * and stores each one in a random slot of a `live`-slot working set, freeing
 * the block that was there. The request's wall time is recorded, and the
 * p50/p99/p99.9 over all requests are reported with RSS. Run it under
 * XALLOC_CONF=thp:always and thp:never to see what the page policy costs in
 * the tail (page faults, huge-page zeroing, purging). */
#include "bench.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static uint64_t n_req, n_allocs, n_live, seed;
static size_t min_sz, max_sz;
static uint64_t *lat; /* threads * n_req request latencies, ns */
static pthread_barrier_t start_line, end_line, release_line;

static void *server(void *arg)
{
    uintptr_t id = (uintptr_t)arg;
    uint64_t rng = seed * 1000003u + id;
    char **slot = calloc(n_live, sizeof *slot);
    if (!slot)
        exit(1);
    uint64_t *my = lat + id * n_req;
    pthread_barrier_wait(&start_line);
    for (uint64_t r = 0; r < n_req; r++) {
        uint64_t t0 = bench_now_ns();
        for (uint64_t a = 0; a < n_allocs; a++) {
            size_t n = bench_rand_logsize(&rng, min_sz, max_sz);
            char *p = malloc(n);
            if (!p) {
                fprintf(stderr, "latency: malloc(%zu) failed\n", n);
                exit(1);
            }
            bench_touch_pages(p, n);
            uint64_t k = bench_rand_range(&rng, 0, n_live - 1);
            free(slot[k]);
            slot[k] = p;
        }
        my[r] = bench_now_ns() - t0;
    }
    /* Hold the working set while main reads RSS and huge-page usage. */
    pthread_barrier_wait(&end_line);
    pthread_barrier_wait(&release_line);
    for (uint64_t k = 0; k < n_live; k++)
        free(slot[k]);
    free(slot);
    return NULL;
}

int main(int argc, char **argv)
{
    bench_args(argc, argv,
               "latency threads=2 requests=20000 allocs=32 live=2048 min=16 max=64k seed=1");
    unsigned threads = (unsigned)bench_arg_u64("threads", 2);
    n_req = bench_arg_u64("requests", 20000);
    n_allocs = bench_arg_u64("allocs", 32);
    n_live = bench_arg_u64("live", 2048);
    min_sz = (size_t)bench_arg_u64("min", 16);
    max_sz = (size_t)bench_arg_u64("max", 64 << 10);
    seed = bench_arg_u64("seed", 1);
    bench_args_done();
    if (threads < 1 || threads > 256 || n_req < 1 || n_live < 1 || min_sz < 1 ||
        max_sz < min_sz) {
        fprintf(stderr, "latency: bad arguments\n");
        return 2;
    }
    lat = calloc(threads * n_req, sizeof *lat);
    if (!lat)
        return 1;
    pthread_t tid[256];
    pthread_barrier_init(&start_line, NULL, threads + 1);
    pthread_barrier_init(&end_line, NULL, threads + 1);
    pthread_barrier_init(&release_line, NULL, threads + 1);
    for (unsigned t = 0; t < threads; t++)
        if (pthread_create(&tid[t], NULL, server, (void *)(uintptr_t)t)) {
            perror("pthread_create");
            return 1;
        }
    double t0 = bench_now();
    pthread_barrier_wait(&start_line);
    pthread_barrier_wait(&end_line);
    double secs = bench_now() - t0;
    long rss_work = bench_rss_kb();
    long huge_kb = bench_smaps_kb("AnonHugePages");
    pthread_barrier_wait(&release_line);
    for (unsigned t = 0; t < threads; t++)
        pthread_join(tid[t], NULL);

    uint64_t n = threads * n_req, sum = 0;
    for (uint64_t i = 0; i < n; i++)
        sum += lat[i];
    bench_sort_u64(lat, n);
    bench_result_begin("latency");
    bench_kv_u64("threads", threads);
    bench_kv_u64("ops", n);
    bench_kv_f("secs", secs);
    bench_kv_f("ops_per_sec", (double)n / secs);
    bench_kv_f("mean_ns", (double)sum / (double)n);
    bench_kv_u64("p50_ns", bench_quantile(lat, n, 0.50));
    bench_kv_u64("p99_ns", bench_quantile(lat, n, 0.99));
    bench_kv_u64("p999_ns", bench_quantile(lat, n, 0.999));
    bench_kv_u64("max_ns", lat[n - 1]);
    bench_kv_u64("rss_work_kb", (uint64_t)rss_work);
    bench_kv_u64("anon_huge_kb", (uint64_t)(huge_kb < 0 ? 0 : huge_kb));
    bench_kv_u64("rss_final_kb", (uint64_t)bench_rss_kb());
    bench_result_end();
    return 0;
}
