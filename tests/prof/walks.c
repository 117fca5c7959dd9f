/* walks.c: the two stack walks of the profiler (run.sh walks).
 *
 *   walks light N   N threads each allocate 4 MiB in 2 KiB blocks from
 *                   light_site() (about 8 samples a thread at the default
 *                   distance) and wait, all alive, while the main thread
 *                   prints RESULT rss_kb=N anon_kb=N. A thread that samples
 *                   this little walks step by step and never builds
 *                   libunwind's 256 KiB per-thread cache.
 *   walks switch    the main thread allocates 8,192 blocks of 64 KiB from
 *                   heavy_site(), keeping one in four; at prof_sample:64k
 *                   nearly each is sampled, so the thread starts with the
 *                   step-by-step walk and moves to the cached one. Both must
 *                   give the same stack: the final dump then holds one
 *                   stack through heavy_site, not two. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proc_kb.h"

static pthread_barrier_t barrier;

void *light_site(size_t size);
__attribute__((noinline)) void *light_site(size_t size)
{
    void *p = malloc(size);
    __asm__ volatile("" : : "r"(p) : "memory"); /* no tail call */
    return p;
}

static void *light_thread(void *arg)
{
    (void)arg;
    for (int i = 0; i < 2048; i++) {
        char *volatile p = light_site(2048);
        if (!p)
            exit(1);
        memset(p, 1, 64);
        free(p);
    }
    pthread_barrier_wait(&barrier); /* done allocating */
    pthread_barrier_wait(&barrier); /* main has measured */
    return NULL;
}

static int light(int threads)
{
    pthread_t tid[256];
    if (threads < 1 || threads > 256)
        return 2;
    pthread_barrier_init(&barrier, NULL, (unsigned)threads + 1);
    for (int i = 0; i < threads; i++)
        if (pthread_create(&tid[i], NULL, light_thread, NULL) != 0)
            return 1;
    pthread_barrier_wait(&barrier);
    printf("RESULT rss_kb=%ld anon_kb=%ld\n", field_kb("/proc/self/smaps_rollup", "Rss"),
           field_kb("/proc/self/smaps_rollup", "Anonymous"));
    fflush(stdout);
    pthread_barrier_wait(&barrier);
    for (int i = 0; i < threads; i++)
        pthread_join(tid[i], NULL);
    return 0;
}

#define SWITCH_BLOCKS 8192
static void *kept[SWITCH_BLOCKS / 4];

void *heavy_site(size_t size);
__attribute__((noinline)) void *heavy_site(size_t size)
{
    void *p = malloc(size);
    __asm__ volatile("" : : "r"(p) : "memory");
    return p;
}

static int walk_switch(void)
{
    size_t nkept = 0;
    for (int i = 0; i < SWITCH_BLOCKS; i++) {
        char *p = heavy_site(65536);
        if (!p)
            return 1;
        p[0] = 1;
        if (i % 4 == 0)
            kept[nkept++] = p;
        else
            free(p);
    }
    printf("RESULT kept=%zu\n", nkept);
    /* The blocks stay live until exit: the final dump shows them. */
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 3 && !strcmp(argv[1], "light"))
        return light(atoi(argv[2]));
    if (argc >= 2 && !strcmp(argv[1], "switch"))
        return walk_switch();
    fprintf(stderr, "usage: walks light N | walks switch\n");
    return 2;
}
