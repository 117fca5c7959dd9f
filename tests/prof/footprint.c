/* footprint.c: what the profiler keeps resident in a small program (run.sh
 * footprint). Allocates 128 MiB in 4 KiB blocks from 64 different stacks,
 * keeping one block in 16 (about 250 samples at the default 512 KiB
 * distance, a few dozen stacks and sampled blocks live), then prints
 *   RESULT rss_kb=N anon_kb=N libm=0|1
 * from /proc/self/smaps_rollup and /proc/self/maps: libm=1 when libm is
 * mapped (this program does not link it). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proc_kb.h"

#define BLOCK 4096
#define TOTAL ((size_t)128 << 20)
#define KEEP_EVERY 16

static void *kept[TOTAL / BLOCK / KEEP_EVERY];
static size_t nkept;

/* Depth d gives a stack of its own. */
__attribute__((noinline)) static void *alloc_at(int d)
{
    void *p;
    if (d > 0)
        p = alloc_at(d - 1);
    else
        p = malloc(BLOCK);
    __asm__ volatile("" : : "r"(p) : "memory"); /* no tail call */
    return p;
}

int main(void)
{
    for (size_t i = 0; i < TOTAL / BLOCK; i++) {
        char *p = alloc_at((int)(i % 64));
        if (!p)
            return 1;
        memset(p, 1, 64);
        if (i % KEEP_EVERY == 0)
            kept[nkept++] = p;
        else
            free(p);
    }
    int libm = 0;
    FILE *m = fopen("/proc/self/maps", "r");
    char line[512];
    while (m && fgets(line, sizeof line, m))
        libm |= strstr(line, "/libm.so") != NULL;
    if (m)
        fclose(m);
    printf("RESULT rss_kb=%ld anon_kb=%ld libm=%d\n", field_kb("/proc/self/smaps_rollup", "Rss"),
           field_kb("/proc/self/smaps_rollup", "Anonymous"), libm);
    for (size_t i = 0; i < nkept; i++)
        free(kept[i]);
    return 0;
}
