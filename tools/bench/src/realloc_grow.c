/* realloc_grow.c: the string-builder pattern. `builders` strings are grown
 * side by side (so none sits alone at the top of the heap) by appending
 * 1..`append` bytes at a time, each append a realloc to the exact new
 * length, until each reaches `target` bytes; then they are freed and the
 * next of `rounds` rounds starts. Allocators with coarse size classes, or
 * that grow in place or with mremap, avoid most of the copying. */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    bench_args(argc, argv, "realloc_grow builders=8 target=256k append=128 rounds=10 seed=1");
    uint64_t builders = bench_arg_u64("builders", 8);
    size_t target = (size_t)bench_arg_u64("target", 256 << 10);
    size_t append = (size_t)bench_arg_u64("append", 128);
    uint64_t rounds = bench_arg_u64("rounds", 10);
    uint64_t rng = bench_arg_u64("seed", 1);
    bench_args_done();
    if (builders < 1 || builders > 1024 || append < 1 || target < 1) {
        fprintf(stderr, "realloc_grow: bad arguments\n");
        return 2;
    }
    char *s[1024];
    size_t len[1024];
    uint64_t reallocs = 0, check = 0;
    double t0 = bench_now();
    for (uint64_t r = 0; r < rounds; r++) {
        for (uint64_t b = 0; b < builders; b++) {
            s[b] = NULL;
            len[b] = 0;
        }
        for (uint64_t live = builders; live > 0;) {
            live = 0;
            for (uint64_t b = 0; b < builders; b++) {
                if (len[b] >= target)
                    continue;
                size_t add = (size_t)bench_rand_range(&rng, 1, append);
                char *p = realloc(s[b], len[b] + add + 1);
                if (!p) {
                    fprintf(stderr, "realloc_grow: realloc failed\n");
                    return 1;
                }
                memset(p + len[b], 'a' + (int)(b % 26), add);
                len[b] += add;
                p[len[b]] = '\0';
                s[b] = p;
                reallocs++;
                live += len[b] < target;
            }
        }
        for (uint64_t b = 0; b < builders; b++) {
            /* The content must have survived every move. */
            check += s[b][0] == 'a' + (int)(b % 26) && s[b][len[b] - 1] == s[b][0];
            free(s[b]);
        }
    }
    double secs = bench_now() - t0;
    if (check != rounds * builders) {
        fprintf(stderr, "realloc_grow: content lost in realloc\n");
        return 1;
    }
    bench_result_begin("realloc-grow");
    bench_kv_u64("ops", reallocs);
    bench_kv_f("secs", secs);
    bench_kv_f("ops_per_sec", (double)reallocs / secs);
    bench_kv_f("ns_per_op", secs * 1e9 / (double)reallocs);
    bench_result_end();
    return 0;
}
