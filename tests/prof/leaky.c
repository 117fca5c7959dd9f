/* leaky.c: leaks about 16 MiB from leak_site and frees everything
 * freed_site allocated, for the prof_leak test. Also exercises every
 * allocating entry point (calloc, realloc, posix_memalign, aligned_alloc)
 * from its own function: with prof_sample:1 each of them must appear in
 * the final dump's collapsed stacks, and freed_site must not. */
#define _GNU_SOURCE
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

void leak_site(void);
void freed_site(void);
void calloc_site(void);
void realloc_site(void);
void memalign_site(void);
void *keep[70000];
static int nkeep;

__attribute__((noinline)) void leak_site(void)
{
    for (int i = 0; i < 4096; i++) {
        char *p = malloc(4096);
        memset(p, 1, 4096);
        keep[nkeep++] = p; /* still reachable, but never freed */
    }
}

__attribute__((noinline)) void freed_site(void)
{
    static void *tmp[4096];
    for (int i = 0; i < 4096; i++) {
        tmp[i] = malloc(4096);
        memset(tmp[i], 1, 4096);
    }
    for (int i = 0; i < 4096; i++)
        free(tmp[i]);
}

__attribute__((noinline)) void calloc_site(void)
{
    for (int i = 0; i < 64; i++)
        keep[nkeep++] = calloc(16, 100);
}

__attribute__((noinline)) void realloc_site(void)
{
    for (int i = 0; i < 64; i++) {
        void *p = malloc(100);
        keep[nkeep++] = realloc(p, 100000);
    }
}

__attribute__((noinline)) void memalign_site(void)
{
    for (int i = 0; i < 64; i++) {
        void *p = NULL;
        if (posix_memalign(&p, 256, 3000) == 0)
            keep[nkeep++] = p;
        keep[nkeep++] = aligned_alloc(4096, 8192);
        keep[nkeep++] = memalign(64, 200);
    }
}

int main(void)
{
    leak_site();
    freed_site();
    calloc_site();
    realloc_site();
    memalign_site();
    return 0;
}
