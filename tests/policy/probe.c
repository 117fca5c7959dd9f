/* probe.c: page-policy probe run under LD_PRELOAD by tests/policy/run.sh.
 * Modes (argv[1]):
 *   thp         allocate a 64 MiB heap, print AnonHugePages (kB) of the
 *               allocator's mappings
 *   rss         allocate 1 GiB of 16-256 KiB blocks, free 90% in random
 *               order, print live bytes and VmRSS at peak, right after, after
 *               decay_ms (with allocation activity), after malloc_trim(0)
 *   exited      a thread allocates 256 MiB and exits; main frees it all;
 *               print VmRSS before and after decay
 * Output lines are "key value" pairs the script checks. */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proc.h"

static uint64_t rng = 88172645463325252ULL;
static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void activity(void)
{
    /* A burst of allocations: the allocator's upkeep runs on slow paths. */
    for (int r = 0; r < 200; r++) {
        void *p[64];
        for (int i = 0; i < 64; i++)
            p[i] = malloc(16 + (size_t)(next_rand() % 4096));
        for (int i = 0; i < 64; i++)
            free(p[i]);
    }
}

static int mode_thp(void)
{
    enum { N = 64 };
    char *blocks[N];
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (int i = 0; i < N; i++) {
        blocks[i] = malloc(1 << 20);
        memset(blocks[i], 1, 1 << 20);
        uintptr_t a = (uintptr_t)blocks[i];
        lo = a < lo ? a : lo;
        hi = a + (1 << 20) > hi ? a + (1 << 20) : hi;
    }
    printf("anon_huge_kb %ld\n", anon_huge_kb_in(lo, hi));
    for (int i = 0; i < N; i++)
        free(blocks[i]);
    return 0;
}

static int mode_rss(long decay_ms)
{
    static const size_t sizes[] = {16384, 20480, 32768, 49152, 65536, 131072, 196608, 262144};
    size_t target = (size_t)1 << 30, total = 0, n = 0;
    size_t cap = target / 16384 + 16;
    char **p = malloc(cap * sizeof *p);
    size_t *sz = malloc(cap * sizeof *sz);
    while (total < target) {
        size_t s = sizes[next_rand() % (sizeof sizes / sizeof sizes[0])];
        p[n] = malloc(s);
        memset(p[n], 0x5a, s);
        sz[n] = s;
        total += s;
        n++;
    }
    long peak = status_kb("VmRSS");
    /* Free 90% in random order: shuffle, free the first 90%. */
    for (size_t i = n - 1; i > 0; i--) {
        size_t j = next_rand() % (i + 1);
        char *tp = p[i];
        p[i] = p[j];
        p[j] = tp;
        size_t ts = sz[i];
        sz[i] = sz[j];
        sz[j] = ts;
    }
    size_t nfree = n * 9 / 10, live = 0;
    for (size_t i = 0; i < nfree; i++)
        free(p[i]);
    for (size_t i = nfree; i < n; i++)
        live += sz[i];
    long after = status_kb("VmRSS");
    usleep((useconds_t)(decay_ms + 300) * 1000);
    activity();
    usleep(300 * 1000);
    activity();
    long decayed = status_kb("VmRSS");
    malloc_trim(0);
    long trimmed = status_kb("VmRSS");
    printf("live_kb %zu\npeak_kb %ld\nafter_kb %ld\ndecayed_kb %ld\ntrimmed_kb %ld\n",
           live / 1024, peak, after, decayed, trimmed);
    for (size_t i = nfree; i < n; i++) {
        for (size_t k = 0; k < sz[i]; k += 4096)
            if (p[i][k] != 0x5a) {
                printf("corrupt block %zu\n", i);
                return 1;
            }
        free(p[i]);
    }
    free(p);
    free(sz);
    return 0;
}

static void **shared;
enum { EXITED_N = 256 * 16 };

static void *allocate_and_exit(void *arg)
{
    (void)arg;
    for (int i = 0; i < EXITED_N; i++) {
        shared[i] = malloc(65536 - 64);
        memset(shared[i], 7, 65536 - 64);
    }
    return NULL;
}

static int mode_exited(long decay_ms)
{
    shared = calloc(EXITED_N, sizeof *shared);
    pthread_t t;
    pthread_create(&t, NULL, allocate_and_exit, NULL);
    pthread_join(t, NULL);
    long before = status_kb("VmRSS");
    for (int i = 0; i < EXITED_N; i++)
        free(shared[i]);
    usleep((useconds_t)(decay_ms + 300) * 1000);
    activity();
    usleep(300 * 1000);
    activity();
    long after = status_kb("VmRSS");
    /* The freed memory is reused: allocating the same again stays put. */
    for (int i = 0; i < EXITED_N; i++) {
        shared[i] = malloc(65536 - 64);
        memset(shared[i], 7, 65536 - 64);
    }
    long reused = status_kb("VmRSS");
    printf("held_kb %ld\nafter_kb %ld\nreused_kb %ld\n", before, after, reused);
    return 0;
}

int main(int argc, char **argv)
{
    long decay_ms = argc > 2 ? atol(argv[2]) : 1000;
    if (argc > 1 && strcmp(argv[1], "thp") == 0)
        return mode_thp();
    if (argc > 1 && strcmp(argv[1], "rss") == 0)
        return mode_rss(decay_ms);
    if (argc > 1 && strcmp(argv[1], "exited") == 0)
        return mode_exited(decay_ms);
    fprintf(stderr, "usage: probe thp|rss|exited [decay_ms]\n");
    return 2;
}
