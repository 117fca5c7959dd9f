/* tests/harden/limitprobe.c: behaviour at a memory limit, under
 * LD_PRELOAD (tests/harden/limits.sh sets the limit).
 *   fill small|large|huge|mixed  allocate (and touch) until malloc says
 *       no: it must be NULL with ENOMEM, never a crash; then free half,
 *       allocate again, free everything, and allocate a block as big as a
 *       quarter of what was held: the program goes on after the limit.
 *   churn MIB ROUNDS  hold MIB MiB of touched blocks of one size, free
 *       them, go on with another size, ROUNDS times: under a cgroup
 *       limit a little above MIB this survives only if freed memory
 *       really goes back to the kernel.
 * Every block carries a pattern, checked before it is freed. */
#define _GNU_SOURCE
#include <malloc.h>

#include "hx.h"

#define MAXB 1000000
static char *blk[MAXB];
static size_t sz[MAXB];

static size_t size_of(const char *kind, uint64_t *r)
{
    if (!strcmp(kind, "small"))
        return 16 + hx_rand(r) % 2000;
    if (!strcmp(kind, "large"))
        return 300000 + hx_rand(r) % 1500000;
    if (!strcmp(kind, "huge"))
        return (3u << 20) + hx_rand(r) % (6u << 20);
    return hx_rand(r) % 3 == 0 ? 16 + hx_rand(r) % 2000 : 300000 + hx_rand(r) % (8u << 20);
}

static void release(int i)
{
    if (hx_check(blk[i], sz[i], (uint64_t)i, sz[i]) != SIZE_MAX)
        hx_fail("block %d (%zu bytes) corrupt", i, sz[i]);
    free(blk[i]);
    blk[i] = NULL;
}

static int fill_to_limit(const char *kind, uint64_t *r, size_t *held)
{
    int n = 0;
    for (; n < MAXB; n++) {
        size_t s = size_of(kind, r);
        errno = 0;
        char *p = malloc(s);
        if (!p) {
            if (errno != ENOMEM)
                hx_fail("malloc(%zu) at the limit: NULL with errno %d", s, errno);
            return n;
        }
        blk[n] = p;
        sz[n] = s;
        hx_fill(p, s, (uint64_t)n);
        *held += s;
    }
    hx_fail("no limit reached after %d blocks", n);
}

int main(int argc, char **argv)
{
    uint64_t r = 42;
    if (argc > 2 && !strcmp(argv[1], "fill")) {
        size_t held = 0;
        int n = fill_to_limit(argv[2], &r, &held);
        /* Also calloc, realloc and posix_memalign at the limit. */
        errno = 0;
        if (calloc(1, 64u << 20) || errno != ENOMEM)
            hx_fail("calloc at the limit did not fail with ENOMEM");
        char *q = realloc(blk[0], sz[0] + (64u << 20));
        if (q || errno != ENOMEM)
            hx_fail("realloc at the limit did not fail with ENOMEM");
        void *a = NULL;
        if (posix_memalign(&a, 1u << 21, 64u << 20) != ENOMEM)
            hx_fail("posix_memalign at the limit did not return ENOMEM");
        for (int i = 0; i < n; i += 2)
            release(i);
        size_t again = 0;
        int m = 0;
        for (int i = 0; i < n; i += 2) { /* refill the freed half */
            size_t s = sz[i + (i + 1 < n)];
            char *p = malloc(s);
            if (!p)
                break;
            blk[i] = p;
            sz[i] = s;
            hx_fill(p, s, (uint64_t)i);
            again += s;
            m++;
        }
        if (m == 0)
            hx_fail("nothing could be allocated after freeing half");
        for (int i = 0; i < n; i++)
            if (blk[i])
                release(i);
        malloc_trim(0);
        char *big = malloc(held / 4);
        if (!big)
            hx_fail("malloc(%zu) after freeing everything failed", held / 4);
        hx_fill(big, held / 4, 7);
        free(big);
        hx_say(1, "fill %s: %d blocks, %zu MiB held at the limit; %d blocks again after "
                  "freeing half; %zu MiB block after freeing all",
               argv[2], n, held >> 20, m, (held / 4) >> 20);
        return 0;
    }
    if (argc > 3 && !strcmp(argv[1], "churn")) {
        size_t mib = strtoul(argv[2], NULL, 0);
        int rounds = atoi(argv[3]);
        static const size_t sizes[] = {1500000, 200000, 48, 20000, 5000000, 1000};
        size_t total = 0;
        for (int k = 0; k < rounds; k++) {
            size_t s = sizes[k % 6], n = 0;
            for (size_t held = 0; held + s <= mib << 20 && n < MAXB; held += s, n++) {
                blk[n] = malloc(s);
                if (!blk[n])
                    hx_fail("round %d: malloc(%zu) failed", k, s);
                sz[n] = s;
                hx_fill(blk[n], s, (uint64_t)n);
            }
            for (size_t i = 0; i < n; i++)
                release((int)i);
            total += n * s;
        }
        hx_say(1, "churn: %d rounds of %zu MiB, %zu MiB touched in all", rounds, mib,
               total >> 20);
        return 0;
    }
    hx_fail("usage: limitprobe fill KIND | churn MIB ROUNDS");
}
