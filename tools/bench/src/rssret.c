/* rssret.c: does freed memory go back, and can it be reused by another size
 * class? Allocates `total` bytes (1 GiB) of `small`-byte objects, frees a
 * random `free_pct`% of them, allocates the freed volume again in objects of
 * another class (`other` bytes), then sleeps `pause_ms` so that time-based
 * purging (decay, background threads) can act. RSS is read at each step:
 *   rss_peak_kb (VmHWM), rss_afterfree_kb, rss_realloc_kb, rss_idle_kb,
 *   and rss_final_kb after freeing everything.
 * The pointer arrays are mmap'ed directly so they do not go through the
 * allocator under test; they add the same ~total/small*8 bytes to every
 * allocator's RSS. */
#include "bench.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

static void *map_array(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    return p;
}

int main(int argc, char **argv)
{
    bench_args(argc, argv,
               "rssret total=1G small=64 other=256 free_pct=90 pause_ms=2000 seed=1");
    uint64_t total = bench_arg_u64("total", 1ULL << 30);
    size_t small = (size_t)bench_arg_u64("small", 64);
    size_t other = (size_t)bench_arg_u64("other", 256);
    uint64_t free_pct = bench_arg_u64("free_pct", 90);
    uint64_t pause_ms = bench_arg_u64("pause_ms", 2000);
    uint64_t rng = bench_arg_u64("seed", 1);
    bench_args_done();
    if (small < 8 || other < 8 || free_pct > 100 || total < small) {
        fprintf(stderr, "rssret: bad arguments\n");
        return 2;
    }
    uint64_t n = total / small;
    char **a = map_array(n * sizeof *a);

    double t0 = bench_now();
    for (uint64_t i = 0; i < n; i++) {
        a[i] = malloc(small);
        if (!a[i]) {
            fprintf(stderr, "rssret: malloc failed\n");
            return 1;
        }
        *(uint64_t *)a[i] = i; /* resident, and checked below */
    }
    long rss_full = bench_rss_kb();

    /* A random subset: each object is freed with probability free_pct%. */
    uint64_t freed = 0;
    for (uint64_t i = 0; i < n; i++) {
        if (bench_rand(&rng) % 100 < free_pct) {
            free(a[i]);
            a[i] = NULL;
            freed++;
        }
    }
    long rss_afterfree = bench_rss_kb();

    uint64_t m = freed * small / other;
    char **b = map_array((m ? m : 1) * sizeof *b);
    for (uint64_t i = 0; i < m; i++) {
        b[i] = malloc(other);
        if (!b[i]) {
            fprintf(stderr, "rssret: malloc failed\n");
            return 1;
        }
        b[i][0] = 1;
        b[i][other - 1] = 1;
    }
    long rss_realloc = bench_rss_kb();
    double secs = bench_now() - t0;

    struct timespec ts = {(time_t)(pause_ms / 1000), (long)(pause_ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
    long rss_idle = bench_rss_kb();

    uint64_t bad = 0;
    for (uint64_t i = 0; i < n; i++) {
        if (a[i]) {
            bad += *(uint64_t *)a[i] != i;
            free(a[i]);
        }
    }
    for (uint64_t i = 0; i < m; i++)
        free(b[i]);
    if (bad) {
        fprintf(stderr, "rssret: %llu objects corrupted\n", (unsigned long long)bad);
        return 1;
    }
    bench_result_begin("rssret");
    bench_kv_u64("ops", n + freed + m);
    bench_kv_f("secs", secs);
    bench_kv_u64("rss_full_kb", (uint64_t)rss_full);
    bench_kv_u64("rss_afterfree_kb", (uint64_t)rss_afterfree);
    bench_kv_u64("rss_realloc_kb", (uint64_t)rss_realloc);
    bench_kv_u64("rss_idle_kb", (uint64_t)rss_idle);
    bench_kv_u64("rss_final_kb", (uint64_t)bench_rss_kb());
    bench_kv_u64("pause_ms", pause_ms);
    bench_result_end();
    return 0;
}
