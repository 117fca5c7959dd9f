/* memphase.c: RSS at each phase of the memory-return and footprint cases
 * (issues "memory goes back" and "small services").
 *   mode=massfree  `threads` threads allocate `total` bytes of 32 B-256 KiB
 *                  blocks, then each frees a random 90% of the blocks of
 *                  the next thread: RSS right after the last free (no
 *                  sleep, no further allocation), and after `pause_ms` of
 *                  sleep with no allocator call.
 *   mode=idle      one thread: `total` bytes of 64-byte objects, 90% freed
 *                  at random, half as much in 200-byte objects allocated
 *                  and all freed: RSS right after, then after `pause_ms`
 *                  without any allocator call.
 *   mode=service   `threads` threads each keeping a few hundred KiB live in
 *                  small blocks with sparse frees, then parked: RSS and
 *                  AnonHugePages while parked.
 *   mode=handoff   four waves of `threads` short-lived threads; each
 *                  allocates total/(4 threads) bytes of 16 B-4 KiB blocks
 *                  (a tenth 16-64 KiB) through a window of 2048 live ones
 *                  (a request's working set), hands every 32nd block to
 *                  the main thread, frees the rest and exits: RSS right
 *                  after the last wave, and after `pause_ms` with no
 *                  allocator call (the exited threads' pages that only a
 *                  few handed blocks keep).
 * Time is the allocation-and-free phase. Pointer arrays are mmap'ed so
 * they do not go through the allocator under test. */
#include "bench.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static void *map_array(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    return p;
}

/* Runs n threads of fn, with arguments first..first+n-1, to their end. */
static void run_threads(void *(*fn)(void *), uint64_t first, uint64_t n)
{
    pthread_t tid[64];
    for (uint64_t t = 0; t < n; t++)
        pthread_create(&tid[t], NULL, fn, (void *)(uintptr_t)(first + t));
    for (uint64_t t = 0; t < n; t++)
        pthread_join(tid[t], NULL);
}

/* VmRSS now, and after pause_ms with no allocator call. */
static void rss_now_and_idle(uint64_t pause_ms, long *now, long *idle)
{
    *now = bench_status_kb("VmRSS");
    usleep((useconds_t)pause_ms * 1000);
    *idle = bench_status_kb("VmRSS");
}

static char **blk;
static uint32_t *blk_size;
static uint64_t per_thread, nthreads;
static pthread_barrier_t barrier;

static void *massfree_thread(void *arg)
{
    uint64_t t = (uint64_t)(uintptr_t)arg, rng = 0x9e3779b97f4a7c15ULL * (t + 1);
    static const uint32_t big[] = {16384, 24576, 32768, 49152, 65536, 98304, 131072, 262144};
    for (uint64_t i = t * per_thread; i < (t + 1) * per_thread; i++) {
        uint64_t r = bench_rand(&rng);
        uint32_t s = (r & 3) ? (uint32_t)(32 + (r >> 8) % 1000) : big[(r >> 4) % 8];
        blk[i] = malloc(s);
        blk_size[i] = s;
        bench_touch_pages(blk[i], s);
    }
    pthread_barrier_wait(&barrier);
    uint64_t v = (t + 1) % nthreads;
    for (uint64_t i = v * per_thread; i < (v + 1) * per_thread; i++)
        if (bench_rand(&rng) % 10) {
            free(blk[i]);
            blk[i] = NULL;
        }
    return NULL;
}

static void run_massfree(uint64_t total, uint64_t pause_ms)
{
    per_thread = total / 25000 / nthreads;
    blk = map_array(per_thread * nthreads * sizeof *blk);
    blk_size = map_array(per_thread * nthreads * sizeof *blk_size);
    pthread_barrier_init(&barrier, NULL, (unsigned)nthreads);
    double t0 = bench_now();
    run_threads(massfree_thread, 0, nthreads);
    double secs = bench_now() - t0;
    long after, idle;
    rss_now_and_idle(pause_ms, &after, &idle);
    uint64_t live = 0;
    for (uint64_t i = 0; i < per_thread * nthreads; i++)
        live += blk[i] ? blk_size[i] : 0;
    bench_result_begin("memphase");
    bench_kv_str("mode", "massfree");
    bench_kv_f("secs", secs);
    bench_kv_u64("live_kb", live / 1024);
    bench_kv_u64("rss_peak_kb", (uint64_t)bench_status_kb("VmHWM"));
    bench_kv_u64("rss_afterfree_kb", (uint64_t)after);
    bench_kv_u64("rss_idle_kb", (uint64_t)idle);
    bench_result_end();
}

static void run_idle(uint64_t total, uint64_t pause_ms)
{
    uint64_t rng = 12345, n64 = total / 64, n200 = total / 2 / 200;
    char **p = map_array(n64 * sizeof *p), **q = map_array(n200 * sizeof *q);
    double t0 = bench_now();
    for (uint64_t i = 0; i < n64; i++) {
        p[i] = malloc(64);
        p[i][0] = 1;
    }
    for (uint64_t i = 0; i < n64; i++)
        if (bench_rand(&rng) % 10) {
            free(p[i]);
            p[i] = NULL;
        }
    for (uint64_t i = 0; i < n200; i++) {
        q[i] = malloc(200);
        memset(q[i], 1, 200);
    }
    for (uint64_t i = 0; i < n200; i++)
        free(q[i]);
    double secs = bench_now() - t0;
    long after, idle;
    rss_now_and_idle(pause_ms, &after, &idle);
    bench_result_begin("memphase");
    bench_kv_str("mode", "idle");
    bench_kv_f("secs", secs);
    bench_kv_u64("rss_peak_kb", (uint64_t)bench_status_kb("VmHWM"));
    bench_kv_u64("rss_afterfree_kb", (uint64_t)after);
    bench_kv_u64("rss_idle_kb", (uint64_t)idle);
    bench_result_end();
}

static pthread_barrier_t parked, done;

static void *service_thread(void *arg)
{
    uint64_t rng = 7 + (uintptr_t)arg;
    enum { N = 2000 };
    char *keep[N];
    for (int i = 0; i < N; i++) {
        size_t s = 16 + bench_rand(&rng) % 400;
        keep[i] = malloc(s);
        memset(keep[i], 1, s);
        void *tmp[4];
        for (int k = 0; k < 4; k++)
            tmp[k] = malloc(16 + bench_rand(&rng) % 4000);
        for (int k = 0; k < 4; k++)
            free(tmp[k]);
        if (i % 3 == 0) {
            int j = (int)(bench_rand(&rng) % (uint64_t)(i + 1));
            free(keep[j]);
            keep[j] = malloc(16 + bench_rand(&rng) % 400);
        }
    }
    pthread_barrier_wait(&parked);
    pthread_barrier_wait(&done);
    for (int i = 0; i < N; i++)
        free(keep[i]);
    return NULL;
}

static void run_service(uint64_t pause_ms)
{
    pthread_t tid[64];
    pthread_barrier_init(&parked, NULL, (unsigned)nthreads + 1);
    pthread_barrier_init(&done, NULL, (unsigned)nthreads + 1);
    double t0 = bench_now();
    for (uint64_t t = 0; t < nthreads; t++)
        pthread_create(&tid[t], NULL, service_thread, (void *)(uintptr_t)t);
    pthread_barrier_wait(&parked);
    double secs = bench_now() - t0;
    usleep((useconds_t)pause_ms * 1000);
    long rss = bench_status_kb("VmRSS"), huge = bench_smaps_kb("AnonHugePages");
    pthread_barrier_wait(&done);
    for (uint64_t t = 0; t < nthreads; t++)
        pthread_join(tid[t], NULL);
    bench_result_begin("memphase");
    bench_kv_str("mode", "service");
    bench_kv_f("secs", secs);
    bench_kv_u64("rss_parked_kb", (uint64_t)rss);
    bench_kv_u64("anon_huge_kb", (uint64_t)(huge < 0 ? 0 : huge));
    bench_result_end();
}

enum { HANDOFF_WAVES = 4, HANDOFF_EVERY = 32, HANDOFF_WINDOW = 2048 };
static char **handed;
static uint32_t *handed_size;
static uint64_t handoff_bytes, handoff_slots;

static void *handoff_thread(void *arg)
{
    uint64_t t = (uint64_t)(uintptr_t)arg, rng = 0x2545f4914f6cdd1dULL * (t + 1);
    uint64_t made = 0, n = 0, slot = t * handoff_slots;
    char *window[HANDOFF_WINDOW] = {0};
    while (made < handoff_bytes) {
        uint64_t r = bench_rand(&rng);
        size_t s = r % 10 ? bench_rand_logsize(&rng, 16, 4096)
                          : (size_t)16384 + (size_t)(r >> 8) % 49152;
        char *p = malloc(s);
        bench_touch_pages(p, s);
        made += s;
        if (++n % HANDOFF_EVERY == 0 && slot < (t + 1) * handoff_slots) {
            handed[slot] = p;
            handed_size[slot++] = (uint32_t)s;
        } else {
            char **w = &window[n % HANDOFF_WINDOW];
            free(*w);
            *w = p;
        }
    }
    for (int i = 0; i < HANDOFF_WINDOW; i++)
        free(window[i]);
    return NULL;
}

static void run_handoff(uint64_t total, uint64_t pause_ms)
{
    uint64_t nworkers = nthreads * HANDOFF_WAVES;
    handoff_bytes = total / nworkers;
    /* (Blocks average about 4 KiB: room for every 32nd, with margin.) */
    handoff_slots = handoff_bytes / 512 / HANDOFF_EVERY + 16;
    handed = map_array(nworkers * handoff_slots * sizeof *handed);
    handed_size = map_array(nworkers * handoff_slots * sizeof *handed_size);
    double t0 = bench_now();
    for (uint64_t w = 0; w < HANDOFF_WAVES; w++)
        run_threads(handoff_thread, w * nthreads, nthreads);
    double secs = bench_now() - t0;
    long after, idle;
    rss_now_and_idle(pause_ms, &after, &idle);
    uint64_t live = 0, blocks = 0;
    for (uint64_t i = 0; i < nworkers * handoff_slots; i++)
        if (handed[i]) {
            live += handed_size[i];
            blocks++;
        }
    bench_result_begin("memphase");
    bench_kv_str("mode", "handoff");
    bench_kv_f("secs", secs);
    bench_kv_u64("live_kb", live / 1024);
    bench_kv_u64("live_blocks", blocks);
    bench_kv_u64("rss_peak_kb", (uint64_t)bench_status_kb("VmHWM"));
    bench_kv_u64("rss_afterexit_kb", (uint64_t)after);
    bench_kv_u64("rss_idle_kb", (uint64_t)idle);
    bench_result_end();
}

int main(int argc, char **argv)
{
    bench_args(argc, argv, "memphase mode=massfree threads=8 total=384M pause_ms=1500");
    const char *mode = bench_arg_str("mode", "massfree");
    nthreads = bench_arg_u64("threads", 8);
    uint64_t total = bench_arg_u64("total", 384u << 20);
    uint64_t pause_ms = bench_arg_u64("pause_ms", 1500);
    bench_args_done();
    if (nthreads < 1 || nthreads > 64) {
        fprintf(stderr, "memphase: threads must be 1..64\n");
        return 2;
    }
    if (!strcmp(mode, "massfree"))
        run_massfree(total, pause_ms);
    else if (!strcmp(mode, "idle"))
        run_idle(total, pause_ms);
    else if (!strcmp(mode, "service"))
        run_service(pause_ms);
    else if (!strcmp(mode, "handoff"))
        run_handoff(total, pause_ms);
    else {
        fprintf(stderr, "memphase: mode is massfree, idle, service or handoff\n");
        return 2;
    }
    return 0;
}
