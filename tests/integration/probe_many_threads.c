/* tests/integration/probe_many_threads.c: 10,000 short-lived threads, in
 * batches. Each allocates a few blocks of mixed sizes, frees some and leaves
 * the rest for main to verify and free after it has exited: thread heaps
 * must be torn down and their pages adopted, not leaked. Exit 0 on success. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr, RTLD_DEFAULT */
#endif
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xt.h"

enum { TOTAL = 10000, BATCH = 100, KEEP = 4, MADE = 8 };

struct slot {
    size_t id;
    void *left[KEEP];
    size_t size[KEEP];
    int error;
};

static void *work(void *arg)
{
    struct slot *s = arg;
    uint64_t rng = s->id;
    void *ps[MADE];
    size_t sz[MADE];
    for (int i = 0; i < MADE; i++) {
        uint64_t r = xt_rand(&rng) % 100;
        sz[i] = r < 85 ? xt_rand_range(&rng, 1, 1024)
                : r < 99 ? xt_rand_range(&rng, 1025, 100000)
                         : xt_rand_range(&rng, 1 << 20, 2 << 20);
        ps[i] = malloc(sz[i]);
        if (ps[i] == NULL) {
            s->error = 1;
            return NULL;
        }
        xt_fill(ps[i], sz[i], s->id * 16 + (uint64_t)i);
    }
    for (int i = 0; i < MADE; i++) {
        if (i < KEEP) {
            s->left[i] = ps[i];
            s->size[i] = sz[i];
        } else {
            if (xt_verify(ps[i], sz[i], s->id * 16 + (uint64_t)i) != sz[i])
                s->error = 2;
            free(ps[i]);
        }
    }
    return NULL;
}

int main(int argc, char **argv)
{
    xt_require_allocator(argv[0]);
    static struct slot slots[BATCH];
    pthread_t th[BATCH];
    size_t rss_first = 0;
    double t0 = xt_now();
    for (size_t done = 0; done < TOTAL; done += BATCH) {
        for (size_t i = 0; i < BATCH; i++) {
            memset(&slots[i], 0, sizeof slots[i]);
            slots[i].id = done + i;
            if (pthread_create(&th[i], NULL, work, &slots[i]) != 0) {
                fprintf(stderr, "pthread_create failed at thread %zu\n", done + i);
                return 3;
            }
        }
        for (size_t i = 0; i < BATCH; i++)
            pthread_join(th[i], NULL);
        for (size_t i = 0; i < BATCH; i++) {
            if (slots[i].error != 0) {
                fprintf(stderr, "thread %zu: error %d\n", slots[i].id, slots[i].error);
                return 1;
            }
            for (int k = 0; k < KEEP; k++) {
                if (xt_verify(slots[i].left[k], slots[i].size[k], slots[i].id * 16 + (uint64_t)k) !=
                    slots[i].size[k]) {
                    fprintf(stderr, "thread %zu: block %d corrupted after the thread exited\n",
                            slots[i].id, k);
                    return 1;
                }
                free(slots[i].left[k]);
            }
        }
        if (done == 10 * BATCH)
            rss_first = xt_rss();
        if (xt_now() - t0 > 240) {
            fprintf(stderr, "only %zu threads in 240 s\n", done);
            return 1;
        }
    }
    size_t rss_end = xt_rss();
    printf("%d threads in %.1f s; RSS after 1000 threads %zu MiB, at the end %zu MiB\n", TOTAL,
           xt_now() - t0, rss_first >> 20, rss_end >> 20);
    /* Nothing is live at the end of a batch: 9000 more threads must not
     * leave their heaps' memory behind. */
    if (rss_end > rss_first + (128 << 20)) {
        fprintf(stderr, "RSS grew from %zu to %zu MiB over 9000 threads\n", rss_first >> 20,
                rss_end >> 20);
        return 1;
    }
    return 0;
}
