/* tests/integration/probe_first_in_thread.c: a thread's first allocation.
 * Eight threads, released together by a barrier, make their first calls to
 * every entry point at once (no allocation in main before they start, so the
 * allocator may also be initialised here). Exit 0 on success. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr, RTLD_DEFAULT */
#endif
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xt.h"

enum { NTHREADS = 8 };
static pthread_barrier_t start;
static const char *thread_error[NTHREADS];

static void *first(void *arg)
{
    size_t id = (size_t)arg;
    pthread_barrier_wait(&start);
    /* The first call of this thread is chosen by its id. */
    void *p = NULL;
    switch (id % 4) {
    case 0:
        p = malloc(24);
        break;
    case 1:
        p = calloc(3, 100);
        break;
    case 2:
        p = realloc(NULL, 5000);
        break;
    default:
        if (posix_memalign(&p, 4096, 64) != 0)
            p = NULL;
        break;
    }
    if (p == NULL) {
        thread_error[id] = "first call returned NULL";
        return NULL;
    }
    free(p);
    uint64_t rng = id;
    void *keep[200];
    for (int i = 0; i < 200; i++) {
        size_t sz = xt_rand_range(&rng, 1, i % 50 == 0 ? 2 << 20 : 2048);
        keep[i] = malloc(sz);
        if (keep[i] == NULL) {
            thread_error[id] = "malloc failed";
            return NULL;
        }
        xt_fill(keep[i], sz < 64 ? sz : 64, id * 1000 + (uint64_t)i);
        if (malloc_usable_size(keep[i]) < sz) {
            thread_error[id] = "usable size below request";
            return NULL;
        }
    }
    rng = id;
    for (int i = 0; i < 200; i++) {
        size_t sz = xt_rand_range(&rng, 1, i % 50 == 0 ? 2 << 20 : 2048);
        size_t n = sz < 64 ? sz : 64;
        if (xt_verify(keep[i], n, id * 1000 + (uint64_t)i) != n) {
            thread_error[id] = "block corrupted";
            return NULL;
        }
        free(keep[i]);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    pthread_t th[NTHREADS];
    pthread_barrier_init(&start, NULL, NTHREADS);
    for (size_t i = 0; i < NTHREADS; i++)
        if (pthread_create(&th[i], NULL, first, (void *)i) != 0)
            return 3;
    for (size_t i = 0; i < NTHREADS; i++)
        pthread_join(th[i], NULL);
    int bad = 0;
    for (size_t i = 0; i < NTHREADS; i++) {
        if (thread_error[i] != NULL) {
            fprintf(stderr, "thread %zu: %s\n", i, thread_error[i]);
            bad = 1;
        }
    }
    xt_require_allocator(argv[0]);
    return bad;
}
