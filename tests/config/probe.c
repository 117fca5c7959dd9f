/* probe.c: a small program run under LD_PRELOAD=libxalloc.so.1 by
 * tests/config/run.sh to observe configuration options from outside. It
 * does not link xalloc: the xalloc_* entry points are found with dlsym, so
 * the same binary also runs without the library (baseline output).
 *   probe                 allocate a little, print a fixed line
 *   probe get NAME...     print NAME=VALUE (SOURCE) via xalloc_config_get
 *   probe set KEY:VALUE   call xalloc_config_set, print rc, msg, new value
 *   probe arenas THREADS  run THREADS allocating threads, then print the
 *                         number of arenas from xalloc_stats_get */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"
#include "xalloc_stats.h"

typedef int (*get_fn)(const char *, char *, size_t, const char **);
typedef int (*set_fn)(const char *, char *, size_t);
typedef int (*stats_fn)(struct xalloc_stats *);

static void *sym(const char *name)
{
    void *p = dlsym(RTLD_DEFAULT, name);
    if (!p) {
        printf("%s: not exported\n", name);
        exit(3);
    }
    return p;
}

static pthread_barrier_t all_allocated;

static void *worker(void *arg)
{
    void *blocks[64];
    for (int i = 0; i < 64; i++)
        blocks[i] = malloc(16 + (size_t)i * 40);
    /* Stay alive holding memory until every thread has its arena. */
    pthread_barrier_wait(&all_allocated);
    pthread_barrier_wait(&all_allocated);
    for (int i = 0; i < 64; i++)
        free(blocks[i]);
    return arg;
}

static int arenas(int threads)
{
    stats_fn get = (stats_fn)sym("xalloc_stats_get");
    pthread_t t[64];
    if (threads > 64)
        threads = 64;
    pthread_barrier_init(&all_allocated, NULL, (unsigned)threads + 1);
    for (int i = 0; i < threads; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    pthread_barrier_wait(&all_allocated);
    struct xalloc_stats *st = calloc(1, sizeof *st);
    int rc = get(st);
    pthread_barrier_wait(&all_allocated);
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    if (rc != 0) {
        printf("xalloc_stats_get failed\n");
        return 1;
    }
    printf("narenas=%llu\n", (unsigned long long)st->narenas);
    free(st);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "get") == 0) {
        get_fn get = (get_fn)sym("xalloc_config_get");
        for (int i = 2; i < argc; i++) {
            char v[300];
            const char *src = "?";
            if (get(argv[i], v, sizeof v, &src) != 0)
                printf("%s: unknown\n", argv[i]);
            else
                printf("%s=%s (%s)\n", argv[i], v, src);
        }
        return 0;
    }
    if (argc == 3 && strcmp(argv[1], "set") == 0) {
        set_fn set = (set_fn)sym("xalloc_config_set");
        char msg[512];
        int rc = set(argv[2], msg, sizeof msg);
        printf("rc=%d msg=%s\n", rc, msg);
        return 0;
    }
    if (argc == 3 && strcmp(argv[1], "arenas") == 0)
        return arenas(atoi(argv[2]));
    /* Default: some ordinary allocation work and a fixed output. */
    size_t total = 0;
    for (int i = 1; i <= 1000; i++) {
        char *p = malloc((size_t)i);
        memset(p, 'x', (size_t)i);
        char *q = calloc(1, 8);
        memcpy(q, p, (size_t)(i < 7 ? i : 7));
        total += strlen(q);
        free(q);
        p = realloc(p, (size_t)i * 3);
        free(p);
    }
    printf("probe: done, %zu bytes copied\n", total);
    return 0;
}
