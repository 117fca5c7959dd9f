/* tests/harden/oversub.c: oversubscription and churn under LD_PRELOAD.
 * THREADS threads (default 64) on however few cores the machine has run
 * OPS verified operations in total (one op = one malloc or one free):
 * mixed sizes from 8 bytes to 4 MiB, a quarter of frees cross-thread
 * (blocks swapped through a shared array), threads exiting after a
 * share of the work and replaced by new ones, and now and then a fork
 * from a busy thread whose child allocates, verifies and exits. Run with
 * XALLOC_CONF=background_thread:true,stats_interval_ms:10 so the purger
 * and the statistics publication run throughout.
 * Every block carries its id and size in its head and a pattern, checked
 * before it is freed; at the end every block ever allocated has been freed
 * exactly once, the allocated-bytes count is back where it started, and
 * RSS after malloc_trim is within 2x the live bytes + 48 MiB, and within
 * 48 MiB of the start once everything is freed.
 * Usage: oversub OPS [THREADS]. Prints one summary line. */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/wait.h>

#include "hx.h"

#define LOCAL 64
#define SHARED 4096
#define LIFE_OPS 400000 /* ops per thread life: threads churn */
#define FORK_EVERY 5000000
/* RSS beyond live bytes after trim: HX_RSS_BOUND_MIB, default 48 MiB */
static long rss_bound_kib = 48 * 1024;
#define RSS_BOUND_KIB rss_bound_kib

static uint64_t target_ops;
static uint64_t issued;          /* atomic: ops claimed by threads */
static uint64_t allocs, frees;    /* atomic */
static uint64_t next_id = 1;      /* atomic */
static uint64_t forks, threads_made;
static _Atomic(uintptr_t) shared[SHARED];

struct head {
    uint64_t id, size;
};

static size_t pick(uint64_t *r)
{
    uint64_t x = hx_rand(r) % 1000;
    if (x < 700)
        return 16 + hx_rand(r) % 113;
    if (x < 900)
        return 129 + hx_rand(r) % 3968;
    if (x < 990)
        return 4097 + hx_rand(r) % 61440;
    if (x < 999)
        return 65536 + hx_rand(r) % (1u << 20);
    return (1u << 20) + hx_rand(r) % (3u << 20);
}

/* Head: id and size; tail word and one word per 4 KiB page: the id
 * mixed with the offset; blocks up to 128 bytes patterned whole. */
static inline uint64_t word(uint64_t id, size_t off) { return id * 0x9e3779b97f4a7c15ULL ^ off; }

static void *make(size_t size)
{
    char *p = malloc(size);
    if (!p)
        hx_fail("malloc(%zu) failed", size);
    struct head *h = (struct head *)p;
    h->id = __atomic_fetch_add(&next_id, 1, __ATOMIC_RELAXED);
    h->size = size;
    if (size <= 128)
        for (size_t o = 16; o + 8 <= size; o += 8)
            *(uint64_t *)(p + o) = word(h->id, o);
    else
        for (size_t o = 4096; o + 8 <= size; o += 4096)
            *(uint64_t *)(p + o) = word(h->id, o);
    if (size >= 24)
        *(uint64_t *)(p + ((size - 8) & ~(size_t)7)) = word(h->id, 1);
    __atomic_fetch_add(&allocs, 1, __ATOMIC_RELAXED);
    return p;
}

static size_t check_free(void *v)
{
    char *p = v;
    struct head *h = (struct head *)p;
    size_t size = h->size;
    if (h->id == 0 || size < 16 || size > (4u << 20))
        hx_fail("block %p: head destroyed (id %llu size %zu)", v, (unsigned long long)h->id,
                size);
    if (size >= 24 && *(uint64_t *)(p + ((size - 8) & ~(size_t)7)) != word(h->id, 1))
        hx_fail("block %p (%zu bytes, id %llu): tail overwritten", v, size,
                (unsigned long long)h->id);
    size_t step = size <= 128 ? 8 : 4096, first = size <= 128 ? 16 : 4096;
    for (size_t o = first; o + 8 <= size; o += step)
        if (*(uint64_t *)(p + o) != word(h->id, o) && o != ((size - 8) & ~(size_t)7))
            hx_fail("block %p (%zu bytes): offset %zu overwritten", v, size, o);
    h->id = 0; /* a second free of this block would now be caught above */
    free(p);
    __atomic_fetch_add(&frees, 1, __ATOMIC_RELAXED);
    return size;
}

static void child_work(void)
{
    void *b[256];
    uint64_t r = (uint64_t)getpid();
    for (int i = 0; i < 256; i++)
        b[i] = make(pick(&r) % 65536 + 16);
    for (int i = 0; i < 256; i++)
        check_free(b[i]);
    _exit(0);
}

static void *worker(void *arg)
{
    uint64_t r = (uintptr_t)arg * 0x2545f4914f6cdd1dULL;
    void *local[LOCAL] = {0};
    uint64_t life = 0;
    while (life < LIFE_OPS) {
        uint64_t start = __atomic_fetch_add(&issued, 1024, __ATOMIC_RELAXED);
        if (start >= target_ops)
            break;
        for (int k = 0; k < 1024; k++) {
            uint64_t x = hx_rand(&r);
            int i = (int)(x % LOCAL);
            if (!local[i]) {
                local[i] = make(pick(&r));
            } else if ((x >> 32) % 4 == 0) {
                /* Cross-thread: swap into the shared array, free what was
                 * there (another thread's block). */
                uintptr_t old = atomic_exchange(&shared[(x >> 40) % SHARED], (uintptr_t)local[i]);
                local[i] = NULL;
                if (old)
                    check_free((void *)old);
            } else {
                check_free(local[i]);
                local[i] = NULL;
            }
        }
        life += 1024;
        if ((start / 1024) % (FORK_EVERY / 1024) == 0) {
            pid_t pid = fork();
            if (pid == 0)
                child_work();
            int st = 0;
            if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
                hx_fail("fork from a busy thread: child status %#x", st);
            __atomic_fetch_add(&forks, 1, __ATOMIC_RELAXED);
        }
    }
    /* Leaving: half the blocks go to others (freed by them later). */
    for (int i = 0; i < LOCAL; i++) {
        if (!local[i])
            continue;
        if (i & 1) {
            uintptr_t old = atomic_exchange(&shared[(hx_rand(&r) >> 20) % SHARED],
                                            (uintptr_t)local[i]);
            if (old)
                check_free((void *)old);
        } else {
            check_free(local[i]);
        }
    }
    return NULL;
}

int main(int argc, char **argv)
{
    target_ops = argc > 1 ? strtoull(argv[1], NULL, 0) : 1000000;
    int nthreads = argc > 2 ? atoi(argv[2]) : 64;
    if (getenv("HX_RSS_BOUND_MIB"))
        rss_bound_kib = atol(getenv("HX_RSS_BOUND_MIB")) * 1024;
    free(malloc(1));
    size_t base_alloc = mallinfo2().uordblks;
    long base_rss = hx_rss_kib();
    pthread_t *t = calloc((size_t)nthreads, sizeof *t);
    uint64_t seed = 1;
    for (int i = 0; i < nthreads; i++, threads_made++)
        pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)seed++);
    /* Churn: as threads finish their lives, new ones take their place. */
    for (;;) {
        bool more = __atomic_load_n(&issued, __ATOMIC_RELAXED) < target_ops;
        int live = 0;
        for (int i = 0; i < nthreads; i++) {
            if (!t[i])
                continue;
            if (pthread_tryjoin_np(t[i], NULL) == 0) {
                t[i] = 0;
                if (more && pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)seed++) == 0)
                    threads_made++;
            }
            live += t[i] != 0;
        }
        if (!live && !more)
            break;
        usleep(2000);
    }
    /* What is left in the shared array is live: RSS must stay near it. */
    size_t live_bytes = 0;
    for (int i = 0; i < SHARED; i++) {
        uintptr_t p = atomic_load(&shared[i]);
        if (p)
            live_bytes += ((struct head *)p)->size;
    }
    malloc_trim(0);
    long live_rss = hx_rss_kib();
    if (getenv("HX_STATS"))
        malloc_stats();
    /* Slabs left by exited threads hold a few live blocks each, whose
     * pages stay (malloc_trim purges the others: live + 22-25 MB
     * measured, where it was live + 110-130 MB before it did), so the
     * bound with data live is a ratio. */
    if (live_rss - base_rss > (long)(live_bytes / 1024) * 2 + RSS_BOUND_KIB)
        hx_fail("RSS %ld KiB (start %ld) with %zu live bytes after trim", live_rss, base_rss,
                live_bytes);
    for (int i = 0; i < SHARED; i++) {
        uintptr_t p = atomic_exchange(&shared[i], 0);
        if (p)
            check_free((void *)p);
    }
    malloc_trim(0);
    free(t);
    long end_rss = hx_rss_kib();
    size_t end_alloc = mallinfo2().uordblks;
    if (allocs != frees)
        hx_fail("%llu blocks allocated, %llu freed: blocks lost", (unsigned long long)allocs,
                (unsigned long long)frees);
    if (end_alloc > base_alloc + 65536)
        hx_fail("allocated bytes %zu at the end (start %zu)", end_alloc, base_alloc);
    if (end_rss - base_rss > RSS_BOUND_KIB)
        hx_fail("RSS %ld KiB at the end (start %ld) with nothing live", end_rss, base_rss);
    hx_say(1,
           "oversub: %llu verified ops (%llu allocs = frees), %d threads at once, %llu threads "
           "made, %llu forks, RSS KiB start %ld / with %zu KiB live %ld / end %ld",
           (unsigned long long)(allocs + frees), (unsigned long long)allocs, nthreads,
           (unsigned long long)threads_made, (unsigned long long)forks, base_rss,
           live_bytes / 1024, live_rss, end_rss);
    return 0;
}
