/* prof.c: sampling and the profile tables (profiling build only). Side
 * module; see prof.h. Calls meta, lock, config, stats (the dump hook), os,
 * util, prof_unwind and prof_dump.
 *
 * Sampling is by bytes: each thread counts down a distance drawn from an
 * exponential distribution of mean prof_sample; the allocation that crosses
 * zero is sampled. A block of size s is thus sampled with probability
 * 1 - exp(-s / prof_sample) whatever the sizes around it, which is what
 * pprof and jeprof assume when they scale a heap_v2 profile back up.
 *
 * A sample unwinds with no lock held, under a thread-local guard (the
 * unwinder's own allocations are served unsampled), then takes the table
 * lock to intern the stack and to make the block's record: kept in the
 * block's header for a small block, in its run descriptor for a big one
 * (malloc.c finds it there at free). The stack table and the records live
 * in metadata memory (meta.c), never in malloc.
 *
 * A thread that samples or frees samples often gets a thread record
 * (pthr, below): its stack cache, a free list of sample records and a
 * tally of its changes to the stacks' counters. A sample whose stack the
 * cache knows then takes no lock at all, to record or to drop: the lock
 * pair at each end cost more than the rest of the sample (64 KiB blocks:
 * about 120 of 640 instructions and 4 of the sample's locked
 * instructions; big blocks had a table of their own, with its lock, and
 * a filter byte per page for frees to read). Readers of the counters fold every
 * tally in first, under the table lock (xa_prof_tables_lock). */
#define _GNU_SOURCE
#include "prof.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "config.h"
#include "init.h"
#include "lock.h"
#include "meta.h"
#include "os.h"
#include "prof_dump.h"
#include "prof_math.h"
#include "prof_stack_cache.h"
#include "prof_unwind.h"
#include "stats.h"
#include "util.h"

__thread int64_t xa_prof_left __attribute__((tls_model("initial-exec")));
bool xa_prof_on;

/* The stack table starts at 512 bytes of buckets (carved from a metadata
 * page that is resident anyway: a profiler that has taken no sample costs
 * no page of its own) and doubles when it holds twice as many entries as
 * buckets; the old bucket arrays stay in metadata (at most as much
 * again). Buckets are hit at random, so a table that started large would
 * make all its pages resident after a few dozen samples. */
#define STACK_BITS_MIN 6
#define TABLE_BITS_MAX 24
/* Before the module is booted a thread re-checks after this many bytes. */
#define PRE_BOOT_DISTANCE ((int64_t)1 << 20)
#define NEVER INT64_MAX

/* A sampled block, pointed at by its header (small) or its descriptor
 * (big). Records are recycled through free lists. */
typedef struct sample {
    struct sample *next;
    void *ptr; /* the block's user pointer; NULL once released */
    xa_prof_stack *stack;
    uint64_t size;
    uint64_t est; /* estimated bytes this sample stands for */
} sample;

static xa_lock prof_lock = XA_LOCK_INIT(XA_RANK_PROF);
static bool booted;        /* xa_prof_boot() ran (either way) */
static bool enabled;       /* prof:true at boot and the tables exist */
/* Why no allocation may be sampled now, whatever the thread (one byte
 * for the sample's one test): */
#define HELD_BY_CTOR 1u   /* the library's constructor has not run: libc may not be up */
#define HELD_BY_FORK 2u   /* this process is a fork child: never unwind */
static uint8_t held = HELD_BY_CTOR;
static uint64_t rate;      /* prof_sample at boot */
static xa_prof_stack **stack_buckets;
static unsigned stack_bits;
static xa_prof_stack *stacks_all;
static size_t nstacks;
static sample *free_samples;
/* Estimated live bytes of every sampled block; the base the prof_interval
 * growth is measured from (the lowest estimate since the last dump). */
static uint64_t live_est_total;
static uint64_t interval_base;

static __thread bool guard __attribute__((tls_model("initial-exec")));
static __thread bool thread_ready __attribute__((tls_model("initial-exec")));
static __thread uint64_t rng_state __attribute__((tls_model("initial-exec")));

/* ---- random distances ---- */

static uint64_t rng_next(void)
{
    /* xorshift64*: good enough for sample spacing, and allocation-free. */
    uint64_t x = rng_state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    rng_state = x;
    return x * 0x2545f4914f6cdd1dULL;
}

/* An exponentially distributed distance of mean rate bytes (at least 1). */
static xa_prof_ln_entry ln_table[XA_PROF_LN_BUCKETS]; /* set at boot */
static double rate_d, inv_rate_d;                       /* rate, 1 / rate */

static inline __attribute__((always_inline)) int64_t next_distance(void)
{
    double d = xa_prof_neg_ln_unit(ln_table, (rng_next() >> 11) + 1) * rate_d;
    if (d < 1.0)
        return 1;
    if (d > 9.0e18)
        return NEVER;
    return (int64_t)d;
}

static void thread_setup(void)
{
    uint64_t seed = xa_os_now_ns() ^ ((uint64_t)(uintptr_t)&guard * 0x9e3779b97f4a7c15ULL) ^
                    ((uint64_t)xa_os_gettid() << 32);
    rng_state = seed ? seed : 0x853c49e6748fea9bULL;
    thread_ready = true;
}

/* Bytes a sample of size bytes stands for: size / P(sampled). */
static inline uint64_t estimate(uint64_t size)
{
    double x = (double)size * inv_rate_d;
    if (x >= 40.0)
        return size; /* (P is 1 to the last bit) */
    return (uint64_t)(xa_prof_size_over_p(x) * rate_d);
}

/* The last size estimated and its estimate (prof_lock held): a program
 * that samples blocks of one size over and over (a buffer cycled, most
 * big blocks) pays for the series once. */
static uint64_t last_est_size = UINT64_MAX, last_est; /* (no request is that big) */

static uint64_t estimate_cached(uint64_t size)
{
    if (size != last_est_size) {
        last_est = estimate(size);
        last_est_size = size;
    }
    return last_est;
}

/* ---- tables (prof_lock held) ---- */

static uint64_t stack_hash(const uintptr_t *pcs, unsigned depth)
{
    uint64_t h = 0xcbf29ce484222325ULL ^ depth;
    for (unsigned i = 0; i < depth; i++) {
        h ^= pcs[i];
        h *= 0x100000001b3ULL;
        h ^= h >> 29;
    }
    return h * 0x9e3779b97f4a7c15ULL; /* the bucket is taken from the top bits */
}

static size_t stack_bucket(uint64_t h)
{
    return (size_t)(h >> (64 - stack_bits));
}

static void stacks_grow(void)
{
    if (stack_bits >= TABLE_BITS_MAX)
        return;
    size_t n = (size_t)1 << stack_bits;
    xa_prof_stack **nb = xa_meta_alloc(2 * n * sizeof *nb, 64);
    if (!nb)
        return;
    xa_prof_stack **old = stack_buckets;
    stack_bits++;
    for (size_t i = 0; i < n; i++) {
        for (xa_prof_stack *s = old[i], *next; s; s = next) {
            next = s->next;
            size_t b = stack_bucket(s->hash);
            s->next = nb[b];
            nb[b] = s;
        }
    }
    stack_buckets = nb;
}

static xa_prof_stack *stack_intern(const uintptr_t *pcs, unsigned depth)
{
    uint64_t h = stack_hash(pcs, depth);
    xa_prof_stack **bucket = &stack_buckets[stack_bucket(h)];
    for (xa_prof_stack *s = *bucket; s; s = s->next) {
        if (s->hash != h || s->depth != depth)
            continue;
        unsigned i = 0;
        while (i < depth && s->pcs[i] == pcs[i])
            i++;
        if (i == depth)
            return s;
    }
    xa_prof_stack *s = xa_meta_alloc(sizeof *s + depth * sizeof(uintptr_t), 16);
    if (!s)
        return NULL;
    s->hash = h;
    s->depth = depth;
    for (unsigned i = 0; i < depth; i++)
        s->pcs[i] = pcs[i];
    s->next = *bucket;
    *bucket = s;
    s->next_all = stacks_all;
    __atomic_store_n(&stacks_all, s, __ATOMIC_RELEASE);
    __atomic_store_n(&nstacks, nstacks + 1, __ATOMIC_RELAXED);
    if (nstacks > ((size_t)2 << stack_bits))
        stacks_grow();
    return s;
}

static void counter_add(uint64_t *c, uint64_t v)
{
    __atomic_store_n(c, *c + v, __ATOMIC_RELAXED);
}

/* Wrapping: a stack's counters are sums of changes made directly and of
 * tallies folded in any order (a free in one thread may be folded before
 * the allocation tallied in another), so they may dip below 0 between
 * folds; after xa_prof_tables_lock() they are exact (readers that read
 * without it clamp, xa_prof_counter). */
static void counter_sub(uint64_t *c, uint64_t v)
{
    __atomic_store_n(c, *c - v, __ATOMIC_RELAXED);
}

/* Adds record r (its size and stack set) to the live counters. */
static void sample_count(sample *r)
{
    r->est = estimate_cached(r->size);
    xa_prof_stack *st = r->stack;
    counter_add(&st->live_count, 1);
    counter_add(&st->live_bytes, r->size);
    counter_add(&st->live_est, r->est);
    counter_add(&live_est_total, r->est);
}

/* Takes record r out of the live counters. */
static void sample_uncount(sample *r)
{
    xa_prof_stack *st = r->stack;
    counter_sub(&st->live_count, 1);
    counter_sub(&st->live_bytes, r->size);
    counter_sub(&st->live_est, r->est);
    counter_sub(&live_est_total, r->est);
    if (live_est_total < interval_base)
        interval_base = live_est_total;
}

static void sample_release(sample *r)
{
    r->ptr = NULL;
    r->next = free_samples;
    free_samples = r;
}

/* A new record of p; NULL when metadata memory ran out. */
static sample *sample_new(void *p, uint64_t size, xa_prof_stack *st)
{
    sample *r = free_samples;
    if (r)
        free_samples = r->next;
    else if (!(r = xa_meta_alloc(sizeof *r, 16)))
        return NULL;
    r->next = NULL;
    r->ptr = p;
    r->stack = st;
    r->size = size;
    sample_count(r);
    counter_add(&st->alloc_count, 1);
    counter_add(&st->alloc_bytes, size);
    return r;
}

/* ---- slow paths ---- */

static void maybe_interval_dump(void)
{
    uint64_t interval = xa_opt.prof_interval;
    if (!interval)
        return;
    uint64_t live = __atomic_load_n(&live_est_total, __ATOMIC_RELAXED);
    uint64_t base = __atomic_load_n(&interval_base, __ATOMIC_RELAXED);
    if (live < base + interval)
        return;
    char msg[160];
    if (xa_prof_dump_try("interval", msg, sizeof msg) != EBUSY) {
        xa_prof_tables_lock();
        interval_base = live_est_total;
        xa_prof_tables_unlock();
    }
}

XA_PROF_PATH bool xa_prof_sample_begin(void)
{
    /* A thread is ready only once the module is booted and enabled: one
     * test for the three on every sample. */
    if (xa_likely(thread_ready)) {
        xa_prof_left = next_distance();
        return !guard && !__atomic_load_n(&held, __ATOMIC_ACQUIRE) &&
               __atomic_load_n(&xa_opt.prof_active, __ATOMIC_RELAXED);
    }
    if (!__atomic_load_n(&booted, __ATOMIC_ACQUIRE)) {
        xa_prof_left = PRE_BOOT_DISTANCE;
        return false;
    }
    if (!enabled) {
        xa_prof_left = NEVER;
        return false;
    }
    /* The first crossing of a thread only arms its counter. */
    thread_setup();
    xa_prof_left = next_distance();
    return false;
}

/* ---- thread records: stack cache, sample records, tally ----
 * A thread gets its record at its second sample or sampled free (one that
 * samples once is not worth it) from metadata memory, and gives it back
 * at exit through a thread-specific key's destructor, for the next thread
 * to reuse; records are never unmapped, and every one ever made stays on
 * pt_all for the folders.
 *
 * The tally: per stack the thread touched lately (a direct-mapped slot),
 * the sums of its changes to that stack's counters, written by the owner
 * alone under a sequence count (odd while it writes), and the part of
 * them already folded into the stack (written under prof_lock only). A
 * fold, under prof_lock, adds the difference to the stack and moves the
 * folded part up: by the owner when a slot changes stack and at thread
 * exit, by xa_prof_tables_lock() for every thread (readers). With
 * prof_interval set the live total must be current at each sample: no
 * tally then (the locked path, as before). */
#define PT_SLOTS 16
/* Sample records a thread keeps on its free list: past PT_RECS_MAX it
 * gives PT_RECS_BATCH back (a thread that frees what another allocates),
 * and takes PT_RECS_BATCH at a time when it runs out. */
#define PT_RECS_MAX 64
#define PT_RECS_BATCH 16

enum { C_LIVE_COUNT, C_LIVE_BYTES, C_LIVE_EST, C_ALLOC_COUNT, C_ALLOC_BYTES, C_N };

typedef struct pt_slot {
    xa_prof_stack *stack; /* NULL: unused; changed under prof_lock only */
    uint64_t sum[C_N];    /* the owner's (sequence count) */
    uint64_t folded[C_N]; /* prof_lock */
} pt_slot;

typedef struct pthr {
    xa_sc_cache sc;
    /* The top of the stack the cache's entries were found on (0: none):
     * a record reused by a thread on the same stack memory (glibc hands
     * an exited thread's stack to the next thread) keeps them. */
    uintptr_t sc_top;
    struct pthr *next_free; /* pt_free (prof_lock) */
    struct pthr *next_all;  /* pt_all, never unlinked */
    unsigned seq;           /* odd while the owner writes sum[] */
    unsigned nrecs;
    sample *recs;                /* the owner's free records */
    uint64_t est_size, est;      /* the last size estimated and its estimate */
    pt_slot slot[PT_SLOTS];
} pthr;

#define PT_DEAD ((pthr *)1) /* the thread is exiting: no record */
static pthread_key_t pt_key;
static bool pt_key_made;
static bool pt_tally;          /* tallies in use (prof_interval 0) */
static pthr *pt_free;          /* prof_lock */
static pthr *pt_all;           /* prof_lock to add; acquire-loaded */
static __thread pthr *pt_tls __attribute__((tls_model("initial-exec")));
static __thread bool pt_seen __attribute__((tls_model("initial-exec")));

static uint64_t *stack_counter(xa_prof_stack *st, int c)
{
    switch (c) {
    case C_LIVE_COUNT: return &st->live_count;
    case C_LIVE_BYTES: return &st->live_bytes;
    case C_LIVE_EST: return &st->live_est;
    case C_ALLOC_COUNT: return &st->alloc_count;
    default: return &st->alloc_bytes;
    }
}

/* Adds sum - folded of slot sl (sum read as copied in sum) to its stack.
 * Pre: prof_lock held. */
static void pt_fold_slot(pt_slot *sl, const uint64_t *sum)
{
    xa_prof_stack *st = sl->stack;
    for (int c = 0; c < C_N; c++) {
        uint64_t d = sum[c] - sl->folded[c];
        if (d) {
            counter_add(stack_counter(st, c), d);
            if (c == C_LIVE_EST)
                counter_add(&live_est_total, d);
            sl->folded[c] = sum[c];
        }
    }
}

/* Folds thread record t. Pre: prof_lock held. A record whose owner stays
 * in its write section (preempted, or interrupted by a signal handler on
 * this very thread) for about 10 ms is left for the next fold: a reader
 * then misses a few of that thread's latest changes, never waits on it. */
static void pt_fold(pthr *t)
{
    uint64_t sum[PT_SLOTS][C_N];
    for (unsigned tries = 0;; tries++) {
        unsigned s1 = __atomic_load_n(&t->seq, __ATOMIC_ACQUIRE);
        if (!(s1 & 1)) {
            for (int i = 0; i < PT_SLOTS; i++)
                for (int c = 0; c < C_N; c++)
                    sum[i][c] = __atomic_load_n(&t->slot[i].sum[c], __ATOMIC_RELAXED);
            __atomic_thread_fence(__ATOMIC_ACQUIRE);
            if (__atomic_load_n(&t->seq, __ATOMIC_RELAXED) == s1)
                break;
        }
        if (t == pt_tls || tries >= 1000)
            return;
        if (tries >= 10)
            xa_os_sleep_ns(10000);
    }
    for (int i = 0; i < PT_SLOTS; i++)
        if (t->slot[i].stack)
            pt_fold_slot(&t->slot[i], sum[i]);
}

static void pt_fold_all(void)
{
    for (pthr *t = __atomic_load_n(&pt_all, __ATOMIC_ACQUIRE); t; t = t->next_all)
        pt_fold(t);
}

/* The owner's write section around changes to sum[] (a seqlock: the
 * folder reads between two equal even counts). */
static inline void pt_write_begin(pthr *t)
{
    __atomic_store_n(&t->seq, t->seq + 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
}

static inline void pt_write_end(pthr *t)
{
    __atomic_store_n(&t->seq, t->seq + 1, __ATOMIC_RELEASE);
}

static inline void pt_sum_add(pt_slot *sl, int c, uint64_t v)
{
    __atomic_store_n(&sl->sum[c], sl->sum[c] + v, __ATOMIC_RELAXED);
}

/* Where t tallies stack st (direct-mapped: it may hold another stack). */
static inline pt_slot *pt_slot_at(pthr *t, xa_prof_stack *st)
{
    return &t->slot[((uint64_t)(uintptr_t)st * 0x9e3779b97f4a7c15ULL) >> 60];
}

/* Slot sl of t, of another stack, folded and taken over for stack st
 * (errno kept: see xa_prof_sample_record). */
static XA_NOINLINE pt_slot *pt_slot_take(pthr *t, pt_slot *sl, xa_prof_stack *st)
{
    int saved_errno = errno;
    xa_lock_acquire(&prof_lock);
    if (sl->stack)
        pt_fold_slot(sl, sl->sum); /* (only the owner writes sum) */
    pt_write_begin(t);
    for (int c = 0; c < C_N; c++) {
        __atomic_store_n(&sl->sum[c], 0, __ATOMIC_RELAXED);
        sl->folded[c] = 0;
    }
    sl->stack = st;
    pt_write_end(t);
    xa_lock_release(&prof_lock);
    errno = saved_errno;
    return sl;
}

/* t's slot for stack st. */
static inline pt_slot *pt_slot_for(pthr *t, xa_prof_stack *st)
{
    pt_slot *sl = pt_slot_at(t, st);
    return xa_likely(sl->stack == st) ? sl : pt_slot_take(t, sl, st);
}

/* Gives the owner's free records beyond keep back to free_samples.
 * Pre: prof_lock held. */
static void pt_recs_trim(pthr *t, unsigned keep)
{
    while (t->nrecs > keep) {
        sample *r = t->recs;
        t->recs = r->next;
        t->nrecs--;
        sample_release(r);
    }
}

static void pt_thread_exit(void *arg)
{
    pthr *t = arg;
    pt_tls = PT_DEAD; /* (a later destructor's sample must not make another) */
    xa_lock_acquire(&prof_lock);
    for (int i = 0; i < PT_SLOTS; i++) {
        pt_slot *sl = &t->slot[i];
        if (sl->stack)
            pt_fold_slot(sl, sl->sum);
        /* (No write section: t is on no thread now, and readers hold
         * prof_lock.) */
        for (int c = 0; c < C_N; c++)
            sl->sum[c] = sl->folded[c] = 0;
        sl->stack = NULL;
    }
    pt_recs_trim(t, 0);
    t->est_size = 0;
    t->next_free = pt_free;
    pt_free = t;
    xa_lock_release(&prof_lock);
}

/* Gives this thread a record (Pre: it has none, the key is made): the
 * free one last used on this thread's stack, else (unless same_stack)
 * another free one or a new one; NULL when it gets none. */
static pthr *pt_attach(bool same_stack)
{
    pthr *t;
    bool old_guard = guard;
    guard = true; /* (setspecific may allocate, for a key past the first 32) */
    uintptr_t top = xa_prof_stack_top((uintptr_t)__builtin_frame_address(0));
    xa_lock_acquire(&prof_lock);
    /* (A few records: as many as threads exited lately.) */
    pthr **link = same_stack ? NULL : &pt_free;
    for (pthr **l = &pt_free; top && *l; l = &(*l)->next_free) {
        if ((*l)->sc_top == top) {
            link = l;
            break;
        }
    }
    if (!link) {
        xa_lock_release(&prof_lock);
        guard = old_guard;
        return NULL;
    }
    t = *link;
    if (t)
        *link = t->next_free;
    xa_lock_release(&prof_lock);
    if (t) {
        /* Entries read words in [anchor, sc_top) of the stack they were
         * found on: safe, and worth keeping, only on the same stack. A
         * thread per request reusing the last one's stack then finds its
         * call stacks cached from its first sample (no unwind). */
        if (!top || t->sc_top != top) {
            memset(&t->sc, 0, sizeof t->sc);
            t->sc_top = 0;
        }
    } else if ((t = xa_meta_alloc(sizeof *t, XA_CACHELINE))) {
        xa_lock_acquire(&prof_lock);
        t->next_all = pt_all;
        __atomic_store_n(&pt_all, t, __ATOMIC_RELEASE);
        xa_lock_release(&prof_lock);
    }
    if (!t || pthread_setspecific(pt_key, t) != 0) {
        if (t)
            pt_thread_exit(t);
        pt_tls = PT_DEAD;
        guard = old_guard;
        return NULL;
    }
    pt_tls = t;
    guard = old_guard;
    return t;
}

/* This thread's record, made on its second call; NULL when it has none. */
static pthr *pt_get(void)
{
    pthr *t = pt_tls;
    if (xa_likely(t > PT_DEAD))
        return t;
    if (t == PT_DEAD || !pt_key_made)
        return NULL;
    if (!pt_seen) {
        pt_seen = true;
        return NULL;
    }
    return pt_attach(false);
}

/* Remembers the stack st just unwound for key (ra, anchor) when the
 * policy says so (xa_sc_should_fill): raw[0..used) are the return
 * addresses that decided it, raw[0] the key's own. Pre: guard set. */
static void sc_remember(uintptr_t ra, uintptr_t anchor, const uintptr_t *raw, unsigned used,
                        xa_prof_stack *st)
{
    pthr *t = pt_get();
    if (!t)
        return;
    xa_sc_entry *e = xa_sc_slot(&t->sc, ra, anchor);
    if (!xa_sc_should_fill(e, ra, anchor))
        return;
    uintptr_t top = xa_prof_stack_top(anchor);
    if (!top || (anchor & 7) != 0 || (t->sc_top && t->sc_top != top))
        return;
    for (unsigned i = 0; i < used; i++)
        if (xa_prof_is_sigreturn(raw[i]))
            return;
    t->sc_top = top;
    (void)xa_sc_fill(e, ra, anchor, top, raw, used, st);
}

/* The estimate for a block of size bytes, through t's one-entry cache (a
 * thread sampling blocks of one size pays for the series once). */
static inline uint64_t pt_estimate(pthr *t, uint64_t size)
{
    if (size != t->est_size) {
        t->est = estimate(size);
        t->est_size = size;
    }
    return t->est;
}

/* Record r, t's first free one, made for block p (size bytes, stack st)
 * and counted in t's slot sl of st. No call: the sample's common case
 * (xa_prof_sample_record) runs it with no frame to save registers in. */
static inline __attribute__((always_inline)) void pt_fill(pthr *t, pt_slot *sl, sample *r,
                                                          void *p, uint64_t size,
                                                          xa_prof_stack *st)
{
    t->recs = r->next;
    t->nrecs--;
    r->next = NULL;
    r->ptr = p;
    r->stack = st;
    r->size = size;
    r->est = pt_estimate(t, size);
    pt_write_begin(t);
    pt_sum_add(sl, C_LIVE_COUNT, 1);
    pt_sum_add(sl, C_LIVE_BYTES, size);
    pt_sum_add(sl, C_LIVE_EST, r->est);
    pt_sum_add(sl, C_ALLOC_COUNT, 1);
    pt_sum_add(sl, C_ALLOC_BYTES, size);
    pt_write_end(t);
}

/* A record of block p (size bytes, stack st) counted in t's tally,
 * without prof_lock while t has a free record and a slot of st; NULL
 * when metadata memory ran out. Keeps errno. */
static sample *pt_record(pthr *t, void *p, uint64_t size, xa_prof_stack *st)
{
    sample *r = t->recs;
    if (xa_unlikely(!r)) {
        int saved_errno = errno;
        xa_lock_acquire(&prof_lock);
        for (unsigned i = 0; i < PT_RECS_BATCH && free_samples; i++) {
            r = free_samples;
            free_samples = r->next;
            r->next = t->recs;
            t->recs = r;
            t->nrecs++;
        }
        xa_lock_release(&prof_lock);
        if (!t->recs) {
            sample *v = xa_meta_alloc(PT_RECS_BATCH * sizeof *v, 16);
            errno = saved_errno;
            if (!v)
                return NULL;
            for (unsigned i = 0; i < PT_RECS_BATCH; i++) {
                v[i].next = t->recs;
                t->recs = &v[i];
            }
            t->nrecs = PT_RECS_BATCH;
        }
        errno = saved_errno;
        r = t->recs;
    }
    pt_fill(t, pt_slot_for(t, st), r, p, size, st);
    return r;
}

/* Record r leaves the live counts through t's tally (r stays valid). */
static void pt_uncount(pthr *t, sample *r)
{
    pt_slot *sl = pt_slot_for(t, r->stack);
    pt_write_begin(t);
    pt_sum_add(sl, C_LIVE_COUNT, (uint64_t)-1);
    pt_sum_add(sl, C_LIVE_BYTES, -r->size);
    pt_sum_add(sl, C_LIVE_EST, -r->est);
    pt_write_end(t);
}

/* Record r, out of the counts, goes onto t's free list. */
static void pt_release(pthr *t, sample *r)
{
    r->ptr = NULL;
    r->next = t->recs;
    t->recs = r;
    if (xa_unlikely(++t->nrecs > PT_RECS_MAX)) {
        xa_lock_acquire(&prof_lock);
        pt_recs_trim(t, PT_RECS_MAX - PT_RECS_BATCH);
        xa_lock_release(&prof_lock);
    }
}

/* Record r leaves the profile through t's tally; r goes onto t's list. */
static void pt_drop(pthr *t, sample *r)
{
    pt_uncount(t, r);
    pt_release(t, r);
}

/* Records a sample with stack st (or of the stack in pcs[0..depth) when
 * st is NULL). */
static void record_locked(void *p, size_t size, void **slot, xa_prof_stack *st,
                          const uintptr_t *pcs, unsigned depth, xa_prof_stack **interned)
{
    xa_lock_acquire(&prof_lock);
    if (!st)
        st = stack_intern(pcs, depth);
    *slot = st ? sample_new(p, size, st) : NULL;
    xa_lock_release(&prof_lock);
    *interned = st;
}

/* xa_prof_sample_record's other cases (guard set): a thread's first
 * sample, a stack the cache does not know (the unwind), the locked
 * record of prof_interval. Its own function: the common case then needs
 * neither its frame nor the registers it saves. (ra, anchor): the
 * caller's key; its unwind starts at the frame that returns to ra. */
static XA_NOINLINE void record_miss(void *p, size_t size, void **slot, pthr *t, uintptr_t ra,
                                    uintptr_t anchor)
{
    int saved_errno = errno;
    xa_prof_stack *st = NULL;
    /* A thread's first sample takes the record an exited thread left on
     * this stack, if one is free: its cache may know the stack already. */
    if (xa_unlikely(!t) && pt_key_made && __atomic_load_n(&pt_free, __ATOMIC_RELAXED))
        t = pt_attach(true);
    if (t > PT_DEAD)
        st = xa_sc_lookup(xa_sc_slot(&t->sc, ra, anchor), ra, anchor);
    if (st) {
        if (pt_tally) /* the record with no lock (the tally) */
            *slot = pt_record(t, p, size, st);
        else
            record_locked(p, size, slot, st, NULL, 0, &st);
    } else {
        uintptr_t raw[XA_PROF_RAW_MAX], pcs[XA_PROF_MAX_DEPTH];
        unsigned n = xa_prof_backtrace_raw(raw, XA_PROF_RAW_MAX);
        /* raw[] starts in the walk's own frames, below the caller's. */
        unsigned j = 0;
        while (j < n && raw[j] != ra)
            j++;
        if (j == n)
            j = 0;
        unsigned used;
        unsigned depth = xa_prof_backtrace_filter(raw + j, n - j, pcs, XA_PROF_MAX_DEPTH, &used);
        record_locked(p, size, slot, NULL, pcs, depth, &st);
        if (st && raw[j] == ra)
            sc_remember(ra, anchor, raw + j, used, st);
    }
    maybe_interval_dump();
    guard = false;
    errno = saved_errno;
}

XA_PROF_PATH void *xa_prof_sample_record(void *p, size_t size, void **slot)
{
    guard = true;
    /* The key of the stack cache: this frame (where it lies decides where
     * every outer frame's return address is saved) and its caller. */
    uintptr_t anchor = (uintptr_t)__builtin_frame_address(0);
    uintptr_t ra = (uintptr_t)__builtin_return_address(0);
    pthr *t = pt_tls;
    xa_prof_stack *st;
    /* The common case: a stack the cache knows, a free record at hand
     * and the stack's tally slot: no call, no lock, and errno is not
     * saved (two calls of __errno_location). */
    if (xa_likely(t > PT_DEAD) && xa_likely(pt_tally) &&
        (st = xa_sc_lookup(xa_sc_slot(&t->sc, ra, anchor), ra, anchor)) != NULL) {
        sample *r = t->recs;
        pt_slot *sl = pt_slot_at(t, st);
        if (xa_likely(r != NULL && sl->stack == st)) {
            pt_fill(t, sl, r, p, size, st);
            *slot = r;
            guard = false;
            return p;
        }
    }
    /* (Not a tail call: this frame, the anchor, stays where it is.) */
    record_miss(p, size, slot, t, ra, anchor);
    return p;
}

XA_PROF_PATH void xa_prof_sample_drop(void *rec)
{
    sample *r = rec;
    pthr *t;
    if (xa_likely(pt_tally) && (t = pt_get()) != NULL) {
        pt_drop(t, r);
        return;
    }
    xa_lock_acquire(&prof_lock);
    sample_uncount(r);
    sample_release(r);
    xa_lock_release(&prof_lock);
}

XA_PROF_PATH void *xa_prof_sample_of(void *const *slot, const void *p)
{
    sample *r = *slot;
    return r && r->ptr == p ? r : NULL;
}

XA_PROF_PATH void xa_prof_sample_free(void **slot, const void *p)
{
    sample *r = *slot;
    if (!r || r->ptr != p)
        return;
    *slot = NULL;
    xa_prof_sample_drop(r);
}

/* take and put, through the tally when the thread has one: a sampled
 * block that realloc moves (a buffer growing through the size classes)
 * costs no lock pair at either end. */
XA_SLOW_PATH void *xa_prof_sample_take(void *rec)
{
    pthr *t;
    if (xa_likely(pt_tally) && (t = pt_get()) != NULL) {
        pt_uncount(t, rec);
        return rec;
    }
    xa_lock_acquire(&prof_lock);
    sample_uncount(rec);
    xa_lock_release(&prof_lock);
    return rec;
}

XA_SLOW_PATH void xa_prof_sample_put(void *rec, void *p, size_t size, void **slot)
{
    sample *r = rec;
    pthr *t;
    if (xa_likely(pt_tally) && (t = pt_get()) != NULL) {
        if (!p) {
            pt_release(t, r); /* realloc(p, 0) freed p */
            return;
        }
        uint64_t growth = 0;
        if (size != SIZE_MAX) {
            growth = size > r->size ? size - r->size : 0;
            r->size = size;
        }
        r->est = pt_estimate(t, r->size);
        r->ptr = p;
        pt_slot *sl = pt_slot_for(t, r->stack);
        pt_write_begin(t);
        pt_sum_add(sl, C_LIVE_COUNT, 1);
        pt_sum_add(sl, C_LIVE_BYTES, r->size);
        pt_sum_add(sl, C_LIVE_EST, r->est);
        pt_sum_add(sl, C_ALLOC_BYTES, growth);
        pt_write_end(t);
        *slot = r;
        return;
    }
    xa_lock_acquire(&prof_lock);
    if (!p) {
        sample_release(r); /* realloc(p, 0) freed p */
    } else {
        /* Still the same allocation for the profile: same stack. */
        if (size != SIZE_MAX) {
            if (size > r->size)
                counter_add(&r->stack->alloc_bytes, size - r->size);
            r->size = size;
        }
        r->ptr = p;
        sample_count(r);
        *slot = r;
    }
    xa_lock_release(&prof_lock);
}

XA_SLOW_PATH void xa_prof_sample_resize(void *rec, size_t size)
{
    /* Changed under prof_lock alone (or in the tally): only the thread
     * that owns the block (this one, in realloc) frees or moves it. */
    sample *r = rec;
    uint64_t growth = size > r->size ? size - r->size : 0;
    pthr *t;
    if (xa_likely(pt_tally) && (t = pt_get()) != NULL) {
        /* The differences through the tally: no prof_lock per step. */
        uint64_t est = pt_estimate(t, size);
        pt_slot *sl = pt_slot_for(t, r->stack);
        pt_write_begin(t);
        pt_sum_add(sl, C_LIVE_BYTES, (uint64_t)size - r->size);
        pt_sum_add(sl, C_LIVE_EST, est - r->est);
        pt_sum_add(sl, C_ALLOC_BYTES, growth);
        pt_write_end(t);
        r->size = size;
        r->est = est;
        return;
    }
    xa_lock_acquire(&prof_lock);
    sample_uncount(r);
    counter_add(&r->stack->alloc_bytes, growth);
    r->size = size;
    sample_count(r);
    xa_lock_release(&prof_lock);
}

/* ---- module interface ---- */

xa_prof_stack *xa_prof_stacks_head(void)
{
    return __atomic_load_n(&stacks_all, __ATOMIC_ACQUIRE);
}

size_t xa_prof_stack_count(void)
{
    return __atomic_load_n(&nstacks, __ATOMIC_RELAXED);
}

void xa_prof_tables_lock(void)
{
    xa_lock_acquire(&prof_lock);
    pt_fold_all();
}
void xa_prof_tables_unlock(void) { xa_lock_release(&prof_lock); }

bool xa_prof_guard(bool on)
{
    bool old = guard;
    guard = on;
    return old;
}

uint64_t xa_prof_rate(void) { return rate; }

bool xa_prof_enabled(void) { return enabled; }

static int dump_hook(char *msg, unsigned long cap)
{
    return xa_prof_dump("request", msg, cap);
}

void xa_prof_boot(void)
{
    if (__atomic_load_n(&booted, __ATOMIC_ACQUIRE))
        return;
    if (xa_opt.prof) {
        rate = xa_opt.prof_sample ? xa_opt.prof_sample : 1;
        rate_d = (double)rate;
        inv_rate_d = 1.0 / rate_d;
        xa_prof_ln_table_init(ln_table);
        stack_bits = STACK_BITS_MIN;
        stack_buckets = xa_meta_alloc(sizeof *stack_buckets << stack_bits, 64);
        uintptr_t lo, hi;
        if (xa_prof_maps_range((uintptr_t)&xa_prof_boot, &lo, &hi) == 0)
            xa_prof_unwind_boot(lo, hi);
        if (xa_prof_maps_range(xa_prof_unwind_libc_probe(), &lo, &hi) == 0)
            xa_prof_unwind_boot_libc(lo, hi);
        pt_key_made = pthread_key_create(&pt_key, pt_thread_exit) == 0;
        pt_tally = xa_opt.prof_interval == 0;
        if (stack_buckets) {
            enabled = true;
            __atomic_store_n(&xa_prof_on, true, __ATOMIC_RELEASE);
            __atomic_store_n(&xa_stats_dump_hook, dump_hook, __ATOMIC_RELEASE);
        } else {
            xa_message("prof: cannot set up the profiler (out of memory); profiling is off");
        }
    }
    __atomic_store_n(&booted, true, __ATOMIC_RELEASE);
}

/* prof_lock is never held while waiting for anything but metadata
 * memory and system calls. */
void xa_prof_fork_prepare(void)
{
    xa_lock_acquire(&prof_lock);
}

void xa_prof_fork_parent(void)
{
    xa_lock_release(&prof_lock);
}

void xa_prof_fork_child(void)
{
    xa_lock_reset(&prof_lock);
    /* A thread that was in its tally's write section is gone: its counts
     * stand as they are (a fold would otherwise wait for it). */
    for (pthr *t = pt_all; t; t = t->next_all)
        if (t != pt_tls)
            t->seq &= ~1u;
    xa_prof_dump_fork_child();
    __atomic_fetch_or(&held, HELD_BY_FORK, __ATOMIC_RELAXED);
}

/* ---- process start and exit ---- */

/* Constructors run after those of the libraries this one depends on (libc,
 * libunwind): from here on unwinding is safe. Nothing is unwound before. */
__attribute__((constructor)) static void prof_ctor(void)
{
    __atomic_fetch_and(&held, (uint8_t)~HELD_BY_CTOR, __ATOMIC_RELEASE);
}

__attribute__((destructor)) static void prof_dtor(void)
{
    if (!enabled)
        return;
    bool old = xa_prof_guard(true);
    if (xa_opt.prof_final) {
        char msg[256];
        xa_prof_dump("final", msg, sizeof msg);
    }
    if (xa_opt.prof_leak)
        xa_prof_leak_report();
    xa_prof_guard(old);
}
