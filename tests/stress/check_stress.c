/* tests/stress/check_stress.c: multi-thread stress of the real allocator with
 * content verification (Check suite). Every block is filled with a pattern
 * derived from its address, size and a seed, and verified before it is
 * freed, so a block handed out twice, an overlap, a write through a stale
 * free-list pointer or a lost realloc copy shows up as a mismatch.
 *
 * Each test is bounded in time (XT_STRESS_SECONDS, default 6 s per test)
 * and in operation count, so the suite costs ~30 s of wall time per
 * allocator on a loaded 2-core machine. Threads never call Check: they
 * record the first failure in `fail_msg`, everyone stops, and the test's
 * main thread reports it. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr */
#endif
#include <check.h>
#include <malloc.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dlfcn.h>
#include <unistd.h>

#include "common/xt.h"
#include "common/xt_check.h"

/* ---- shared failure reporting and run bounds ---- */

static atomic_bool failed;
static pthread_mutex_t fail_lock = PTHREAD_MUTEX_INITIALIZER;
static char fail_msg[512];
static double deadline;

__attribute__((format(printf, 1, 2))) static void stress_fail(const char *fmt, ...)
{
    pthread_mutex_lock(&fail_lock);
    if (!atomic_load(&failed)) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(fail_msg, sizeof fail_msg, fmt, ap);
        va_end(ap);
        atomic_store(&failed, true);
    }
    pthread_mutex_unlock(&fail_lock);
}

static bool should_stop(void)
{
    return atomic_load_explicit(&failed, memory_order_relaxed) || xt_now() > deadline;
}

static double budget_seconds(void)
{
    const char *e = getenv("XT_STRESS_SECONDS");
    double s = e != NULL ? atof(e) : 6.0;
    return s > 0 ? s : 6.0;
}

static void start_run(void)
{
    const char *why = xt_allocator_problem();
    XT_ASSERT(why == NULL, "%s", why ? why : "");
    atomic_store(&failed, false);
    fail_msg[0] = '\0';
    deadline = xt_now() + budget_seconds();
}

static void end_run(void)
{
    XT_ASSERT(!atomic_load(&failed), "%s", fail_msg);
}

/* ---- blocks ---- */

struct blk {
    unsigned char *p;
    size_t size;
    uint64_t tag;
};

/* Mostly small (8 B..4 KiB), some medium (to 300 KiB), a few 1-4 MiB. */
static size_t random_size(uint64_t *rng)
{
    uint64_t r = xt_rand(rng) % 1000;
    if (r < 900)
        return xt_rand_range(rng, 8, 4096);
    if (r < 995)
        return xt_rand_range(rng, 4097, 300 * 1024);
    return xt_rand_range(rng, XT_MiB, 4 * XT_MiB);
}

static bool blk_new(struct blk *b, size_t size, uint64_t seed, const char *who)
{
    b->p = malloc(size);
    b->size = size;
    if (b->p == NULL) {
        stress_fail("%s: malloc(%zu) returned NULL", who, size);
        return false;
    }
    if (malloc_usable_size(b->p) < size) {
        stress_fail("%s: malloc_usable_size(%p) = %zu < %zu", who, (void *)b->p,
             malloc_usable_size(b->p), size);
        return false;
    }
    b->tag = xt_tag(b->p, size, seed);
    xt_fill(b->p, size, b->tag);
    return true;
}

static bool blk_check(const struct blk *b, const char *who)
{
    size_t bad = xt_verify(b->p, b->size, b->tag);
    if (bad != b->size) {
        stress_fail("%s: block %p size %zu corrupted at offset %zu (byte 0x%02x)", who,
             (void *)b->p, b->size, bad, b->p[bad]);
        return false;
    }
    return true;
}

/* ---- working set: each thread allocates, verifies and frees its own ---- */

struct ws_arg {
    uint64_t seed;
    size_t ops;
};

static void *ws_thread(void *argp)
{
    struct ws_arg *arg = argp;
    enum { SLOTS = 1024, MAX_OPS = 3000000 };
    struct blk *slots = calloc(SLOTS, sizeof *slots);
    uint64_t rng = arg->seed;
    size_t ops = 0;
    if (slots == NULL) {
        stress_fail("calloc of the slot table failed");
        return NULL;
    }
    while (ops < MAX_OPS && ((ops & 255) != 0 || !should_stop())) {
        struct blk *b = &slots[xt_rand_range(&rng, 0, SLOTS - 1)];
        if (b->p != NULL) {
            if (!blk_check(b, "working set"))
                break;
            free(b->p);
            b->p = NULL;
        } else if (!blk_new(b, random_size(&rng), arg->seed, "working set")) {
            break;
        }
        /* Now and then verify a random live block that nobody touched. */
        struct blk *o = &slots[xt_rand_range(&rng, 0, SLOTS - 1)];
        if ((ops & 15) == 0 && o->p != NULL && !blk_check(o, "working set (idle block)"))
            break;
        ops++;
    }
    for (size_t i = 0; i < SLOTS; i++) {
        if (slots[i].p != NULL) {
            if (!atomic_load(&failed))
                blk_check(&slots[i], "working set (final)");
            free(slots[i].p);
        }
    }
    free(slots);
    arg->ops = ops;
    return NULL;
}

static void run_working_set(size_t nthreads)
{
    start_run();
    pthread_t th[16];
    struct ws_arg args[16];
    for (size_t i = 0; i < nthreads; i++) {
        args[i].seed = 1000 + i;
        args[i].ops = 0;
        XT_ASSERT(pthread_create(&th[i], NULL, ws_thread, &args[i]) == 0, "pthread_create");
    }
    size_t total = 0;
    for (size_t i = 0; i < nthreads; i++) {
        pthread_join(th[i], NULL);
        total += args[i].ops;
    }
    end_run();
    printf("working set, %zu threads: %zu operations verified\n", nthreads, total);
    /* A run that did (almost) nothing proves nothing. */
    XT_ASSERT(total >= 1000 * nthreads, "only %zu operations in %zu threads", total, nthreads);
}

START_TEST(test_working_set_4)
{
    run_working_set(4);
}
END_TEST

START_TEST(test_working_set_8)
{
    run_working_set(8);
}
END_TEST

/* ---- exchange rings: thread i allocates, thread i+1 verifies and frees ---- */

/* Single-producer single-consumer lock-free ring. */
enum { RING_CAP = 256 };
struct ring {
    _Alignas(64) atomic_size_t head; /* next slot to write (producer) */
    _Alignas(64) atomic_size_t tail; /* next slot to read (consumer) */
    struct blk items[RING_CAP];
    atomic_bool producer_done;
};

static bool ring_push(struct ring *r, const struct blk *b)
{
    size_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
    size_t t = atomic_load_explicit(&r->tail, memory_order_acquire);
    if (h - t == RING_CAP)
        return false;
    r->items[h % RING_CAP] = *b;
    atomic_store_explicit(&r->head, h + 1, memory_order_release);
    return true;
}

static bool ring_pop(struct ring *r, struct blk *b)
{
    size_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);
    size_t h = atomic_load_explicit(&r->head, memory_order_acquire);
    if (h == t)
        return false;
    *b = r->items[t % RING_CAP];
    atomic_store_explicit(&r->tail, t + 1, memory_order_release);
    return true;
}

struct xchg_arg {
    struct ring *out, *in;
    uint64_t seed;
    size_t produced, consumed;
    bool realloc_hops; /* consumer reallocs and forwards instead of freeing */
};

enum { XCHG_MAX = 2000000 };

/* Consumes one block: verify, then free it (or, in realloc mode, resize it
 * on this thread, verify the kept prefix, refill, and pass it on: realloc of
 * a block another thread allocated). Returns false on failure. */
static bool xchg_consume(struct xchg_arg *a, struct blk *b, uint64_t *rng, bool may_forward)
{
    if (!blk_check(b, a->realloc_hops ? "realloc hop (received)" : "cross-thread free"))
        return false;
    a->consumed++;
    /* The hop count lives in the seed's low byte. */
    unsigned hops = (unsigned)(b->tag & 3);
    if (a->realloc_hops && may_forward && hops != 3) {
        size_t next = random_size(rng);
        unsigned char *q = realloc(b->p, next);
        if (q == NULL) {
            stress_fail("realloc(%zu -> %zu) = NULL", b->size, next);
            return false;
        }
        size_t keep = next < b->size ? next : b->size;
        size_t bad = xt_verify(q, keep, b->tag);
        if (bad != keep) {
            stress_fail("cross-thread realloc %zu -> %zu lost content at offset %zu", b->size, next,
                 bad);
            return false;
        }
        struct blk nb = {q, next, (xt_tag(q, next, a->seed) & ~(uint64_t)3) | (hops + 1)};
        xt_fill(q, next, nb.tag);
        if (ring_push(a->out, &nb)) {
            a->produced++;
            return true;
        }
        *b = nb; /* ring full: keep it local and free it below */
        if (!blk_check(b, "realloc hop (local)"))
            return false;
    }
    free(b->p);
    return true;
}

static void *xchg_thread(void *argp)
{
    struct xchg_arg *a = argp;
    uint64_t rng = a->seed;
    struct blk b;
    size_t n = 0;
    while (n < XCHG_MAX && ((n & 63) != 0 || !should_stop())) {
        n++;
        if (!blk_new(&b, random_size(&rng), a->seed, "exchange"))
            break;
        b.tag &= ~(uint64_t)3; /* hop count 0 (the fill used the full tag) */
        xt_fill(b.p, b.size, b.tag);
        if (ring_push(a->out, &b)) {
            a->produced++;
        } else {
            free(b.p); /* consumer is behind: our own free, then help drain */
        }
        for (int k = 0; k < 2 && ring_pop(a->in, &b); k++)
            if (!xchg_consume(a, &b, &rng, true))
                goto out;
    }
out:
    atomic_store(&a->out->producer_done, true);
    /* Drain what our producer left, bounded so a stuck peer cannot hang us. */
    double hard = xt_now() + 30;
    for (;;) {
        if (ring_pop(a->in, &b)) {
            if (atomic_load(&failed))
                free(b.p);
            else if (!xchg_consume(a, &b, &rng, false))
                break;
            continue;
        }
        if (atomic_load(&a->in->producer_done) &&
            atomic_load(&a->in->head) == atomic_load(&a->in->tail))
            break;
        if (xt_now() > hard) {
            stress_fail("exchange: drain timed out");
            break;
        }
        sched_yield();
    }
    return NULL;
}

static void run_exchange(size_t nthreads, bool realloc_hops)
{
    start_run();
    struct ring *rings = aligned_alloc(64, sizeof(struct ring) * 8);
    XT_ASSERT(rings != NULL, "ring allocation");
    struct xchg_arg args[8];
    pthread_t th[8];
    for (size_t i = 0; i < nthreads; i++) {
        atomic_init(&rings[i].head, 0);
        atomic_init(&rings[i].tail, 0);
        atomic_init(&rings[i].producer_done, false);
    }
    for (size_t i = 0; i < nthreads; i++) {
        args[i] = (struct xchg_arg){.out = &rings[i],
                                    .in = &rings[(i + nthreads - 1) % nthreads],
                                    .seed = 77 + i,
                                    .realloc_hops = realloc_hops};
        XT_ASSERT(pthread_create(&th[i], NULL, xchg_thread, &args[i]) == 0, "pthread_create");
    }
    size_t produced = 0, consumed = 0;
    for (size_t i = 0; i < nthreads; i++) {
        pthread_join(th[i], NULL);
        produced += args[i].produced;
        consumed += args[i].consumed;
    }
    free(rings);
    end_run();
    printf("exchange%s, %zu threads: %zu blocks crossed threads\n",
           realloc_hops ? " with realloc hops" : "", nthreads, consumed);
    XT_ASSERT(produced == consumed, "%zu blocks passed between threads, %zu received",
              produced, consumed);
    XT_ASSERT(consumed >= 1000, "only %zu blocks crossed threads", consumed);
}

START_TEST(test_cross_thread_free)
{
    run_exchange(4, false);
}
END_TEST

START_TEST(test_cross_thread_realloc)
{
    run_exchange(4, true);
}
END_TEST

/* ---- realloc chains within a thread, 4 threads ---- */

static void *chain_thread(void *argp)
{
    struct ws_arg *arg = argp;
    enum { N = 64, MAX_STEPS = 2000000 };
    struct blk bs[N];
    uint64_t rng = arg->seed;
    size_t step = 0;
    for (size_t i = 0; i < N; i++)
        if (!blk_new(&bs[i], xt_rand_range(&rng, 1, 256), arg->seed, "realloc chain"))
            return NULL;
    while (step < MAX_STEPS && ((step & 127) != 0 || !should_stop())) {
        struct blk *b = &bs[xt_rand_range(&rng, 0, N - 1)];
        /* Mostly nearby sizes (in-place growth paths), sometimes jumps. */
        size_t next;
        uint64_t r = xt_rand(&rng) % 10;
        if (r < 6)
            next = b->size + xt_rand_range(&rng, 0, b->size / 2 + 16);
        else if (r < 9)
            next = b->size / 2 + 1;
        else
            next = random_size(&rng);
        if (next > 6 * XT_MiB)
            next = xt_rand_range(&rng, 1, 4096);
        unsigned char *q = realloc(b->p, next);
        if (q == NULL) {
            stress_fail("realloc(%zu -> %zu) = NULL", b->size, next);
            break;
        }
        size_t keep = next < b->size ? next : b->size;
        size_t bad = xt_verify(q, keep, b->tag);
        if (bad != keep) {
            stress_fail("realloc chain %zu -> %zu (%p -> %p) lost content at offset %zu", b->size,
                 next, (void *)b->p, (void *)q, bad);
            break;
        }
        if (next > b->size)
            xt_fill_from(q, b->size, next, b->tag);
        b->p = q;
        b->size = next;
        step++;
        if ((step & 1023) == 0)
            for (size_t i = 0; i < N; i++)
                if (!blk_check(&bs[i], "realloc chain (sweep)"))
                    goto out;
    }
out:
    for (size_t i = 0; i < N; i++) {
        if (!atomic_load(&failed))
            blk_check(&bs[i], "realloc chain (final)");
        free(bs[i].p);
    }
    arg->ops = step;
    return NULL;
}

START_TEST(test_realloc_chains)
{
    start_run();
    pthread_t th[4];
    struct ws_arg args[4];
    for (size_t i = 0; i < 4; i++) {
        args[i] = (struct ws_arg){.seed = 555 + i};
        XT_ASSERT(pthread_create(&th[i], NULL, chain_thread, &args[i]) == 0, "pthread_create");
    }
    size_t total = 0;
    for (size_t i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        total += args[i].ops;
    }
    end_run();
    printf("realloc chains, 4 threads: %zu steps verified\n", total);
    XT_ASSERT(total >= 4000, "only %zu realloc steps", total);
}
END_TEST

/* ---- one producer, three consumers, mutex + condition variable queue ---- */

enum { Q_CAP = 1024, PC_MAX = 3000000 };
static struct {
    pthread_mutex_t lock;
    pthread_cond_t not_empty, not_full;
    struct blk items[Q_CAP];
    size_t head, count;
    bool done;
    size_t produced, consumed;
} q = {.lock = PTHREAD_MUTEX_INITIALIZER,
       .not_empty = PTHREAD_COND_INITIALIZER,
       .not_full = PTHREAD_COND_INITIALIZER};

static void *pc_producer(void *unused)
{
    uint64_t rng = 31337;
    size_t n = 0;
    while (n < PC_MAX && ((n & 63) != 0 || !should_stop())) {
        struct blk b;
        if (!blk_new(&b, random_size(&rng), 9, "producer"))
            break;
        pthread_mutex_lock(&q.lock);
        while (q.count == Q_CAP && !atomic_load(&failed))
            pthread_cond_wait(&q.not_full, &q.lock);
        if (atomic_load(&failed)) {
            pthread_mutex_unlock(&q.lock);
            free(b.p);
            break;
        }
        q.items[(q.head + q.count) % Q_CAP] = b;
        q.count++;
        q.produced++;
        pthread_cond_signal(&q.not_empty);
        pthread_mutex_unlock(&q.lock);
        n++;
    }
    pthread_mutex_lock(&q.lock);
    q.done = true;
    pthread_cond_broadcast(&q.not_empty);
    pthread_mutex_unlock(&q.lock);
    return NULL;
}

static void *pc_consumer(void *unused)
{
    for (;;) {
        pthread_mutex_lock(&q.lock);
        while (q.count == 0 && !q.done)
            pthread_cond_wait(&q.not_empty, &q.lock);
        if (q.count == 0) {
            pthread_mutex_unlock(&q.lock);
            return NULL;
        }
        struct blk b = q.items[q.head];
        q.head = (q.head + 1) % Q_CAP;
        q.count--;
        q.consumed++;
        pthread_cond_signal(&q.not_full);
        pthread_mutex_unlock(&q.lock);
        if (!atomic_load(&failed) && !blk_check(&b, "consumer")) {
            pthread_mutex_lock(&q.lock);
            pthread_cond_broadcast(&q.not_full); /* wake the producer to stop */
            pthread_mutex_unlock(&q.lock);
        }
        free(b.p);
    }
}

START_TEST(test_producer_consumers)
{
    start_run();
    pthread_t prod, cons[3];
    XT_ASSERT(pthread_create(&prod, NULL, pc_producer, NULL) == 0, "pthread_create");
    for (int i = 0; i < 3; i++)
        XT_ASSERT(pthread_create(&cons[i], NULL, pc_consumer, NULL) == 0, "pthread_create");
    pthread_join(prod, NULL);
    for (int i = 0; i < 3; i++)
        pthread_join(cons[i], NULL);
    end_run();
    printf("1 producer, 3 consumers: %zu blocks\n", q.consumed);
    XT_ASSERT(q.produced == q.consumed, "produced %zu, consumed %zu", q.produced, q.consumed);
    XT_ASSERT(q.consumed >= 1000, "only %zu blocks went through the queue", q.consumed);
}
END_TEST


/* ---- idle reclaim racing the owners ----
 * Threads allocate, verify and free bursts of one class at a time (so
 * their current slabs keep emptying) with short pauses, keeping a few
 * blocks live, while another thread calls xalloc_purge() in a loop: under
 * xalloc that takes the pages of every empty current slab of every thread
 * at once, racing each owner's next malloc of the class (see "idle
 * reclaim" in src/heap.c). Under another allocator the purge thread has
 * nothing to call and the test is a plain burst stress. */

static void *burst_thread(void *argp)
{
    uint64_t rng = (uint64_t)(uintptr_t)argp * 0x9e3779b97f4a7c15ull + 1;
    enum { LIVE = 16, BURST = 48 };
    struct blk live[LIVE], burst[BURST];
    for (int i = 0; i < LIVE; i++)
        if (!blk_new(&live[i], xt_rand_range(&rng, 8, 4096), rng, "burst"))
            return NULL;
    for (unsigned round = 0; !should_stop(); round++) {
        size_t size = xt_rand_range(&rng, 8, 16000);
        unsigned n = (unsigned)xt_rand_range(&rng, 1, BURST);
        unsigned made = 0;
        for (; made < n; made++)
            if (!blk_new(&burst[made], size, rng + made, "burst"))
                break;
        for (unsigned i = 0; i < made; i++) {
            blk_check(&burst[i], "burst");
            free(burst[i].p);
        }
        if (made < n)
            break;
        if (round % 4 == 0) {
            struct blk *b = &live[xt_rand(&rng) % LIVE];
            if (!blk_check(b, "burst live"))
                break;
            free(b->p);
            if (!blk_new(b, xt_rand_range(&rng, 8, 4096), rng, "burst live"))
                break;
        }
        if (round % 8 == 0)
            usleep((useconds_t)(xt_rand(&rng) % 300));
    }
    for (int i = 0; i < LIVE; i++) {
        blk_check(&live[i], "burst live");
        free(live[i].p);
    }
    return NULL;
}

static atomic_bool purge_stop;
static void *purge_thread(void *unused)
{
    (void)unused;
    size_t (*purge)(void) = (size_t (*)(void))dlsym(RTLD_DEFAULT, "xalloc_purge");
    size_t calls = 0;
    while (purge && !atomic_load(&purge_stop)) {
        purge();
        calls++;
        usleep(100);
    }
    return (void *)calls;
}

START_TEST(test_idle_reclaim_race)
{
    start_run();
    atomic_store(&purge_stop, false);
    pthread_t w[4], p;
    XT_ASSERT(pthread_create(&p, NULL, purge_thread, NULL) == 0, "pthread_create");
    for (int i = 0; i < 4; i++)
        XT_ASSERT(pthread_create(&w[i], NULL, burst_thread, (void *)(uintptr_t)(i + 1)) == 0,
                  "pthread_create");
    for (int i = 0; i < 4; i++)
        pthread_join(w[i], NULL);
    atomic_store(&purge_stop, true);
    void *calls;
    pthread_join(p, &calls);
    end_run();
    printf("idle reclaim race: %zu forced purges\n", (size_t)(uintptr_t)calls);
}
END_TEST

static Suite *stress_suite(void)
{
    Suite *s = suite_create("stress");
    TCase *tc = tcase_create("stress");
    /* The budget bounds each test; the timeout only catches a hang. */
    tcase_set_timeout(tc, budget_seconds() * 3 + 60);
    tcase_add_test(tc, test_working_set_4);
    tcase_add_test(tc, test_working_set_8);
    tcase_add_test(tc, test_cross_thread_free);
    tcase_add_test(tc, test_cross_thread_realloc);
    tcase_add_test(tc, test_realloc_chains);
    tcase_add_test(tc, test_producer_consumers);
    tcase_add_test(tc, test_idle_reclaim_race);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(stress_suite());
    srunner_run_all(sr, CK_NORMAL);
    int nfailed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return nfailed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
