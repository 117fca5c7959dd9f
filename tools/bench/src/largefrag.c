/* largefrag.c: large allocations on a fragmented heap (the Kudu AllocLarge
 * case). Builds a heap of 2*spans large blocks (min..max bytes, 1-8 MiB),
 * frees every other one in random order so `spans` free holes remain that
 * cannot coalesce, then times `cycles` malloc/free cycles of `size` bytes
 * (1 MiB; with secs=S, cycles is a cap and the phase lasts about S
 * seconds). A good allocator finds a hole in O(log n) and keeps the hot
 * buffer cached: time per cycle must not grow with the number of spans and
 * the steady state must make no system call. The steady phase is framed by
 * XBENCH:STEADY_BEGIN/END markers so an strace log can be cut to it.
 *
 * Blocks are touched on their first and last byte only: the point is the
 * allocator's search, not page faults of 90 GB of blocks. */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    bench_args(argc, argv,
               "largefrag spans=1000 cycles=20000 secs=0 size=1M min=1M max=8M seed=1 "
               "rss_cap_mb=8192");
    uint64_t spans = bench_arg_u64("spans", 1000);
    uint64_t cycles = bench_arg_u64("cycles", 20000);
    size_t size = (size_t)bench_arg_u64("size", 1 << 20);
    size_t lo = (size_t)bench_arg_u64("min", 1 << 20);
    size_t hi = (size_t)bench_arg_u64("max", 8 << 20);
    uint64_t rng = bench_arg_u64("seed", 1);
    double target_secs = bench_arg_f("secs", 0);
    bench_args_done();
    if (spans < 1 || lo < 4096 || hi < lo || size < 2) {
        fprintf(stderr, "largefrag: need spans >= 1, 4096 <= min <= max, size >= 2\n");
        return 2;
    }

    uint64_t nblocks = 2 * spans;
    char **blk = calloc(nblocks, sizeof *blk);
    uint64_t *order = calloc(spans, sizeof *order);
    if (!blk || !order) {
        perror("calloc");
        return 1;
    }
    double t0 = bench_now();
    for (uint64_t i = 0; i < nblocks; i++) {
        size_t n = (size_t)bench_rand_range(&rng, lo / 4096, hi / 4096) * 4096;
        blk[i] = malloc(n);
        if (!blk[i]) {
            fprintf(stderr, "largefrag: malloc(%zu) failed at block %llu\n", n,
                    (unsigned long long)i);
            return 1;
        }
        blk[i][0] = 1;
        blk[i][n - 1] = 1;
        if (i % 64 == 0)
            bench_rss_guard();
    }
    /* Free the odd blocks in a random order (Fisher-Yates): holes between
     * live neighbours, and no address-ordered freeing to help the allocator. */
    for (uint64_t i = 0; i < spans; i++)
        order[i] = 2 * i + 1;
    for (uint64_t i = spans - 1; i > 0; i--) {
        uint64_t j = bench_rand_range(&rng, 0, i);
        uint64_t tmp = order[i];
        order[i] = order[j];
        order[j] = tmp;
    }
    for (uint64_t i = 0; i < spans; i++) {
        free(blk[order[i]]);
        blk[order[i]] = NULL;
    }
    double setup_secs = bench_now() - t0;

    /* Warm-up: lets caches and decay settle, so the steady state is what an
     * operator sees after the first few requests. */
    for (int i = 0; i < 1000; i++) {
        char *p = malloc(size);
        p[0] = 1;
        free(p);
    }
    /* With secs > 0 the phase runs in batches until it has lasted that
     * long (at most `cycles` cycles), so a fast allocator is timed over
     * enough cycles to be stable and a slow one still ends in time. */
    bench_marker("STEADY_BEGIN");
    uint64_t t1 = bench_now_ns(), steady_ns = 0, done = 0;
    uint64_t target_ns = (uint64_t)(target_secs * 1e9);
    while (done < cycles) {
        uint64_t batch = cycles - done < 1000 || !target_ns ? cycles - done : 1000;
        for (uint64_t i = 0; i < batch; i++) {
            char *p = malloc(size);
            if (!p) {
                fprintf(stderr, "largefrag: malloc(%zu) failed\n", size);
                return 1;
            }
            p[0] = (char)i;
            p[size - 1] = (char)i;
            bench_sink(p);
            free(p);
        }
        done += batch;
        steady_ns = bench_now_ns() - t1;
        if (target_ns && steady_ns >= target_ns)
            break;
    }
    bench_marker("STEADY_END");
    cycles = done;
    long rss_work = bench_rss_kb();

    for (uint64_t i = 0; i < nblocks; i++)
        free(blk[i]);
    free(blk);
    free(order);

    bench_result_begin("largefrag");
    bench_kv_u64("spans", spans);
    bench_kv_u64("size", size);
    bench_kv_u64("ops", cycles);
    bench_kv_f("setup_secs", setup_secs);
    bench_kv_f("secs", (double)steady_ns * 1e-9);
    bench_kv_f("ns_per_op", (double)steady_ns / (double)cycles);
    bench_kv_u64("rss_work_kb", (uint64_t)rss_work);
    bench_kv_u64("rss_final_kb", (uint64_t)bench_rss_kb());
    bench_result_end();
    return 0;
}
