/* tests/integration/probe_thread_exit.c: memory that outlives the thread
 * that allocated it. (1) A thread exits with blocks still allocated; a
 * thread created later verifies and frees them. (2) Many rounds of "a thread
 * allocates 64 MiB in mixed sizes, exits, main frees it": memory freed after
 * its owner exited must be reused, so RSS stays flat instead of growing by
 * 64 MiB a round. Exit 0 on success. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr, RTLD_DEFAULT */
#endif
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xt.h"

struct batch {
    void **ps;
    size_t *sizes;
    size_t n;
    uint64_t seed;
    const char *error;
};

/* Allocates about `bytes` in mixed sizes: many small blocks (so that slabs
 * are left behind by the exiting thread), some medium and large ones. */
static void *alloc_batch(void *arg)
{
    struct batch *b = arg;
    size_t total = 0, cap = 1 << 18;
    uint64_t rng = b->seed;
    b->ps = malloc(cap * sizeof *b->ps);
    b->sizes = malloc(cap * sizeof *b->sizes);
    b->n = 0;
    if (b->ps == NULL || b->sizes == NULL) {
        b->error = "malloc of the index failed";
        return NULL;
    }
    while (total < (64 << 20) && b->n < cap) {
        uint64_t r = xt_rand(&rng) % 100;
        size_t sz = r < 80 ? xt_rand_range(&rng, 16, 512)
                    : r < 98 ? xt_rand_range(&rng, 513, 64 << 10)
                             : xt_rand_range(&rng, 256 << 10, 2 << 20);
        void *p = malloc(sz);
        if (p == NULL) {
            b->error = "malloc failed";
            return NULL;
        }
        memset(p, 0x5a, sz); /* resident, so a leak shows in RSS */
        xt_fill(p, sz < 32 ? sz : 32, b->seed + b->n);
        b->ps[b->n] = p;
        b->sizes[b->n] = sz;
        b->n++;
        total += sz;
    }
    return NULL;
}

static const char *free_batch(struct batch *b)
{
    for (size_t i = 0; i < b->n; i++) {
        size_t n = b->sizes[i] < 32 ? b->sizes[i] : 32;
        if (xt_verify(b->ps[i], n, b->seed + i) != n)
            return "block of an exited thread corrupted";
        free(b->ps[i]);
    }
    free(b->ps);
    free(b->sizes);
    return NULL;
}

static void *free_in_thread(void *arg)
{
    struct batch *b = arg;
    b->error = free_batch(b);
    return NULL;
}

int main(int argc, char **argv)
{
    xt_require_allocator(argv[0]);
    pthread_t t;

    /* (1) allocated by an exited thread, freed by a later thread. */
    struct batch b1 = {.seed = 1};
    if (pthread_create(&t, NULL, alloc_batch, &b1) != 0)
        return 3;
    pthread_join(t, NULL);
    if (b1.error != NULL) {
        fprintf(stderr, "allocating thread: %s\n", b1.error);
        return 1;
    }
    if (pthread_create(&t, NULL, free_in_thread, &b1) != 0)
        return 3;
    pthread_join(t, NULL);
    if (b1.error != NULL) {
        fprintf(stderr, "freeing thread: %s\n", b1.error);
        return 1;
    }

    /* (2) rounds; RSS measured while the round's 64 MiB are live. */
    enum { ROUNDS = 32, WARMUP = 4 };
    size_t rss[ROUNDS], warm_max = 0, late_max = 0;
    for (int r = 0; r < ROUNDS; r++) {
        struct batch b = {.seed = 100 + (uint64_t)r};
        if (pthread_create(&t, NULL, alloc_batch, &b) != 0)
            return 3;
        pthread_join(t, NULL);
        if (b.error != NULL) {
            fprintf(stderr, "round %d: %s\n", r, b.error);
            return 1;
        }
        rss[r] = xt_rss();
        const char *e = free_batch(&b);
        if (e != NULL) {
            fprintf(stderr, "round %d: %s\n", r, e);
            return 1;
        }
        if (r < WARMUP)
            warm_max = rss[r] > warm_max ? rss[r] : warm_max;
        else
            late_max = rss[r] > late_max ? rss[r] : late_max;
    }
    printf("peak RSS first %d rounds %zu MiB, rounds %d..%d %zu MiB\n", WARMUP,
           warm_max >> 20, WARMUP, ROUNDS - 1, late_max >> 20);
    /* A leak of the exited threads' memory would add ~64 MiB per round
     * (over 1 GiB by the end); allow one extra round's worth of slack. */
    if (late_max > warm_max + (96 << 20)) {
        fprintf(stderr, "RSS grows across rounds: %zu MiB early, %zu MiB late:", warm_max >> 20,
                late_max >> 20);
        for (int r = 0; r < ROUNDS; r++)
            fprintf(stderr, " %zu", rss[r] >> 20);
        fprintf(stderr, "\n");
        return 1;
    }
    return 0;
}
