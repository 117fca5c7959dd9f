/* tests/harden/fault_driver.c: drives the fault-injection build
 * (build/libxalloc-fault.so, linked directly) through a random workload
 * of malloc/calloc/realloc/posix_memalign/aligned_alloc/free/malloc_trim
 * while the os layer fails as XALLOC_FAULT (or the mode) says, then with
 * every fault off, and proves:
 *  - a failed call returns NULL with errno ENOMEM (posix_memalign: ENOMEM,
 *    *out untouched; bad alignment: EINVAL), never crashes or aborts;
 *  - a failed realloc leaves the old block and its contents intact;
 *  - no block handed out overlaps a live one, and every live block keeps
 *    its pattern (checked before each free/realloc and in full sweeps);
 *  - once faults stop, every call succeeds; after freeing everything the
 *    allocated-bytes count is back at its start and RSS near its start.
 * Usage: fault_driver sweep|random|purge|stats [seed]
 *   sweep   faults from XALLOC_FAULT (set by run.sh), from the first call
 *   random  every kind fails with probability 2% (seed from argv)
 *   purge   run.sh makes every madvise fail: purged memory stays usable
 *   stats   run.sh makes every file call fail: statistics off, all fine
 * Prints "faults=N ops=N" on success; exit 1 with a FAIL line otherwise. */
#define _GNU_SOURCE
#include <malloc.h>

#include "hx.h"

void xalloc_fault_set(const char *spec);
unsigned long long xalloc_fault_count(const char *kind);
size_t xalloc_purge(void);

#define NSLOTS 256
struct slot {
    char *p;
    size_t size;
    uint64_t seed;
};
static struct slot slots[NSLOTS];
static uint64_t rng = 1, ops, nulls;

static size_t pick_size(void)
{
    uint64_t r = hx_rand(&rng) % 100;
    if (r < 60)
        return 1 + hx_rand(&rng) % 4096;
    if (r < 80)
        return 4096 + hx_rand(&rng) % (256 * 1024);
    if (r < 97)
        return 256 * 1024 + hx_rand(&rng) % (2u << 20);
    return (2u << 20) + hx_rand(&rng) % (6u << 20);
}

static void verify(const struct slot *s, const char *when)
{
    size_t bad = hx_check(s->p, s->size, s->seed, s->size);
    if (bad != SIZE_MAX)
        hx_fail("%s: block %p (%zu bytes) corrupt at offset %zu", when, (void *)s->p, s->size,
                bad);
}

/* A new block must not overlap any live block (no block handed out twice). */
static void check_fresh(const char *p, size_t size, int self)
{
    for (int i = 0; i < NSLOTS; i++) {
        const struct slot *s = &slots[i];
        if (i == self || !s->p)
            continue;
        if (p < s->p + s->size && s->p < p + size)
            hx_fail("block %p+%zu overlaps live block %p+%zu", (void *)p, size, (void *)s->p,
                    s->size);
    }
}

static void store(int i, char *p, size_t size)
{
    check_fresh(p, size, i);
    slots[i].p = p;
    slots[i].size = size;
    slots[i].seed = hx_rand(&rng);
    hx_fill(p, size, slots[i].seed);
}

static void failed(const char *fn, int err, bool must_succeed)
{
    if (err != ENOMEM)
        hx_fail("%s returned NULL with errno %d (want ENOMEM)", fn, err);
    if (must_succeed)
        hx_fail("%s failed with every fault off", fn);
    nulls++;
}

static void one_op(bool must_succeed)
{
    int i = (int)(hx_rand(&rng) % NSLOTS);
    struct slot *s = &slots[i];
    uint64_t r = hx_rand(&rng) % 100;
    ops++;
    if (s->p && r < 35) {
        verify(s, "free");
        free(s->p);
        s->p = NULL;
        return;
    }
    if (s->p && r < 60) {
        size_t n = r < 50 ? pick_size() : s->size + 1 + hx_rand(&rng) % (s->size + 1);
        errno = 0;
        char *q = realloc(s->p, n);
        if (!q) {
            failed("realloc", errno, must_succeed);
            verify(s, "after failed realloc"); /* old block intact */
            return;
        }
        size_t bad = hx_check(q, s->size, s->seed, n < s->size ? n : s->size);
        if (bad != SIZE_MAX)
            hx_fail("realloc %zu -> %zu lost contents at offset %zu", s->size, n, bad);
        s->p = NULL;
        store(i, q, n);
        return;
    }
    if (s->p) {
        verify(s, "sweep");
        return;
    }
    size_t n = pick_size();
    char *p;
    errno = 0;
    if (r < 75) {
        p = malloc(n);
        if (!p)
            return failed("malloc", errno, must_succeed);
    } else if (r < 85) {
        p = calloc(1, n);
        if (!p)
            return failed("calloc", errno, must_succeed);
        if (!hx_zero(p, n))
            hx_fail("calloc(%zu) not zeroed", n);
    } else if (r < 95) {
        size_t align = (size_t)16 << (hx_rand(&rng) % 18); /* 16 .. 2 MiB */
        void *out = (void *)&rng;
        int rc = posix_memalign(&out, align, n);
        if (rc) {
            if (out != (void *)&rng)
                hx_fail("posix_memalign changed *out on failure");
            if (rc != ENOMEM)
                hx_fail("posix_memalign returned %d (want ENOMEM)", rc);
            if (must_succeed)
                hx_fail("posix_memalign failed with every fault off");
            nulls++;
            return;
        }
        p = out;
        if ((uintptr_t)p & (align - 1))
            hx_fail("posix_memalign(%zu) gave %p", align, (void *)p);
        /* Bad alignments fail with EINVAL whatever the os layer does. */
        if (posix_memalign(&out, 24, 8) != EINVAL)
            hx_fail("posix_memalign(24) did not return EINVAL");
    } else if (r < 98) {
        p = aligned_alloc(4096, n);
        if (!p)
            return failed("aligned_alloc", errno, must_succeed);
    } else {
        malloc_trim(0); /* purges: madvise and munmap under fault */
        return;
    }
    store(i, p, n);
}

static void run(uint64_t n, bool must_succeed)
{
    for (uint64_t k = 0; k < n; k++)
        one_op(must_succeed);
    for (int i = 0; i < NSLOTS; i++)
        if (slots[i].p)
            verify(&slots[i], "full sweep");
}

static void free_all(void)
{
    for (int i = 0; i < NSLOTS; i++) {
        if (slots[i].p) {
            verify(&slots[i], "final free");
            free(slots[i].p);
            slots[i].p = NULL;
        }
    }
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "sweep";
    rng = argc > 2 ? strtoull(argv[2], NULL, 0) : 1;
    uint64_t phase_ops = 1500;
    if (!strcmp(mode, "random")) {
        char spec[96];
        snprintf(spec, sizeof spec, "all:ppm=20000:seed=%llu", (unsigned long long)rng);
        xalloc_fault_set(spec);
        phase_ops = 20000;
    } else if (strcmp(mode, "sweep") && strcmp(mode, "purge") && strcmp(mode, "stats")) {
        hx_fail("unknown mode %s", mode);
    }
    /* The process's own first allocations: under the sweep they may fail. */
    size_t base_alloc = mallinfo2().uordblks;
    long base_rss = hx_rss_kib();
    bool purge_or_stats = !strcmp(mode, "purge") || !strcmp(mode, "stats");
    /* Phase 1: faults on. Under purge and stats faults nothing may fail. */
    run(phase_ops, purge_or_stats);
    if (!strcmp(mode, "purge")) {
        /* Memory whose purge failed is still usable and still ours. */
        free_all();
        xalloc_purge();
        run(phase_ops, true);
    }
    if (!strcmp(mode, "stats")) {
        /* Statistics are off: no file of ours anywhere. */
        char path[64];
        snprintf(path, sizeof path, "/dev/shm/xalloc.%d", (int)getpid());
        if (access(path, F_OK) == 0)
            hx_fail("statistics file %s exists although every file call failed", path);
        snprintf(path, sizeof path, "/run/xalloc/%d", (int)getpid());
        if (access(path, F_OK) == 0)
            hx_fail("statistics file %s exists although every file call failed", path);
    }
    unsigned long long injected = xalloc_fault_count(NULL);
    xalloc_fault_set("");
    /* Phase 2: faults off: everything must work. */
    run(phase_ops, true);
    free_all();
    xalloc_purge();
    size_t end_alloc = mallinfo2().uordblks;
    long end_rss = hx_rss_kib();
    /* base_alloc may have been taken before init under a fault (0): the
     * program itself holds nothing else, so both must be tiny and equal
     * up to the driver's stdio-free zero. */
    if (end_alloc > base_alloc + 4096 && end_alloc > 65536)
        hx_fail("allocated %zu bytes after freeing everything (start %zu)", end_alloc,
                base_alloc);
    if (end_rss > base_rss + 32 * 1024)
        hx_fail("RSS %ld KiB after freeing everything (start %ld KiB)", end_rss, base_rss);
    if (!strcmp(mode, "random") && injected == 0)
        hx_fail("no fault was injected");
    hx_say(1, "faults=%llu ops=%llu nulls=%llu alloc_end=%zu rss_kib=%ld->%ld", injected,
           (unsigned long long)ops, (unsigned long long)nulls, end_alloc, base_rss, end_rss);
    return 0;
}
