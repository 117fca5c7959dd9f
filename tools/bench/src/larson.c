/* larson.c: Larson-style server simulation. Each of `threads` lanes holds
 * `slots` live blocks (min..max bytes). A thread replaces random blocks
 * `ops` times (free one, allocate another of a random size), then starts a
 * successor thread that inherits its lane and exits, `rounds` times per
 * lane. Blocks are therefore freed by threads other than the ones that
 * allocated them, and threads come and go like connection handlers.
 * Measured: total replacements / time, peak RSS, RSS after freeing all. */
#include "bench.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

struct lane {
    char **slot;
    uint64_t rng;
    uint64_t rounds_left;
} BENCH_OWN_LINE;

static uint64_t n_slots, ops_per_round;
static size_t min_sz, max_sz;
static pthread_mutex_t done_m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t done_c = PTHREAD_COND_INITIALIZER;
static unsigned lanes_done;

static char *alloc_block(uint64_t *rng)
{
    size_t n = (size_t)bench_rand_range(rng, min_sz, max_sz);
    char *p = malloc(n);
    if (!p) {
        fprintf(stderr, "larson: malloc(%zu) failed\n", n);
        exit(1);
    }
    p[0] = 1;
    p[n - 1] = 1;
    return p;
}

static void *lane_thread(void *arg)
{
    struct lane *l = arg;
    for (uint64_t i = 0; i < ops_per_round; i++) {
        uint64_t k = bench_rand_range(&l->rng, 0, n_slots - 1);
        free(l->slot[k]);
        l->slot[k] = alloc_block(&l->rng);
    }
    if (--l->rounds_left > 0) {
        /* Hand the lane to a fresh thread: its blocks now belong to a thread
         * that did not allocate them. */
        pthread_t next;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&next, &attr, lane_thread, l) != 0) {
            perror("pthread_create");
            exit(1);
        }
        pthread_attr_destroy(&attr);
        return NULL;
    }
    pthread_mutex_lock(&done_m);
    lanes_done++;
    pthread_cond_signal(&done_c);
    pthread_mutex_unlock(&done_m);
    return NULL;
}

int main(int argc, char **argv)
{
    bench_args(argc, argv,
               "larson threads=2 slots=1000 ops=20000 rounds=20 min=16 max=1024 seed=1");
    unsigned threads = (unsigned)bench_arg_u64("threads", 2);
    n_slots = bench_arg_u64("slots", 1000);
    ops_per_round = bench_arg_u64("ops", 20000);
    uint64_t rounds = bench_arg_u64("rounds", 20);
    min_sz = (size_t)bench_arg_u64("min", 16);
    max_sz = (size_t)bench_arg_u64("max", 1024);
    uint64_t seed = bench_arg_u64("seed", 1);
    bench_args_done();
    if (threads < 1 || threads > 256 || n_slots < 1 || rounds < 1 || min_sz < 2 ||
        max_sz < min_sz) {
        fprintf(stderr, "larson: bad arguments\n");
        return 2;
    }

    struct lane *lanes = bench_calloc_lines(threads, sizeof *lanes);
    /* The main thread fills every lane, so the first round frees foreign blocks. */
    for (unsigned t = 0; t < threads; t++) {
        lanes[t].rng = seed * 1000003u + t;
        lanes[t].rounds_left = rounds;
        lanes[t].slot = malloc(n_slots * sizeof(char *));
        if (!lanes[t].slot)
            return 1;
        for (uint64_t k = 0; k < n_slots; k++)
            lanes[t].slot[k] = alloc_block(&lanes[t].rng);
    }

    double t0 = bench_now();
    for (unsigned t = 0; t < threads; t++) {
        pthread_t tid;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&tid, &attr, lane_thread, &lanes[t]) != 0) {
            perror("pthread_create");
            return 1;
        }
        pthread_attr_destroy(&attr);
    }
    pthread_mutex_lock(&done_m);
    while (lanes_done < threads)
        pthread_cond_wait(&done_c, &done_m);
    pthread_mutex_unlock(&done_m);
    double secs = bench_now() - t0;
    long rss_work = bench_rss_kb();

    for (unsigned t = 0; t < threads; t++) {
        for (uint64_t k = 0; k < n_slots; k++)
            free(lanes[t].slot[k]);
        free(lanes[t].slot);
    }
    free(lanes);

    uint64_t ops = (uint64_t)threads * rounds * ops_per_round;
    bench_result_begin("larson");
    bench_kv_u64("threads", threads);
    bench_kv_u64("ops", ops);
    bench_kv_f("secs", secs);
    bench_kv_f("ops_per_sec", (double)ops / secs);
    bench_kv_u64("rss_work_kb", (uint64_t)rss_work);
    bench_kv_u64("rss_final_kb", (uint64_t)bench_rss_kb());
    bench_result_end();
    return 0;
}
