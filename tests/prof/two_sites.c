/* two_sites.c: a program with two known allocation sites, for the heap
 * profile readers test (check-prof-readers). site_big keeps about 80 MiB
 * live, site_small about 8 MiB, both in mixed sizes; then it asks for a
 * dump (xalloc-stat style, through the statistics request area is tested
 * elsewhere) by exiting with prof_final:true, and prints the exact live
 * bytes of each site on stdout as "site_big N" and "site_small N". */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BIG_TOTAL (80u << 20)
#define SMALL_TOTAL (8u << 20)

static uint64_t rng = 0x9e3779b97f4a7c15ULL;
static unsigned next_size(unsigned lo, unsigned hi)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return lo + (unsigned)(rng % (hi - lo + 1));
}

void *site_big(size_t size);
void *site_small(size_t size);
/* Blocks stay reachable until exit. */
void *keep[1 << 20];

/* Exported and not inlined, so that pprof and jeprof (through nm and
 * addr2line) and the library's leak report (through dladdr) name them. */
__attribute__((noinline)) void *site_big(size_t size)
{
    void *p = malloc(size);
    __asm__ volatile("" ::: "memory");
    return p;
}

__attribute__((noinline)) void *site_small(size_t size)
{
    void *p = malloc(size);
    __asm__ volatile("" ::: "memory");
    return p;
}

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    size_t nkeep = 0, big = 0, small = 0;
    /* Interleaved, so neither site benefits from the other's position in
     * the sampling sequence. */
    while (big < BIG_TOTAL || small < SMALL_TOTAL) {
        for (int i = 0; i < 10 && big < BIG_TOTAL; i++) {
            size_t s = next_size(64, 2048);
            void *p = site_big(s);
            memset(p, 1, s);
            keep[nkeep++] = p;
            big += s;
        }
        if (small < SMALL_TOTAL) {
            size_t s = next_size(16, 2048);
            void *p = site_small(s);
            memset(p, 2, s);
            keep[nkeep++] = p;
            small += s;
        }
    }
    printf("site_big %zu\nsite_small %zu\n", big, small);
    fflush(stdout);
    return 0;
}
