/* check_heap.c: unit tests of the thread heap (src/heap.c): the spare
 * slab a big class keeps when one of its slabs empties, and the foreign
 * stacks a thread keeps of blocks it frees for others (bounded, handed
 * back in chains when the thread exits), and the adoption of an exited
 * thread's slab by the thread that frees into it (another arena's slab:
 * its blocks kept like any remote block), and the trim of free
 * big blocks, and the purger's idle reclaim of a parked thread's empty
 * slabs, and a rarely used class borrowing blocks from the class of twice
 * its size, and an exited thread's empty slabs kept for the next thread.
 * Each test runs in its own process (Check forks), so the heap
 * starts empty. */
#include <check.h>

#include "unit/unit_main.h"
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "heap.h"
#include "invariant.h"
#include "os.h"

void *xa_test_malloc(size_t size);
void xa_test_free(void *p);
int xa_test_malloc_trim(size_t pad);

static void assert_clean(void)
{
    char msg[256];
    size_t n = xa_invariant_check(msg, sizeof msg);
    ck_assert_msg(n == 0, "%zu problems, first: %s", n, msg);
}

static xa_slab *slab_of(void *p) { return xa_run_of(xa_chunk_of(p), p); }

static bool page_resident(const void *p)
{
    unsigned char v = 0;
    void *page = (void *)((uintptr_t)p & ~(uintptr_t)4095);
    ck_assert_int_eq(mincore(page, 4096, &v), 0);
    return v & 1;
}

/* Remote frees in h's unsettled ring, yet to take effect. */
static unsigned unsettled(xa_heap *h)
{
    unsigned n = 0;
    for (unsigned i = 0; i < XA_HEAP_UNSETTLED; i++)
        n += xa_heap_remote(h)->unsettled[i] != NULL;
    return n;
}

/* True when p waits in h's unsettled ring. */
static bool is_unsettled(xa_heap *h, const void *p)
{
    for (unsigned i = 0; i < XA_HEAP_UNSETTLED; i++)
        if (xa_heap_remote(h)->unsettled[i] == p)
            return true;
    return false;
}

/* True when p is in stack (or slab) f's free list. */
static bool on_list(const xa_slab *f, const void *p)
{
    for (uintptr_t q = f->free; q; q = ((const xa_block *)q)->next ^ xa_heap_secret)
        if (q == (uintptr_t)p)
            return true;
    return false;
}

static xa_slab *spare_of(xa_heap *h, unsigned cls)
{
    return atomic_load_explicit(&h->spare[cls], memory_order_relaxed);
}

START_TEST(emptied_big_slab_is_parked_reused_and_decayed)
{
    enum { SIZE = 65536, MAX = 64 };
    unsigned cls = xa_size_class(SIZE);
    uint32_t per = xa_classes[cls].blocks;
    ck_assert_uint_ge(SIZE, XA_TRIM_MIN_BLOCK); /* a class that keeps a spare */
    ck_assert_uint_le(3 * per, MAX);
    void *p[MAX];
    for (uint32_t i = 0; i < 3 * per; i++)
        ck_assert_ptr_nonnull(p[i] = xa_test_malloc(SIZE));
    xa_heap *h = xa_tls_heap;
    xa_slab *first = slab_of(p[0]), *second = slab_of(p[per]);
    ck_assert_ptr_ne(first, second);
    ck_assert_ptr_ne(first, h->cur[cls]);
    ck_assert_ptr_ne(second, h->cur[cls]);
    ck_assert_ptr_null(spare_of(h, cls));

    /* The first slab empties: kept as the spare, not given to the arena. */
    for (uint32_t i = 0; i < per; i++)
        xa_test_free(p[i]);
    ck_assert_ptr_eq(spare_of(h, cls), first);
    ck_assert_uint_eq(h->spare_count, 1);
    ck_assert_uint_eq(first->kind, XA_RUN_SMALL);
    assert_clean();

    /* A second one goes back to the arena: one spare per class. */
    for (uint32_t i = per; i < 2 * per; i++)
        xa_test_free(p[i]);
    ck_assert_ptr_eq(spare_of(h, cls), first);
    ck_assert_uint_ne(second->kind, XA_RUN_SMALL);
    assert_clean();

    /* The current slab is full: the next block comes from the spare. */
    void *q = xa_test_malloc(SIZE);
    ck_assert_ptr_eq(slab_of(q), first);
    ck_assert_ptr_null(spare_of(h, cls));
    ck_assert_uint_eq(h->spare_count, 0);
    assert_clean();

    /* The first slab is current now; the third empties and is parked,
     * then past decay_ms it goes back to the arena. */
    ck_assert_ptr_eq(h->cur[cls], first);
    xa_slab *third = slab_of(p[2 * per]);
    for (uint32_t i = 2 * per; i < 3 * per; i++)
        xa_test_free(p[i]);
    ck_assert_ptr_eq(spare_of(h, cls), third);
    xa_heaps_decay_caches(UINT64_MAX / 2);
    ck_assert_ptr_null(spare_of(h, cls));
    ck_assert_uint_eq(h->spare_count, 0);
    ck_assert_uint_ne(third->kind, XA_RUN_SMALL);
    xa_test_free(q);
    assert_clean();
}
END_TEST

void *xa_test_aligned_alloc(size_t align, size_t size);

START_TEST(rare_class_borrows_from_twice_its_size)
{
    xa_heap *h;
    /* No block of the 160-byte class at hand: an 80-byte block comes from
     * a slab of its own class at once. */
    void *own = xa_test_malloc(80);
    ck_assert_uint_eq(slab_of(own)->cls, xa_size_class(80));
    h = xa_tls_heap;
    ck_assert_uint_eq(h->borrowed[xa_size_class(80)], 0);

    /* The 96-byte class has a page carved: the 48-byte class's first
     * 1 KiB of blocks come from it, and stay its blocks in every way. */
    unsigned small = xa_size_class(48), lend = xa_size_class(96);
    ck_assert_uint_eq(xa_classes[lend].size, 2 * xa_classes[small].size);
    void *lender = xa_test_malloc(96);
    enum { LIMIT = 1024 / 48 };
    void *p[LIMIT + 1];
    for (int i = 0; i < LIMIT; i++) {
        ck_assert_ptr_nonnull(p[i] = xa_test_malloc(48));
        ck_assert_uint_eq(slab_of(p[i])->cls, lend);
        ck_assert_ptr_eq(slab_of(p[i]), slab_of(lender));
        memset(p[i], 0xab, 48);
    }
    ck_assert_uint_eq(h->borrowed[small], LIMIT);
    ck_assert_uint_eq(h->nmalloc[small], 0);
    assert_clean();
    /* Past 1 KiB the class gets its own slab, and borrows no more. */
    ck_assert_ptr_nonnull(p[LIMIT] = xa_test_malloc(48));
    ck_assert_uint_eq(slab_of(p[LIMIT])->cls, small);
    for (int i = 0; i <= LIMIT; i++)
        xa_test_free(p[i]);
    void *again = xa_test_malloc(48);
    ck_assert_uint_eq(slab_of(again)->cls, small);
    xa_test_free(again);
    assert_clean();

    /* Alignment holds: a 64-aligned 64-byte block borrowed from the
     * 128-byte class is 64-aligned. */
    void *big = xa_test_malloc(128);
    void *a = xa_test_aligned_alloc(64, 64);
    ck_assert_uint_eq(slab_of(a)->cls, xa_size_class(128));
    ck_assert_uint_eq((uintptr_t)a % 64, 0);
    xa_test_free(a);
    xa_test_free(big);
    xa_test_free(lender);
    xa_test_free(own);
    assert_clean();
}
END_TEST

/* Place of s in the class list of cls (1: the head), 0 when it is not in
 * it (on the full list, or elsewhere). */
static unsigned listed(const xa_heap *h, unsigned cls, const xa_slab *s)
{
    unsigned n = 0, at = 0;
    for (const xa_slab *t = h->avail[cls]; t; t = t->next) {
        n++;
        if (t == s)
            at = n;
    }
    return at;
}

static unsigned list_length(const xa_slab *s)
{
    unsigned n = 0;
    for (; s; s = s->next)
        n++;
    return n;
}

START_TEST(used_up_slabs_stay_listed_until_passed_behind_newer_ones)
{
    /* A batch that spans slabs: the two slabs used up last stay in the
     * class list, so the frees that follow into them take no slow path
     * (no move back from the full list); an older one that stays used up
     * goes to the full list, so a growing heap's scans stay short. */
    unsigned cls = xa_size_class(4096);
    uint32_t per = xa_classes[cls].blocks;
    enum { MAX = 1024 };
    ck_assert_uint_lt(6 * per + 1, MAX);
    static void *p[MAX];
    for (unsigned i = 0; i < 3 * per + 1; i++)
        ck_assert_ptr_nonnull(p[i] = xa_test_malloc(4096));
    xa_heap *h = xa_tls_heap; /* (set up by the first malloc) */
    xa_slab *a = slab_of(p[0]), *b = slab_of(p[per]), *c = slab_of(p[2 * per]),
            *d = slab_of(p[3 * per]);
    ck_assert(a != b && b != c && c != d);
    ck_assert_uint_eq(xa_slab_used(b), per);
    ck_assert_uint_eq(xa_slab_used(c), per);
    /* d current at the head, then c and b used up; a on the full list. */
    ck_assert_uint_eq(listed(h, cls, d), 1);
    ck_assert_uint_eq(listed(h, cls, c), 2);
    ck_assert_uint_eq(listed(h, cls, b), 3);
    ck_assert_uint_eq(listed(h, cls, a), 0);
    ck_assert(a->in_full & XA_SLAB_IN_FULL);
    ck_assert(!(b->in_full & XA_SLAB_IN_FULL) && !(c->in_full & XA_SLAB_IN_FULL));
    /* A free into a listed used-up slab: on the fast path (no slow flag),
     * and the slab stays where it is. */
    ck_assert_uint_eq(b->used & XA_USED_SLOW, 0);
    xa_test_free(p[per]);
    p[per] = NULL;
    ck_assert_uint_eq(xa_slab_used(b), per - 1);
    ck_assert_uint_eq(listed(h, cls, b), 3);
    /* A free into the full one brings it back. */
    ck_assert_uint_ne(a->used & XA_USED_SLOW, 0);
    xa_test_free(p[0]);
    p[0] = NULL;
    ck_assert(!(a->in_full & XA_SLAB_IN_FULL));
    ck_assert_uint_ne(listed(h, cls, a), 0);
    assert_clean();
    /* Growing on: the list never holds more than the two kept used-up
     * slabs beside the current one and those with free blocks. */
    for (unsigned i = 3 * per + 1; i < 6 * per + 1; i++)
        ck_assert_ptr_nonnull(p[i] = xa_test_malloc(4096));
    ck_assert_uint_le(list_length(h->avail[cls]), 3 + 2);
    ck_assert_uint_ge(list_length(h->full), 2);
    assert_clean();
    for (unsigned i = 0; i < 6 * per + 1; i++)
        if (p[i])
            xa_test_free(p[i]);
    assert_clean();
}
END_TEST

START_TEST(full_slab_rejoins_its_list_once_a_sixteenth_is_free)
{
    /* Random frees over a heap of full slabs: a full slab comes back to
     * its class list only with a sixteenth of its blocks free, so the
     * malloc slow path that takes it finds that many, not one. */
    unsigned cls = xa_size_class(256);
    uint32_t per = xa_classes[cls].blocks, due = per / 16;
    enum { MAX = 2048 };
    ck_assert_uint_lt(4 * per + due, MAX);
    ck_assert_uint_ge(due, 2);
    static void *p[MAX];
    for (unsigned i = 0; i < 4 * per; i++)
        ck_assert_ptr_nonnull(p[i] = xa_test_malloc(256));
    xa_heap *h = xa_tls_heap;
    xa_slab *a = slab_of(p[0]);
    ck_assert(a->in_full & XA_SLAB_IN_FULL);
    ck_assert_uint_eq(a->capacity, per);
    /* One block short: still full, out of the list, its holes not handed
     * out (the next block comes from another slab). */
    for (unsigned i = 0; i < due - 1; i++) {
        xa_test_free(p[2 * i]);
        p[2 * i] = NULL;
    }
    ck_assert(a->in_full & XA_SLAB_IN_FULL);
    ck_assert_uint_eq(listed(h, cls, a), 0);
    ck_assert_uint_eq(xa_slab_used(a), per - (due - 1));
    void *x = xa_test_malloc(256);
    ck_assert_ptr_ne(slab_of(x), a);
    assert_clean();
    /* The sixteenth: back in the list, its blocks handed out again. */
    xa_test_free(p[2 * (due - 1)]);
    p[2 * (due - 1)] = NULL;
    ck_assert(!(a->in_full & XA_SLAB_IN_FULL));
    ck_assert_uint_ne(listed(h, cls, a), 0);
    assert_clean();
    xa_test_free(x);
    for (unsigned i = 0; i < 4 * per; i++)
        if (p[i])
            xa_test_free(p[i]);
    assert_clean();
}
END_TEST

/* The same with remote frees, a few at a time (a producer whose consumer
 * frees its blocks): the first hands its block to the owner and disarms
 * the notification; the owner arms it again while the slab stays full,
 * so each later remote free reaches it too, and the slab rejoins its
 * list at the sixteenth instead of gathering free blocks out of sight. */
static void *free_one(void *p)
{
    xa_test_free(p); /* a thread with no heap: straight to the slab */
    return NULL;
}

START_TEST(full_slab_freed_remotely_a_few_at_a_time_rejoins_its_list)
{
    unsigned cls = xa_size_class(512);
    uint32_t per = xa_classes[cls].blocks, due = per / 16;
    enum { MAX = 1024 };
    ck_assert_uint_le(4 * per, MAX);
    ck_assert_uint_ge(due, 2);
    ck_assert_uint_le(due, 8);
    static void *p[MAX];
    for (unsigned i = 0; i < 4 * per; i++)
        ck_assert_ptr_nonnull(p[i] = xa_test_malloc(512));
    xa_heap *h = xa_tls_heap;
    xa_slab *a = slab_of(p[0]);
    ck_assert(a->in_full & XA_SLAB_IN_FULL);
    for (unsigned i = 0; i < due; i++) {
        ck_assert(a->in_full & XA_SLAB_IN_FULL);
        pthread_t t;
        ck_assert_int_eq(pthread_create(&t, NULL, free_one, p[i]), 0);
        ck_assert_int_eq(pthread_join(t, NULL), 0);
        p[i] = NULL;
        /* A slow path of the owner (a class it has not used yet), which
         * takes the blocks handed over: each time one, as the
         * notification was armed again. */
        void *q = xa_test_malloc(1100 + 128 * i);
        ck_assert_ptr_nonnull(q);
        ck_assert_uint_eq(xa_tf_list(atomic_load(&a->thread_free)), 0);
        xa_test_free(q);
    }
    ck_assert(!(a->in_full & XA_SLAB_IN_FULL));
    ck_assert_uint_ne(listed(h, cls, a), 0);
    ck_assert_uint_eq(xa_slab_used(a), per - due);
    assert_clean();
    for (unsigned i = 0; i < 4 * per; i++)
        if (p[i])
            xa_test_free(p[i]);
    assert_clean();
}
END_TEST

/* A thread exits with such a block handed over but not yet taken: its
 * slabs are set never to notify, and taking the block at the exit must
 * not arm the slab again (a later remote free would call on the heap of
 * a thread gone, recycled since). */
static void *fill_and_exit(void *arg)
{
    void **p = arg;
    uint32_t per = xa_classes[xa_size_class(512)].blocks;
    for (unsigned i = 0; i < 4 * per; i++)
        p[i] = xa_test_malloc(512);
    pthread_t t;
    ck_assert(slab_of(p[0])->in_full & XA_SLAB_IN_FULL);
    ck_assert_int_eq(pthread_create(&t, NULL, free_one, p[0]), 0); /* handed over */
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    ck_assert_ptr_nonnull((void *)atomic_load(&xa_tls_heap->delayed));
    p[0] = NULL;
    return NULL; /* exits with the block in its delayed list */
}

START_TEST(exiting_thread_leaves_its_full_slabs_never_to_notify)
{
    enum { MAX = 1024 };
    static void *p[MAX];
    ck_assert_uint_le(4 * xa_classes[xa_size_class(512)].blocks, MAX);
    void *own = xa_test_malloc(16);
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, fill_and_exit, p), 0);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    xa_slab *a = slab_of(p[1]);
    ck_assert_uint_eq(atomic_load(&a->thread_free) & XA_TF_MASK, XA_TF_NEVER);
    assert_clean();
    for (unsigned i = 0; i < MAX; i++)
        if (p[i])
            xa_test_free(p[i]);
    xa_test_free(own);
    assert_clean();
}
END_TEST

START_TEST(holes_are_used_before_a_new_page_is_carved)
{
    /* A class with two slabs: blocks freed in the first (full) one are
     * handed out again before the current one carves another page, so a
     * thread's holes do not stay resident beside fresh pages. */
    unsigned cls = xa_size_class(320);
    uint32_t per = xa_classes[cls].blocks;
    enum { MAX = 1024 };
    ck_assert_uint_lt(per + 2, MAX);
    static void *p[MAX];
    unsigned n = per + 2;
    for (unsigned i = 0; i < n; i++)
        ck_assert_ptr_nonnull(p[i] = xa_test_malloc(320));
    xa_slab *first = slab_of(p[0]), *second = slab_of(p[n - 1]);
    ck_assert_ptr_ne(first, second);
    ck_assert_uint_eq(xa_slab_used(first), per);
    unsigned holes = 0;
    for (unsigned i = 0; i < n; i += 3)
        if (slab_of(p[i]) == first) {
            xa_test_free(p[i]);
            p[i] = NULL;
            holes++;
        }
    ck_assert_uint_gt(holes, 10);
    /* The second slab's carved page first (the fast path), then every
     * hole, and still no new page. */
    uint32_t carved = second->capacity;
    unsigned take = holes + (carved - xa_slab_used(second));
    static void *q[MAX];
    for (unsigned i = 0; i < take; i++) {
        ck_assert_ptr_nonnull(q[i] = xa_test_malloc(320));
        memset(q[i], 0x5a, 320);
    }
    ck_assert_uint_eq(second->capacity, carved);
    ck_assert_uint_eq(xa_slab_used(first), per);
    ck_assert_uint_eq(xa_slab_used(second), carved);
    /* Now a page is carved. */
    void *more = xa_test_malloc(320);
    ck_assert_ptr_eq(slab_of(more), second);
    ck_assert_uint_gt(second->capacity, carved);
    xa_test_free(more);
    for (unsigned i = 0; i < take; i++)
        xa_test_free(q[i]);
    for (unsigned i = 0; i < n; i++)
        if (p[i])
            xa_test_free(p[i]);
    assert_clean();
}
END_TEST

START_TEST(small_class_keeps_no_spare)
{
    /* 64-byte slabs empty and go back at once: the footprint of threads
     * that allocate little stays what it was. */
    enum { N = 4000 };
    static void *p[N];
    unsigned cls = xa_size_class(64);
    for (int i = 0; i < N; i++)
        p[i] = xa_test_malloc(64);
    for (int i = 0; i < N; i++)
        xa_test_free(p[i]);
    ck_assert_ptr_null(spare_of(xa_tls_heap, cls));
    assert_clean();
}
END_TEST

/* A batch of blocks that needs more slabs than the head, allocated and
 * freed in rounds: the first round gives its empty slabs back; once the
 * heap takes a new slab after that, the class churns and its empty slabs
 * are parked (XA_SPARES_SMALL at most) for the next round, which takes
 * them without the arena; unused for decay_ms they go back. */
static unsigned round_trip(unsigned cls, unsigned n, void **p, xa_slab **seen)
{
    unsigned slabs = 0;
    for (unsigned i = 0; i < n; i++) {
        ck_assert_ptr_nonnull(p[i] = xa_test_malloc(xa_classes[cls].size));
        xa_slab *s = slab_of(p[i]);
        bool known = false;
        for (unsigned k = 0; k < slabs; k++)
            known |= seen[k] == s;
        if (!known)
            seen[slabs++] = s;
    }
    for (unsigned i = 0; i < n; i++)
        xa_test_free(p[i]);
    return slabs;
}

START_TEST(churned_small_class_parks_spares_until_decay)
{
    enum { SIZE = 1024, ROUND_SLABS = 3, MAX = 8 * 64 };
    unsigned cls = xa_size_class(SIZE);
    uint32_t per = xa_classes[cls].blocks;
    ck_assert_uint_lt(SIZE, XA_TRIM_MIN_BLOCK);
    ck_assert_uint_le((XA_SPARES_SMALL + 3) * per, MAX);
    static void *p[MAX];
    xa_slab *seen[16];
    xa_heap *h = xa_heap_get();
    uint64_t bit = 1ull << cls;

    /* Round 1: nothing learnt yet, the empty slabs go back. */
    round_trip(cls, ROUND_SLABS * per, p, seen);
    ck_assert_ptr_null(spare_of(h, cls));
    ck_assert_uint_ne(h->slab_returned & bit, 0);
    ck_assert_uint_eq(h->slab_churn & bit, 0);
    assert_clean();

    /* Round 2 takes new slabs: churn; its empty slabs but the head are parked. */
    round_trip(cls, ROUND_SLABS * per, p, seen);
    ck_assert_uint_ne(h->slab_churn & bit, 0);
    ck_assert_uint_eq(h->spare_count, ROUND_SLABS - 1);
    assert_clean();

    /* Round 3 is served by the head and the spares. */
    xa_slab *parked[2] = {spare_of(h, cls), spare_of(h, cls)->next};
    ck_assert_ptr_nonnull(parked[1]);
    ck_assert_uint_eq(round_trip(cls, ROUND_SLABS * per, p, seen), ROUND_SLABS);
    for (unsigned k = 0; k < 2; k++)
        ck_assert(seen[1] == parked[k] || seen[2] == parked[k]);
    ck_assert_uint_eq(h->spare_count, ROUND_SLABS - 1);

    /* A wider round parks XA_SPARES_SMALL at most. */
    round_trip(cls, (XA_SPARES_SMALL + 3) * per, p, seen);
    ck_assert_uint_eq(h->spare_count, XA_SPARES_SMALL);
    assert_clean();

    /* Unused for decay_ms: back to the arena, and the class forgotten. */
    xa_slab *first = spare_of(h, cls);
    xa_heaps_decay_caches(UINT64_MAX / 2);
    ck_assert_ptr_null(spare_of(h, cls));
    ck_assert_uint_eq(h->spare_count, 0);
    ck_assert_uint_ne(first->kind, XA_RUN_SMALL);
    ck_assert_uint_eq(h->slab_churn & bit, 0);
    ck_assert_uint_eq(h->slab_returned & bit, 0);
    assert_clean();
}
END_TEST

/* Batches that move through the sizes (sh6bench): each class churns and
 * parks its spares, but the heap holds XA_SPARES_TOTAL in all; parking past
 * them returns the spares of the class parked longest ago to the arena
 * (when the class of the moment has not taken them already), instead of
 * keeping every class's until decay_ms. */
START_TEST(spares_of_classes_passed_through_go_back_past_the_total)
{
    enum { CLASSES = 5, MAX = 8 * 128 };
    static const unsigned sizes[CLASSES] = {512, 640, 768, 896, 1024};
    static void *p[MAX];
    xa_slab *seen[16];
    xa_heap *h = xa_heap_get();
    ck_assert_uint_gt(CLASSES * XA_SPARES_SMALL, XA_SPARES_TOTAL);
    xa_slab *first_spare = NULL;
    for (unsigned i = 0; i < CLASSES; i++) {
        unsigned cls = xa_size_class(sizes[i]);
        uint32_t per = xa_classes[cls].blocks;
        ck_assert_uint_le((XA_SPARES_SMALL + 3) * per, MAX);
        round_trip(cls, 3 * per, p, seen); /* returns its slabs */
        round_trip(cls, 3 * per, p, seen); /* takes new ones: churns */
        round_trip(cls, (XA_SPARES_SMALL + 3) * per, p, seen);
        ck_assert_ptr_nonnull(spare_of(h, cls));
        if (i == 0)
            first_spare = spare_of(h, cls);
        ck_assert_uint_le(h->spare_count, XA_SPARES_TOTAL);
        assert_clean();
    }
    /* The first class's went back to the arena or serve a later class
     * (spare_of_a_class_left_serves_the_next_class), the last class's are
     * parked. */
    ck_assert_ptr_null(spare_of(h, xa_size_class(sizes[0])));
    ck_assert(first_spare->kind != XA_RUN_SMALL || first_spare->cls != xa_size_class(sizes[0]));
    ck_assert_uint_eq(h->slab_churn & (1ull << xa_size_class(sizes[0])), 0);
    unsigned last = xa_size_class(sizes[CLASSES - 1]);
    unsigned depth = 0;
    for (const xa_slab *s = spare_of(h, last); s; s = s->next)
        depth++;
    ck_assert_uint_eq(depth, XA_SPARES_SMALL);
    ck_assert_uint_le(h->spare_count, XA_SPARES_TOTAL);
    xa_heaps_decay_caches(UINT64_MAX / 2);
    ck_assert_uint_eq(h->spare_count, 0);
    assert_clean();
}
END_TEST

/* Batches that move through the sizes: the spares a class parked serve the
 * next class of the same run length, carved anew from their start (pages
 * still in cache), instead of the arena handing that class other pages
 * while the spares wait for decay_ms. The carved bytes the heap counts
 * follow, and the arena's slab counts per class (checked by the invariant
 * walk) move with the slab. */
START_TEST(spare_of_a_class_left_serves_the_next_class)
{
    enum { MAX = 8 * 128 };
    static void *p[MAX];
    xa_slab *seen[16];
    xa_heap *h = xa_heap_get();
    unsigned from = xa_size_class(512), to = xa_size_class(640);
    ck_assert_uint_eq(xa_classes[from].units, xa_classes[to].units);
    ck_assert_uint_lt(xa_classes[to].size, XA_TRIM_MIN_BLOCK);
    uint32_t per = xa_classes[from].blocks, to_per = xa_classes[to].blocks;
    ck_assert_uint_le(to_per + 1, MAX);
    round_trip(from, 3 * per, p, seen); /* returns its slabs */
    round_trip(from, 3 * per, p, seen); /* takes new ones: churns, parks two */
    ck_assert_uint_eq(h->spare_count, 2);
    xa_slab *parked = spare_of(h, from), *other = parked->next;
    ck_assert_uint_eq(parked->capacity, per);
    ck_assert_uint_eq(other->capacity, per);
    ck_assert_ptr_null(h->avail[to]);
    assert_clean();

    /* Class to's first slab is the spare parked last, its second the
     * other one: made slabs of class to, carved from their first page. */
    int64_t carved = h->carved_bytes;
    for (unsigned i = 0; i < to_per + 1; i++)
        ck_assert_ptr_nonnull(p[i] = xa_test_malloc(640));
    ck_assert_ptr_eq(slab_of(p[0]), parked);
    ck_assert_ptr_eq(p[0], parked->start);
    ck_assert_ptr_eq(slab_of(p[to_per]), other);
    ck_assert_ptr_eq(p[to_per], other->start);
    ck_assert_uint_eq(parked->cls, to);
    ck_assert_uint_eq(parked->block_size, xa_classes[to].size);
    ck_assert_uint_eq(parked->reserved, to_per);
    ck_assert_uint_lt(other->capacity, to_per); /* one page carved so far */
    /* Class from's last spare gone: the class churns no more. */
    ck_assert_ptr_null(spare_of(h, from));
    ck_assert_uint_eq(h->spare_count, 0);
    ck_assert_uint_eq(h->slab_churn & (1ull << from), 0);
    ck_assert_uint_eq(h->slab_returned & (1ull << from), 0);
    /* The 512-byte blocks uncounted, the 640-byte ones counted. */
    ck_assert_int_eq(h->carved_bytes,
                     carved - 2 * (int64_t)per * 512 +
                         (int64_t)(parked->capacity + other->capacity) * 640);
    /* Blocks are told by the new class: an old 512-byte boundary inside a
     * 640-byte block is no block. */
    ck_assert(!xa_slab_is_block(parked, (char *)parked->start + 512));
    ck_assert(xa_slab_is_block(parked, (char *)parked->start + 640));
    assert_clean();
    for (unsigned i = 0; i < to_per + 1; i++)
        xa_test_free(p[i]);
    assert_clean();
}
END_TEST

/* A freed block of a big class is the next one of its class handed out,
 * as for smaller classes: its line is in cache (the free wrote it), where
 * the current slab's next block is cold. Buffers of 16-64 KiB cycled in a
 * ring: 10% faster. */
START_TEST(freed_big_block_is_the_next_one_handed_out)
{
    enum { SIZE = 32768, MAX = 64 };
    unsigned cls = xa_size_class(SIZE);
    ck_assert_uint_ge(xa_classes[cls].size, XA_TRIM_MIN_BLOCK);
    unsigned n = xa_classes[cls].blocks + 2; /* two slabs */
    ck_assert_uint_le(n, MAX);
    void *p[MAX];
    for (unsigned i = 0; i < n; i++)
        ck_assert_ptr_nonnull(p[i] = xa_test_malloc(SIZE));
    ck_assert_ptr_ne(slab_of(p[0]), slab_of(p[n - 1]));
    xa_test_free(p[0]); /* in the first slab, not the current one */
    void *q = xa_test_malloc(SIZE);
    ck_assert_ptr_eq(q, p[0]);
    for (unsigned i = 0; i < n; i++)
        xa_test_free(p[i]);
    assert_clean();
}
END_TEST

/* A big class keeps one spare from the start, and once the heap churns
 * its slabs (a batch of big blocks spanning several) up to
 * XA_SPARES_SMALL, as smaller classes do; but a big class's second spare
 * only while the heap holds fewer than XA_SPARES_BIG_TOTAL in all. */
static unsigned churn_big_class(size_t size, void **p, xa_slab **seen)
{
    unsigned cls = xa_size_class(size);
    uint32_t per = xa_classes[cls].blocks;
    ck_assert_uint_ge(xa_classes[cls].size, XA_TRIM_MIN_BLOCK);
    round_trip(cls, 3 * per, p, seen);                       /* learns the churn */
    round_trip(cls, 3 * per, p, seen);                       /* parks */
    round_trip(cls, (XA_SPARES_SMALL + 3) * per, p, seen);   /* parks more */
    unsigned depth = 0;
    for (xa_slab *t = spare_of(xa_heap_get(), cls); t; t = t->next)
        depth++;
    return depth;
}

START_TEST(churned_big_class_parks_spares_within_a_bound)
{
    enum { MAX = 8 * 64 };
    static void *p[MAX];
    xa_slab *seen[16];
    xa_heap *h = xa_heap_get();
    unsigned cls = xa_size_class(16384);
    uint32_t per = xa_classes[cls].blocks;
    ck_assert_uint_le((XA_SPARES_SMALL + 3) * per, MAX);
    ck_assert_uint_eq(XA_SPARES_BIG_TOTAL, 2 * XA_SPARES_SMALL); /* the cases below */

    /* Round 1: one spare from the start; the second empty slab goes back. */
    round_trip(cls, 3 * per, p, seen);
    ck_assert_uint_eq(h->spare_count, 1);
    ck_assert_uint_ne(h->slab_returned & (1ull << cls), 0);
    ck_assert_uint_eq(h->slab_churn & (1ull << cls), 0);
    assert_clean();

    /* Round 2 takes the spare and a new slab from the arena: the class
     * churns, and the empty slabs but the head are parked. */
    round_trip(cls, 3 * per, p, seen);
    ck_assert_uint_ne(h->slab_churn & (1ull << cls), 0);
    ck_assert_uint_eq(h->spare_count, 2);
    /* Round 3 is served by the head and the spares, without the arena. */
    xa_slab *parked[2] = {spare_of(h, cls), spare_of(h, cls)->next};
    ck_assert_uint_eq(round_trip(cls, 3 * per, p, seen), 3);
    for (unsigned k = 0; k < 2; k++)
        ck_assert(seen[1] == parked[k] || seen[2] == parked[k]);
    assert_clean();

    /* Wider rounds: XA_SPARES_SMALL at most per class; two big classes
     * reach the heap's bound, and a third keeps its first spare only. */
    ck_assert_uint_eq(churn_big_class(16384, p, seen), XA_SPARES_SMALL);
    ck_assert_uint_eq(churn_big_class(32768, p, seen), XA_SPARES_SMALL);
    ck_assert_uint_eq(h->spare_count, XA_SPARES_BIG_TOTAL);
    ck_assert_uint_eq(churn_big_class(24576, p, seen), 1);
    ck_assert_uint_eq(h->spare_count, XA_SPARES_BIG_TOTAL + 1);
    assert_clean();

    /* Unused for decay_ms: all back to the arena. */
    xa_heaps_decay_caches(UINT64_MAX / 2);
    ck_assert_uint_eq(h->spare_count, 0);
    assert_clean();
}
END_TEST

/* Blocks past the first unit of a 2-unit slab (10 KiB class): free()'s
 * guess of the descriptor fails there and free_check takes its steps with
 * the run's own descriptor, for the owner and for another thread; a second
 * free of such a block is still reported. */
enum { SECOND_UNIT_SIZE = 10240 };
static void *second_unit[16];
static unsigned second_unit_n;

static void *free_second_unit_blocks(void *arg)
{
    (void)arg;
    for (unsigned i = 0; i < second_unit_n; i++)
        xa_test_free(second_unit[i]);
    return NULL;
}

static void *alloc_slab_of_10k(void **p, unsigned per)
{
    for (unsigned i = 0; i < per; i++)
        ck_assert_ptr_nonnull(p[i] = xa_test_malloc(SECOND_UNIT_SIZE));
    xa_slab *s = slab_of(p[0]);
    second_unit_n = 0;
    for (unsigned i = 0; i < per; i++) {
        ck_assert_ptr_eq(slab_of(p[i]), s);
        if (xa_unit_desc(xa_chunk_of(p[i]), p[i]) != s)
            second_unit[second_unit_n++] = p[i];
    }
    return s;
}

START_TEST(blocks_past_a_slabs_first_unit_are_freed_by_owner_and_others)
{
    unsigned cls = xa_size_class(SECOND_UNIT_SIZE);
    unsigned per = xa_classes[cls].blocks;
    ck_assert_uint_eq(xa_classes[cls].units, 2);
    ck_assert_uint_le(per, 16);
    void *p[16];
    xa_slab *s = alloc_slab_of_10k(p, per);
    ck_assert_uint_gt(second_unit_n, 0);
    ck_assert_uint_lt(second_unit_n, per);
    /* The owner: each goes onto its slab's own list. */
    uint32_t used = xa_slab_used(s);
    for (unsigned i = 0; i < second_unit_n; i++) {
        xa_test_free(second_unit[i]);
        ck_assert_ptr_eq((void *)s->free, second_unit[i]);
    }
    ck_assert_uint_eq(xa_slab_used(s), used - second_unit_n);
    assert_clean();
    /* Taken again, then freed by another thread: on the slab's remote list. */
    for (unsigned i = 0; i < second_unit_n; i++)
        ck_assert_ptr_eq(xa_test_malloc(SECOND_UNIT_SIZE), second_unit[second_unit_n - 1 - i]);
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, free_second_unit_blocks, NULL), 0);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    uintptr_t tf = atomic_load_explicit(&s->thread_free, memory_order_acquire);
    ck_assert_uint_eq(xa_tf_count(tf), second_unit_n);
    assert_clean();
    for (unsigned i = 0; i < per; i++) {
        bool second = false;
        for (unsigned k = 0; k < second_unit_n; k++)
            second |= p[i] == second_unit[k];
        if (!second)
            xa_test_free(p[i]);
    }
    assert_clean();
}
END_TEST

START_TEST(double_free_past_a_slabs_first_unit_is_reported)
{
    unsigned cls = xa_size_class(SECOND_UNIT_SIZE);
    void *p[16];
    alloc_slab_of_10k(p, xa_classes[cls].blocks);
    ck_assert_uint_gt(second_unit_n, 0);
    xa_test_free(second_unit[0]);
    xa_test_free(second_unit[0]);
}
END_TEST

enum { BLOCKS = 1000, BLOCK_SIZE = 64 };
static void *blocks[BLOCKS];

static void *free_them_all(void *arg)
{
    (void)arg;
    void *own = xa_test_malloc(BLOCK_SIZE); /* this thread gets a heap */
    ck_assert_ptr_nonnull(own);
    xa_heap *h = xa_tls_heap;
    unsigned cls = xa_size_class(BLOCK_SIZE);
    xa_slab *f = xa_heap_foreign(h, cls);
    uint64_t bit = (uint64_t)1 << cls;
    /* Set up by the first remote free of the class, not before: a thread
     * that frees only its own blocks never touches the stack's page. */
    ck_assert(!(h->foreign_ready & bit));
    uint32_t limit = 0, most = 0;
    for (int i = 0; i < BLOCKS; i++) {
        xa_test_free(blocks[i]);
        if (i == 0) {
            ck_assert(h->foreign_ready & bit);
            limit = f->capacity;
            ck_assert_uint_gt(limit, 0);
            ck_assert_uint_lt(limit, BLOCKS);
        }
        uint32_t kept = f->reserved - f->used;
        ck_assert_uint_le(kept, limit);
        if (kept > most)
            most = kept;
    }
    /* It filled and stayed full (for this thread's next allocations);
     * the rest went to their owner's remote lists, a chain of up to
     * XA_HEAP_OUTBOX_CHAIN blocks at a time through the outbox, which
     * still holds the last chains, but for the last frees, which wait in
     * the unsettled ring. */
    ck_assert_uint_eq(most, limit);
    ck_assert_uint_eq(f->reserved - f->used, limit);
    ck_assert_uint_le(h->outbox_held, XA_HEAP_OUTBOX_SLOTS * XA_HEAP_OUTBOX_CHAIN);
    xa_slab *owner_slab = slab_of(blocks[0]);
    for (int i = 1; i < BLOCKS; i++)
        ck_assert_ptr_eq(slab_of(blocks[i]), owner_slab); /* 1,024 blocks a slab */
    uintptr_t tf = atomic_load_explicit(&owner_slab->thread_free, memory_order_relaxed);
    ck_assert_uint_eq(unsettled(h), XA_HEAP_UNSETTLED);
    ck_assert_uint_eq(xa_tf_count(tf) + h->outbox_held + unsettled(h), BLOCKS - limit);
    ck_assert_uint_ge(xa_tf_count(tf), XA_HEAP_OUTBOX_CHAIN);
    assert_clean();
    xa_test_free(own);
    return NULL;
}

START_TEST(full_foreign_stack_keeps_its_blocks_and_exit_returns_them)
{
    for (int i = 0; i < BLOCKS; i++)
        ck_assert_ptr_nonnull(blocks[i] = xa_test_malloc(BLOCK_SIZE));
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, free_them_all, NULL), 0);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    /* Every block came back to this thread's slabs (one by one past the
     * limit, and the stack in chains as the other thread exited): all can
     * be had again, and the heap is consistent. */
    assert_clean();
    for (int i = 0; i < BLOCKS; i++) {
        blocks[i] = xa_test_malloc(BLOCK_SIZE);
        ck_assert_ptr_eq(slab_of(blocks[i])->heap, xa_tls_heap);
    }
    assert_clean();
    for (int i = 0; i < BLOCKS; i++)
        xa_test_free(blocks[i]);
    assert_clean();
}
END_TEST

static void *allocate_and_exit(void *arg)
{
    void **out = arg;
    for (int i = 0; i < 8; i++)
        out[i] = xa_test_malloc(100);
    return NULL; /* exits with live blocks: the slab is abandoned */
}

START_TEST(abandoned_slab_is_adopted_by_a_freeing_thread)
{
    /* One arena, so the freeing thread's heap is of the slab's arena (read
     * at the first allocation of this test's process). */
    setenv("XALLOC_CONF", "arenas:1", 1);
    void *keep[8];
    void *own = xa_test_malloc(100); /* this thread has a heap */
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, allocate_and_exit, keep), 0);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    xa_slab *s = slab_of(keep[0]);
    xa_heap *h = xa_tls_heap;
    ck_assert_ptr_null(s->heap);
    ck_assert(s->in_full & XA_SLAB_ABANDONED);
    assert_clean();
    ck_assert_ptr_eq(xa_chunk_of(s)->arena, h->arena);
    xa_test_free(keep[0]);
    ck_assert_ptr_eq(s->heap, h);
    ck_assert(!(s->in_full & XA_SLAB_ABANDONED));
    assert_clean();
    /* The rest of its blocks are local frees now. */
    for (int i = 1; i < 8; i++)
        xa_test_free(keep[i]);
    xa_test_free(own);
    assert_clean();
}
END_TEST

/* An exited thread's slab of another arena cannot become the freeing
 * thread's: its blocks are kept in the freeing thread's foreign stack, as
 * any other thread's blocks are (larson's successor threads, bound to
 * other arenas than the threads they replace), and the slab stays
 * abandoned in its arena. Returns the slab; keep[] holds its 8 blocks. */
static xa_slab *abandoned_in_other_arena(void *keep[8])
{
    setenv("XALLOC_CONF", "arenas:2", 1);
    void *own = xa_test_malloc(100); /* this thread's heap: one arena */
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, allocate_and_exit, keep), 0);
    ck_assert_int_eq(pthread_join(t, NULL), 0); /* the idle arena: the other one */
    xa_slab *s = slab_of(keep[0]);
    xa_heap *h = xa_tls_heap;
    ck_assert(s->in_full & XA_SLAB_ABANDONED);
    ck_assert_ptr_ne(xa_chunk_of(s)->arena, h->arena);
    xa_test_free(own);
    return s;
}

START_TEST(abandoned_slab_of_another_arena_is_kept_like_a_remote_block)
{
    void *keep[8];
    xa_slab *s = abandoned_in_other_arena(keep);
    xa_heap *h = xa_tls_heap;
    xa_slab *f = xa_heap_foreign(h, s->cls);
    for (int i = 0; i < 8; i++) {
        xa_test_free(keep[i]);
        /* The first free of the class sets the stack up in the slow path
         * and pushes the block; the others take the fast path and wait in
         * the unsettled ring. */
        if (i == 0) {
            ck_assert_ptr_eq((void *)f->free, keep[i]);
        } else {
            ck_assert(is_unsettled(h, keep[i]));
            ck_assert_uint_eq(f->reserved, 1);
        }
        ck_assert_ptr_null(s->heap);
        ck_assert(s->in_full & XA_SLAB_ABANDONED);
    }
    assert_clean();
    /* Settled, they join the stack. */
    xa_heap_settle_all(h);
    ck_assert_uint_eq(unsettled(h), 0);
    ck_assert_uint_eq(f->reserved, 8);
    for (int i = 0; i < 8; i++)
        ck_assert(on_list(f, keep[i]));
    /* Still in use in its slab until this thread's stack hands them on. */
    ck_assert_uint_eq(xa_slab_used(s), 8);
    assert_clean();
}
END_TEST

START_TEST(double_free_of_a_kept_abandoned_block_is_reported)
{
    void *keep[8];
    abandoned_in_other_arena(keep);
    xa_test_free(keep[3]);
    xa_test_free(keep[3]);
}
END_TEST

/* ---- free pages of abandoned slabs ---- */

/* A thread fills a 64-byte slab (16 pages), keeps every 256th block for
 * the main thread and frees the rest, then exits: four live blocks hold
 * the slab, and its pages hold free blocks only but for four. */
enum { SPARSE_SIZE = 64, SPARSE_N = 1024, SPARSE_EVERY = 256 };
struct sparse_slab {
    void *keep[SPARSE_N / SPARSE_EVERY];
    void *freed; /* a block the thread freed */
};

static void *allocate_sparse_and_exit(void *arg)
{
    struct sparse_slab *out = arg;
    void *p[SPARSE_N];
    for (int i = 0; i < SPARSE_N; i++) {
        p[i] = xa_test_malloc(SPARSE_SIZE);
        memset(p[i], 0xa5, SPARSE_SIZE);
    }
    for (int i = 0; i < SPARSE_N; i++) {
        if (i % SPARSE_EVERY == 0)
            out->keep[i / SPARSE_EVERY] = p[i];
        else
            xa_test_free(p[i]);
    }
    out->freed = p[SPARSE_EVERY / 2]; /* (mid-page between two kept blocks) */
    return NULL;
}

/* Pages of s (bit per page) that hold a block of keep[]. */
static uint32_t pages_of(const xa_slab *s, void *const *keep, int n)
{
    uint32_t m = 0;
    for (int i = 0; i < n; i++) {
        uintptr_t rel = (uintptr_t)keep[i] - (uintptr_t)s->start;
        m |= 1u << (rel / 4096);
        m |= 1u << ((rel + SPARSE_SIZE - 1) / 4096);
    }
    return m;
}

static xa_slab *sparse_abandoned(struct sparse_slab *sp)
{
    setenv("XALLOC_CONF", "arenas:1", 1);
    xa_test_free(xa_test_malloc(SPARSE_SIZE * 3)); /* this thread's heap, another class */
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, allocate_sparse_and_exit, sp), 0);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    xa_slab *s = slab_of(sp->keep[0]);
    for (int i = 1; i < SPARSE_N / SPARSE_EVERY; i++)
        ck_assert_ptr_eq(slab_of(sp->keep[i]), s);
    ck_assert_ptr_null(s->heap);
    ck_assert(s->in_full & XA_SLAB_ABANDONED);
    ck_assert_uint_eq(s->capacity, SPARSE_N);
    return s;
}

/* Its free pages are purged once it has stayed abandoned for decay_ms,
 * not before; the live blocks' pages stay, whole. An adopter (the main
 * thread's free of a live block) lists the withheld blocks again, and
 * every block of the slab can be had and written. */
START_TEST(abandoned_slab_free_pages_are_purged_after_decay)
{
    struct sparse_slab sp;
    xa_slab *s = sparse_abandoned(&sp);
    xa_arena *a = xa_chunk_of(s)->arena;
    uint32_t live = pages_of(s, sp.keep, SPARSE_N / SPARSE_EVERY);
    uint32_t all = (1u << (SPARSE_N * SPARSE_SIZE / 4096)) - 1;
    uint64_t now = xa_os_now_ns();
    /* Counted as due, so the purger comes back for it. */
    ck_assert_uint_eq(a->trim_due_slabs, 1);
    xa_arena_maybe_decay(a, now + 1000, XA_PURGE_THREAD); /* too soon */
    ck_assert(!(s->in_full & XA_SLAB_PAGES_PURGED));
    ck_assert_uint_eq(a->trim_due_slabs, 1);
    for (unsigned pg = 0; pg < 16; pg++)
        ck_assert(page_resident(s->start + pg * 4096));
    uint64_t purged = a->purged_bytes;
    xa_arena_maybe_decay(a, now + 10ull * 1000000000u, XA_PURGE_THREAD);
    ck_assert(s->in_full & XA_SLAB_PAGES_PURGED);
    ck_assert_uint_eq(a->trim_due_slabs, 0);
    ck_assert_uint_eq(s->purged_pages, all & ~live);
    ck_assert_uint_ge(a->purged_bytes - purged,
                      (uint64_t)__builtin_popcount(all & ~live) * 4096);
    for (unsigned pg = 0; pg < 16; pg++)
        ck_assert_int_eq(page_resident(s->start + pg * 4096), (live >> pg) & 1);
    ck_assert_uint_eq(xa_slab_used(s), SPARSE_N / SPARSE_EVERY);
    assert_clean();
    for (int i = 0; i < SPARSE_N / SPARSE_EVERY; i++)
        ck_assert_uint_eq(*(unsigned char *)sp.keep[i], 0xa5);
    /* Adopted: nothing withheld any more. */
    xa_test_free(sp.keep[0]);
    ck_assert_ptr_eq(s->heap, xa_tls_heap);
    ck_assert(!(s->in_full & (XA_SLAB_PAGES_PURGED | XA_SLAB_ABANDONED)));
    ck_assert_uint_eq(xa_slab_withheld(s), 0);
    assert_clean();
    void **again = calloc(SPARSE_N, sizeof *again);
    int in_s = 0;
    for (int i = 0; i < SPARSE_N - 3; i++) {
        again[i] = xa_test_malloc(SPARSE_SIZE);
        memset(again[i], 0x3c, SPARSE_SIZE);
        in_s += slab_of(again[i]) == s;
    }
    ck_assert_int_eq(in_s, SPARSE_N - 3); /* every free block of s came back */
    assert_clean();
    for (int i = 0; i < SPARSE_N - 3; i++)
        xa_test_free(again[i]);
    for (int i = 1; i < SPARSE_N / SPARSE_EVERY; i++)
        xa_test_free(sp.keep[i]);
    free(again);
    assert_clean();
}
END_TEST

/* malloc_trim's path purges them at once; a later remote free of a live
 * block is an ordinary one. */
START_TEST(forced_purge_takes_abandoned_slab_free_pages)
{
    struct sparse_slab sp;
    xa_slab *s = sparse_abandoned(&sp);
    uint32_t live = pages_of(s, sp.keep, SPARSE_N / SPARSE_EVERY);
    xa_arena_purge_all(xa_chunk_of(s)->arena);
    ck_assert(s->in_full & XA_SLAB_PAGES_PURGED);
    ck_assert_uint_eq(s->purged_pages & live, 0);
    ck_assert_uint_gt(xa_slab_withheld(s), SPARSE_N / 2);
    assert_clean();
    for (int i = 0; i < SPARSE_N / SPARSE_EVERY; i++)
        xa_test_free(sp.keep[i]);
    assert_clean();
}
END_TEST

/* The purge erased the free mark of the blocks in its pages: a second
 * free of one is still reported. */
START_TEST(double_free_of_a_withheld_block_is_reported)
{
    struct sparse_slab sp;
    xa_slab *s = sparse_abandoned(&sp);
    xa_arena_purge_all(xa_chunk_of(s)->arena);
    ck_assert(xa_slab_block_withheld(s, sp.freed));
    xa_test_free(sp.freed);
}
END_TEST

/* Big blocks (pages of their own): a thread fills a 40 KiB slab, keeps one
 * block for the main thread and frees the rest, then exits. A forced
 * purge leaves of each free block only the page of its first words. */
enum { BIG_SIZE = 40960 };
static void *allocate_big_and_exit(void *arg)
{
    void **keep = arg;
    unsigned cls = xa_size_class(BIG_SIZE);
    uint32_t n = xa_classes[cls].blocks;
    void *p[64];
    ck_assert_uint_le(n, 64);
    for (uint32_t i = 0; i < n; i++) {
        p[i] = xa_test_malloc(BIG_SIZE);
        memset(p[i], 0x5c, BIG_SIZE);
    }
    keep[0] = p[0];
    for (uint32_t i = 1; i < n; i++)
        xa_test_free(p[i]);
    return NULL;
}

static unsigned resident_pages(const void *p, size_t len)
{
    unsigned n = 0;
    for (size_t off = 0; off < len; off += 4096)
        n += page_resident((const char *)p + off);
    return n;
}

START_TEST(abandoned_big_slab_free_blocks_are_trimmed)
{
    setenv("XALLOC_CONF", "arenas:1", 1);
    xa_test_free(xa_test_malloc(100));
    void *keep[1];
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, allocate_big_and_exit, keep), 0);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    xa_slab *s = slab_of(keep[0]);
    ck_assert(s->in_full & XA_SLAB_ABANDONED);
    uint32_t n = s->capacity;
    size_t slab_bytes = (size_t)s->units << XA_UNIT_SHIFT;
    ck_assert_uint_ge(resident_pages(s->start, slab_bytes), n * (BIG_SIZE / 4096));
    xa_arena_purge_all(xa_chunk_of(s)->arena);
    /* The kept block whole (10 pages, 11 when it straddles), and one
     * page per free block. */
    ck_assert_uint_le(resident_pages(s->start, slab_bytes), BIG_SIZE / 4096 + 1 + (n - 1));
    ck_assert_uint_eq(resident_pages(keep[0], BIG_SIZE), BIG_SIZE / 4096);
    ck_assert_uint_eq(((unsigned char *)keep[0])[BIG_SIZE - 1], 0x5c);
    assert_clean();
    xa_test_free(keep[0]);
    assert_clean();
}
END_TEST

/* malloc clears a block's first two words, not the trim mark in the third:
 * a trimmed block handed out and freed again (its pages written, the
 * third word not) is trimmed again. */
START_TEST(reused_big_block_is_trimmed_again)
{
    void *p = xa_test_malloc(BIG_SIZE), *q = xa_test_malloc(BIG_SIZE);
    memset(p, 1, BIG_SIZE);
    xa_test_free(p);
    xa_test_malloc_trim(0);
    ck_assert_uint_le(resident_pages(p, BIG_SIZE), 2);
    void *again = xa_test_malloc(BIG_SIZE);
    ck_assert_ptr_eq(again, p);
    memset((char *)p + 4096, 2, BIG_SIZE - 4096); /* not the first page */
    ck_assert_uint_ge(resident_pages(p, BIG_SIZE), BIG_SIZE / 4096 - 1);
    xa_test_free(p);
    xa_test_malloc_trim(0);
    ck_assert_uint_le(resident_pages(p, BIG_SIZE), 2);
    xa_test_free(q);
    assert_clean();
}
END_TEST

/* A slab made from a run still resident from its last use (a large block
 * freed by a thread that exited) carves into those pages as it goes; once
 * abandoned, the pages past its carved blocks are purged too. */
static void *large_and_exit(void *arg)
{
    (void)arg;
    void *big = xa_test_malloc(20 * 65536 - 4096); /* a large run */
    memset(big, 7, 20 * 65536 - 4096);
    xa_test_free(big);
    return NULL;
}

static void *few_small_and_exit(void *arg)
{
    void **keep = arg;
    keep[0] = xa_test_malloc(SPARSE_SIZE); /* one block carved: the slab's first page */
    return NULL;
}

START_TEST(abandoned_slab_uncarved_tail_is_purged)
{
    setenv("XALLOC_CONF", "arenas:1", 1);
    xa_test_free(xa_test_malloc(100));
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, large_and_exit, NULL), 0);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    void *keep[1];
    ck_assert_int_eq(pthread_create(&t, NULL, few_small_and_exit, keep), 0);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    xa_slab *s = slab_of(keep[0]);
    ck_assert(s->in_full & XA_SLAB_ABANDONED);
    uintptr_t carved_end = XA_ALIGN_UP((uintptr_t)s->start + (uintptr_t)s->capacity * s->block_size, 4096);
    size_t tail = (uintptr_t)s->start + ((size_t)s->units << XA_UNIT_SHIFT) - carved_end;
    ck_assert_uint_gt(tail, 0);
    /* (The run came from the large block's resident pages.) */
    ck_assert_uint_eq(resident_pages((void *)carved_end, tail), tail / 4096);
    xa_arena_purge_all(xa_chunk_of(s)->arena);
    ck_assert_uint_eq(resident_pages((void *)carved_end, tail), 0);
    ck_assert(page_resident(keep[0]));
    assert_clean();
    xa_test_free(keep[0]);
    assert_clean();
}
END_TEST

/* A thread per request: the slabs an exiting thread leaves empty are kept
 * as they are (carved, resident) for the arena's next thread, at most
 * XA_WARM_SLABS per class, and freed when no thread took them within a
 * decay step. */
enum { WARM_SIZE = 300, WARM_THREADS = XA_WARM_SLABS + 2 };
static pthread_barrier_t warm_bar;
/* A parked thread's cached large block and spare slab, flushed by another
 * thread (the purger's decay, malloc_trim): the owner takes and parks them
 * with plain stores, so the other thread has the heap to itself only
 * through the handshake; while the owner is busy at the barrier it leaves
 * them, and takes them on a later pass. */
enum { PARKED_LARGE = 512 * 1024, PARKED_BIG = 65536 };
static pthread_barrier_t parked_bar;

static void *park_and_wait(void *arg)
{
    void **out = arg;
    void *big[16];
    unsigned cls = xa_size_class(PARKED_BIG);
    uint32_t per = xa_classes[cls].blocks;
    for (uint32_t i = 0; i < 2 * per; i++)
        big[i] = xa_test_malloc(PARKED_BIG);
    out[0] = xa_tls_heap;
    out[1] = slab_of(big[0]);
    for (uint32_t i = 0; i < per; i++) /* the first slab empties: parked */
        xa_test_free(big[i]);
    void *l = xa_test_malloc(PARKED_LARGE);
    out[2] = l;
    xa_test_free(l); /* parked in a slot */
    pthread_barrier_wait(&parked_bar); /* parked: the test flushes */
    pthread_barrier_wait(&parked_bar);
    for (uint32_t i = per; i < 2 * per; i++)
        xa_test_free(big[i]);
    return NULL;
}

START_TEST(other_thread_flushes_a_parked_heap_unless_busy)
{
    setenv("XALLOC_CONF", "arenas:1", 1);
    unsigned cls = xa_size_class(PARKED_BIG);
    ck_assert_uint_le(2 * xa_classes[cls].blocks, 16);
    void *own = xa_test_malloc(16);
    pthread_barrier_init(&parked_bar, NULL, 2);
    void *out[3] = {NULL, NULL, NULL};
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, park_and_wait, out), 0);
    pthread_barrier_wait(&parked_bar);
    xa_heap *h = out[0];
    xa_slab *spare = out[1];
    ck_assert_ptr_eq(spare_of(h, cls), spare);
    ck_assert_uint_eq(h->spare_count, 1);
    xa_slab *large = slab_of(out[2]);
    ck_assert_uint_eq(large->kind, XA_RUN_LARGE);
    ck_assert(large->in_full); /* parked */

    /* Not yet due (the clock of their parking): nothing is taken. */
    uint64_t parked_at = h->spare_ns[cls];
    for (unsigned i = 0; i < XA_LARGE_CACHE_SLOTS; i++)
        if (h->large_cache_ns[i] > parked_at)
            parked_at = h->large_cache_ns[i];
    ck_assert(xa_heaps_decay_caches(parked_at));
    ck_assert_ptr_eq(spare_of(h, cls), spare);

    /* Due, but the owner is busy (as inside its malloc): left alone. */
    __atomic_store_n(&h->busy, 1, __ATOMIC_RELEASE);
    ck_assert(xa_heaps_decay_caches(UINT64_MAX / 2));
    ck_assert_ptr_eq(spare_of(h, cls), spare);
    ck_assert(large->in_full && large->kind == XA_RUN_LARGE);
    ck_assert_uint_eq(h->reclaiming, 0);

    /* Or busy with its slots (taking or parking a large block). */
    __atomic_store_n(&h->busy, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&h->slots_busy, 1, __ATOMIC_RELEASE);
    ck_assert(xa_heaps_decay_caches(UINT64_MAX / 2));
    ck_assert_ptr_eq(spare_of(h, cls), spare);
    ck_assert(large->in_full && large->kind == XA_RUN_LARGE);

    /* Idle again: the next pass takes both back to the arena. */
    __atomic_store_n(&h->slots_busy, 0, __ATOMIC_RELEASE);
    ck_assert(!xa_heaps_decay_caches(UINT64_MAX / 2));
    ck_assert_ptr_null(spare_of(h, cls));
    ck_assert_uint_eq(h->spare_count, 0);
    ck_assert_uint_ne(spare->kind, XA_RUN_SMALL);
    ck_assert_uint_ne(large->kind, XA_RUN_LARGE);
    for (unsigned i = 0; i < XA_LARGE_CACHE_SLOTS; i++)
        ck_assert_uint_eq(atomic_load_explicit(&h->large_cache[i], memory_order_relaxed), 0);
    ck_assert_uint_eq(h->reclaiming, 0);
    assert_clean();

    /* The owner goes on as before. */
    pthread_barrier_wait(&parked_bar);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    xa_test_free(own);
    assert_clean();
}
END_TEST

static void *use_class_and_exit(void *arg)
{
    void **out = arg;
    void *p = xa_test_malloc(WARM_SIZE);
    out[0] = slab_of(p);
    out[1] = (void *)(uintptr_t)slab_of(p)->warm;
    if (out[2]) /* (the threads of the bound: all hold a slab at once) */
        pthread_barrier_wait(&warm_bar);
    xa_test_free(p);
    return NULL; /* exits with the class's slab empty */
}

static xa_slab *warm_round(void *out[3])
{
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, use_class_and_exit, out), 0);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    return out[0];
}

START_TEST(exited_thread_empty_slab_is_kept_for_the_next_thread)
{
    setenv("XALLOC_CONF", "arenas:1", 1);
    unsigned cls = xa_size_class(WARM_SIZE);
    ck_assert_uint_lt(xa_classes[cls].size, XA_TRIM_MIN_BLOCK);
    void *own = xa_test_malloc(16); /* (this thread's heap, another class) */
    xa_arena *a = xa_tls_heap->arena;
    void *out[3] = {NULL, NULL, NULL};
    xa_slab *s = warm_round(out);
    ck_assert_uint_eq(s->kind, XA_RUN_SMALL);
    ck_assert_ptr_null(s->heap);
    ck_assert(s->warm && (s->in_full & XA_SLAB_ABANDONED));
    ck_assert_uint_eq(a->warm_slabs[cls], 1);
    assert_clean();
    /* The next thread takes it: no new slab, nothing carved again. */
    uint32_t carved = s->capacity;
    ck_assert_ptr_eq(warm_round(out), s);
    ck_assert_ptr_null(out[1]); /* (not warm while it had an owner) */
    ck_assert_uint_eq(s->capacity, carved);
    ck_assert(s->warm);
    ck_assert_uint_eq(a->warm_slabs[cls], 1);
    assert_clean();
    /* Within a decay step it stays; past one it is freed. */
    xa_arena_maybe_decay(a, s->freed_ns + 1, 0);
    ck_assert_uint_eq(s->kind, XA_RUN_SMALL);
    xa_arena_maybe_decay(a, UINT64_MAX / 2, 0);
    ck_assert_uint_ne(s->kind, XA_RUN_SMALL);
    ck_assert_uint_eq(a->warm_slabs[cls], 0);
    assert_clean();

    /* Threads that all hold a slab of the class at once: only
     * XA_WARM_SLABS of their slabs are kept. */
    pthread_barrier_init(&warm_bar, NULL, WARM_THREADS);
    pthread_t t[WARM_THREADS];
    void *outs[WARM_THREADS][3];
    for (int i = 0; i < WARM_THREADS; i++) {
        outs[i][2] = &warm_bar;
        ck_assert_int_eq(pthread_create(&t[i], NULL, use_class_and_exit, outs[i]), 0);
    }
    for (int i = 0; i < WARM_THREADS; i++)
        ck_assert_int_eq(pthread_join(t[i], NULL), 0);
    ck_assert_uint_eq(a->warm_slabs[cls], XA_WARM_SLABS);
    assert_clean();
    /* xalloc_purge's way gives them all back. */
    xa_arena_purge_all(a);
    ck_assert_uint_eq(a->warm_slabs[cls], 0);
    xa_test_free(own);
    assert_clean();
}
END_TEST

/* decay_ms:0 (memory back at once) and tcache:off (no caches) keep none. */
static const char *const no_warm_confs[] = {"arenas:1,decay_ms:0", "arenas:1,tcache:off"};
START_TEST(no_warm_slab_with_decay_0_or_tcache_off)
{
    setenv("XALLOC_CONF", no_warm_confs[_i], 1);
    void *own = xa_test_malloc(16);
    void *out[3] = {NULL, NULL, NULL};
    xa_slab *s = warm_round(out);
    ck_assert_uint_ne(s->kind, XA_RUN_SMALL); /* freed at once */
    ck_assert_uint_eq(xa_tls_heap->arena->warm_slabs[xa_size_class(WARM_SIZE)], 0);
    xa_test_free(own);
    assert_clean();
}
END_TEST

/* A trim purges the pages a free big block has to itself, and no other:
 * a page shared with a neighbour holds the neighbour's data or link. The
 * classes from 16 KiB up are page multiples (20 KiB here), so a trimmed
 * block keeps the page of its link and its neighbours keep every byte. */
START_TEST(trim_spares_pages_shared_with_neighbours)
{
    enum { SIZE = 20480, N = 24 };
    unsigned cls = xa_size_class(SIZE);
    ck_assert_uint_eq(xa_classes[cls].size, SIZE);
    ck_assert_uint_ge(SIZE, XA_TRIM_MIN_BLOCK);
    unsigned char *p[N];
    for (int i = 0; i < N; i++) {
        ck_assert_ptr_nonnull(p[i] = xa_test_malloc(SIZE));
        memset(p[i], 0x40 + i, SIZE);
    }
    for (int i = 0; i < N; i += 2) /* every other one: each free block between live ones */
        xa_test_free(p[i]);
    ck_assert_uint_gt(xa_heap_collect(xa_tls_heap), 0);
    for (int i = 1; i < N; i += 2)
        for (size_t k = 0; k < SIZE; k++)
            ck_assert_msg(p[i][k] == 0x40 + i, "block %d byte %zu changed by the trim", i, k);
    assert_clean();
    /* The trimmed blocks' links survived: they are handed out again. */
    for (int i = 0; i < N; i += 2) {
        ck_assert_ptr_nonnull(p[i] = xa_test_malloc(SIZE));
        memset(p[i], 0x40 + i, SIZE);
    }
    assert_clean();
    for (int i = 0; i < N; i++)
        xa_test_free(p[i]);
    assert_clean();
}
END_TEST


/* A mass free of big blocks trims their pages as it goes, unless the
 * arena learnt that its purges are faulted in again (a program that frees
 * and takes the same memory back in rounds): then the heap keeps as much
 * as the arena's floor, and decay or malloc_trim return it. */
static uint64_t free_three_in_four(unsigned char **p, int n)
{
    xa_heap *h = xa_tls_heap;
    uint64_t before = h->trimmed_bytes;
    for (int i = 0; i < n; i++)
        if (i % 4)
            xa_test_free(p[i]);
    return h->trimmed_bytes - before;
}

START_TEST(mass_free_trims_unless_the_arena_learnt_a_churn)
{
    enum { SIZE = 32768, N = 256 }; /* 8 MiB, 6 MiB of it freed */
    unsigned char *p[N];
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < N; i++)
            if (round == 0 || i % 4) {
                ck_assert_ptr_nonnull(p[i] = xa_test_malloc(SIZE));
                memset(p[i], i, SIZE);
            }
        xa_arena *a = xa_tls_heap->arena;
        uint64_t floor = round == 0 ? (uint64_t)64 << 20 >> XA_UNIT_SHIFT : 0;
        xa_lock_acquire(&a->lock);
        a->churn_floor_units = floor;
        xa_lock_release(&a->lock);
        uint64_t trimmed = free_three_in_four(p, N);
        if (round == 0)
            ck_assert_msg(trimmed == 0, "trimmed %llu bytes under a learnt floor",
                          (unsigned long long)trimmed);
        else
            ck_assert_uint_ge(trimmed, (uint64_t)1 << 20);
        for (int i = 0; i < N; i += 4)
            ck_assert_uint_eq(p[i][SIZE - 1], (unsigned char)i);
        assert_clean();
    }
    for (int i = 0; i < N; i += 4)
        xa_test_free(p[i]);
}
END_TEST

/* A big block freed and taken again in a loop lives in the head of its
 * class list, whose frees stay on the fast path: no count towards the
 * trim, no slow-path call. Another slab of the class is flagged. */
START_TEST(big_block_of_the_head_slab_is_freed_on_the_fast_path)
{
    enum { SIZE = 65536 };
    unsigned cls = xa_size_class(SIZE);
    ck_assert_uint_ge(SIZE, XA_TRIM_MIN_BLOCK);
    xa_heap *h = xa_heap_get();
    ck_assert_ptr_nonnull(h);
    uint32_t per_slab = xa_classes[cls].blocks;
    void *keep[64];
    ck_assert_uint_lt(per_slab + 1, 64);
    /* Fill the first slab and one block of a second. */
    for (uint32_t i = 0; i <= per_slab; i++)
        ck_assert_ptr_nonnull(keep[i] = xa_test_malloc(SIZE));
    xa_slab *head = slab_of(keep[per_slab]);
    ck_assert_ptr_eq(head, h->avail[cls]);
    ck_assert_uint_eq(head->used & XA_USED_SLOW, 0);
    xa_slab *other = slab_of(keep[0]);
    ck_assert_ptr_ne(other, head);
    xa_test_free(xa_test_malloc(SIZE)); /* (may carve the head's next page) */
    uint64_t pending = h->trim_pending;
    uint32_t slow = h->slow_count;
    for (int i = 0; i < 1000; i++) {
        void *p = xa_test_malloc(SIZE);
        ck_assert_ptr_eq(slab_of(p), head);
        xa_test_free(p);
    }
    ck_assert_uint_eq(h->trim_pending, pending);
    ck_assert_uint_eq(h->slow_count, slow);
    /* A free into the other (full, then not head) slab counts. */
    xa_test_free(keep[0]);
    ck_assert_uint_ne(other->used & XA_USED_SLOW, 0);
    ck_assert_uint_gt(h->trim_pending, pending);
    assert_clean();
    for (uint32_t i = 1; i <= per_slab; i++)
        xa_test_free(keep[i]);
    assert_clean();
}
END_TEST

/* Another thread frees the owner's big blocks (a consumer of buffers a
 * producer fills): past the remote trim allowance their pages are purged
 * when the owner stays idle, and kept when it allocates meanwhile (it
 * takes them back: purging cost a madvise and the page faults again). */
enum { REMOTE_BIG = 65536, REMOTE_N = 96 };
static void *remote_big[REMOTE_N];
static xa_heap *remote_owner;
static bool remote_owner_busy;

static void *free_remote_big(void *arg)
{
    (void)arg;
    xa_test_free(xa_test_malloc(32)); /* (a heap of its own) */
    for (unsigned i = 0; i < REMOTE_N; i++) {
        xa_test_free(remote_big[i]);
        if (remote_owner_busy) /* the owner's malloc slow paths, as if it allocated */
            __atomic_store_n(&remote_owner->slow_count, remote_owner->slow_count + 1,
                             __ATOMIC_RELAXED);
    }
    return NULL;
}

/* Blocks of remote_big whose last page is no longer resident. */
static unsigned remote_big_trimmed(void)
{
    unsigned n = 0;
    for (unsigned i = 0; i < REMOTE_N; i++)
        n += !page_resident((char *)remote_big[i] + REMOTE_BIG - 1);
    return n;
}

static unsigned remote_big_round(bool busy)
{
    ck_assert_uint_ge(REMOTE_BIG, XA_TRIM_MIN_BLOCK);
    ck_assert_uint_gt((uint64_t)REMOTE_N * REMOTE_BIG, 2 * XA_HEAP_TRIM_ALLOWANCE);
    remote_owner = xa_heap_get();
    remote_owner_busy = busy;
    for (unsigned i = 0; i < REMOTE_N; i++) {
        ck_assert_ptr_nonnull(remote_big[i] = xa_test_malloc(REMOTE_BIG));
        memset(remote_big[i], 0x5a, REMOTE_BIG);
    }
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, free_remote_big, NULL), 0);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    return remote_big_trimmed();
}

START_TEST(remote_frees_of_an_idle_owner_big_blocks_are_trimmed)
{
    /* All but the allowance's worth (2 MiB: 32 blocks). */
    ck_assert_uint_ge(remote_big_round(false), REMOTE_N - XA_HEAP_TRIM_ALLOWANCE / REMOTE_BIG - 1);
    assert_clean();
}
END_TEST

START_TEST(remote_frees_of_an_allocating_owner_big_blocks_are_kept)
{
    ck_assert_uint_eq(remote_big_round(true), 0);
    assert_clean();
}
END_TEST

/* A pool of free big blocks that wanders wider than the trim allowance
 * (a server whose working set breathes) looks like a mass free now and
 * then. When the blocks a trim purged are taken again (the pool falls
 * back), the trim learns to keep more, and the next swing trims far less. */
START_TEST(trim_undone_by_reuse_keeps_more_next_time)
{
    enum { SIZE = 32768, N = 512 }; /* 16 MiB, 12 MiB of it swinging */
    static unsigned char *p[N];
    xa_heap *h = xa_heap_get();
    ck_assert_ptr_nonnull(h);
    uint64_t trimmed[2];
    for (int i = 0; i < N; i++) {
        ck_assert_ptr_nonnull(p[i] = xa_test_malloc(SIZE));
        memset(p[i], 1, SIZE);
    }
    for (int round = 0; round < 2; round++) {
        trimmed[round] = free_three_in_four(p, N);
        for (int i = 0; i < N; i++)
            if (i % 4) {
                ck_assert_ptr_nonnull(p[i] = xa_test_malloc(SIZE));
                memset(p[i], 2, SIZE); /* faults the trimmed pages in again */
            }
        assert_clean();
    }
    ck_assert_uint_ge(trimmed[0], (uint64_t)4 << 20);
    ck_assert_uint_gt(h->trim_keep, 0);
    ck_assert_msg(trimmed[1] <= trimmed[0] / 2, "second swing trimmed %llu of %llu bytes",
                  (unsigned long long)trimmed[1], (unsigned long long)trimmed[0]);
    for (int i = 0; i < N; i++)
        xa_test_free(p[i]);
}
END_TEST

/* A heap that frees big blocks as fast as it allocates them grows its
 * pool of free ones when the new blocks are of another class (a working
 * set that changes shape, a server warming up): the frees do not outrun
 * the mallocs, so no free-time trim purges pages the next requests would
 * fault in again. The same frees with no mallocs between them trim. */
START_TEST(pool_grown_while_mallocs_keep_pace_is_not_trimmed)
{
    enum { OLD = 32768, NEW = 49152, N = 1024 }; /* 16 MiB of holes */
    static unsigned char *p[N], *q[N / 2];
    xa_heap *h = xa_heap_get();
    ck_assert_ptr_nonnull(h);
    for (int round = 0; round < 2; round++) {
        bool keep_pace = round == 0;
        for (int i = 0; i < N; i++) {
            ck_assert_ptr_nonnull(p[i] = xa_test_malloc(OLD));
            memset(p[i], 1, OLD);
        }
        uint64_t before = h->trimmed_bytes;
        /* Every other block: the slabs stay in use, their holes pool. */
        for (int i = 1; i < N; i += 2) {
            xa_test_free(p[i]);
            if (keep_pace) {
                ck_assert_ptr_nonnull(q[i / 2] = xa_test_malloc(NEW));
                memset(q[i / 2], 2, NEW);
            }
        }
        assert_clean();
        uint64_t trimmed = h->trimmed_bytes - before;
        if (keep_pace)
            ck_assert_msg(trimmed == 0, "trimmed %llu bytes while mallocs kept pace",
                          (unsigned long long)trimmed);
        else
            ck_assert_uint_ge(trimmed, (uint64_t)4 << 20);
        for (int i = 0; i < N; i += 2)
            xa_test_free(p[i]);
        for (int i = 0; keep_pace && i < N / 2; i++)
            xa_test_free(q[i]);
        assert_clean();
    }
}
END_TEST

/* ---- idle reclaim ---- */

enum { IR_SIZE = 1024, IR_N = 200 };

struct idle_worker {
    pthread_barrier_t parked, resume;
    xa_heap *heap;
    int extra_use;   /* one more malloc/free of the class after parking */
    int failures;    /* content or invariant failures seen by the worker */
    char msg[256];
};

static void fill_round(struct idle_worker *w, unsigned char seed)
{
    unsigned char *p[IR_N];
    for (int i = 0; i < IR_N; i++) {
        p[i] = xa_test_malloc(IR_SIZE);
        if (!p[i]) {
            w->failures++;
            return;
        }
        memset(p[i], (unsigned char)(seed + i), IR_SIZE);
    }
    for (int i = 0; i < IR_N; i++) {
        for (int k = 0; k < IR_SIZE; k++)
            if (p[i][k] != (unsigned char)(seed + i))
                w->failures++;
        xa_test_free(p[i]);
    }
}

static void *idle_worker_main(void *arg)
{
    struct idle_worker *w = arg;
    fill_round(w, 1); /* the class's current slab: carved pages, no block out */
    w->heap = xa_tls_heap;
    pthread_barrier_wait(&w->parked);
    pthread_barrier_wait(&w->resume); /* parked while the purger looks */
    if (w->extra_use) {
        xa_test_free(xa_test_malloc(IR_SIZE));
        pthread_barrier_wait(&w->parked);
        pthread_barrier_wait(&w->resume);
    }
    fill_round(w, 7); /* the reclaimed slab is carved again and works */
    if (xa_invariant_check(w->msg, sizeof w->msg))
        w->failures++;
    return NULL;
}

static void idle_worker_start(struct idle_worker *w, pthread_t *t, int extra_use)
{
    memset(w, 0, sizeof *w);
    w->extra_use = extra_use;
    pthread_barrier_init(&w->parked, NULL, 2);
    pthread_barrier_init(&w->resume, NULL, 2);
    ck_assert_int_eq(pthread_create(t, NULL, idle_worker_main, w), 0);
    pthread_barrier_wait(&w->parked);
}

static void idle_worker_finish(struct idle_worker *w, pthread_t t)
{
    pthread_barrier_wait(&w->resume);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    ck_assert_msg(w->failures == 0, "worker: %d failures (%s)", w->failures, w->msg);
}

/* A parked thread's empty current slab loses its pages at the second look
 * that finds the class idle, stays its current slab, and serves the
 * thread again when it wakes (carved anew). */
START_TEST(idle_thread_slab_pages_are_reclaimed_and_reused)
{
    unsigned cls = xa_size_class(IR_SIZE);
    struct idle_worker w;
    pthread_t t;
    idle_worker_start(&w, &t, 0);
    xa_heap *h = w.heap;
    xa_slab *s = h->cur[cls];
    ck_assert_uint_eq(s->kind, XA_RUN_SMALL);
    ck_assert_uint_gt(s->capacity, 0);
    ck_assert_uint_eq(xa_slab_used(s), 0);
    ck_assert(page_resident(s->start));
    uint64_t carved = (uint64_t)s->capacity * s->block_size;
    uint64_t now = 1000000000000ull;
    /* First look: the class moved since the heap was made (not idle). */
    ck_assert_uint_ne(xa_heaps_reclaim_idle(now, false), UINT64_MAX);
    ck_assert_uint_gt(s->capacity, 0);
    /* Second look, nothing moved: the pages go. */
    ck_assert_uint_ne(xa_heaps_reclaim_idle(now + 2000000000ull, false), UINT64_MAX);
    ck_assert_uint_eq(s->capacity, 0);
    ck_assert_ptr_eq(h->cur[cls], s);
    ck_assert_uint_eq(h->reclaiming, 0);
    ck_assert_uint_ge(h->reclaimed_bytes, carved);
    ck_assert(!page_resident(s->start));
    idle_worker_finish(&w, t);
    assert_clean();
}
END_TEST

/* A class used between two looks is not idle: its slab keeps its pages. */
START_TEST(class_used_between_looks_is_not_reclaimed)
{
    unsigned cls = xa_size_class(IR_SIZE);
    struct idle_worker w;
    pthread_t t;
    idle_worker_start(&w, &t, 1);
    xa_slab *s = w.heap->cur[cls];
    uint64_t now = 1000000000000ull;
    xa_heaps_reclaim_idle(now, false);
    xa_heaps_reclaim_idle(now + 2000000000ull, false); /* idle: reclaimed */
    ck_assert_uint_eq(s->capacity, 0);
    pthread_barrier_wait(&w.resume); /* the worker mallocs and frees once */
    pthread_barrier_wait(&w.parked);
    ck_assert_uint_gt(s->capacity, 0);
    xa_heaps_reclaim_idle(now + 4000000000ull, false); /* moved since the last look */
    ck_assert_uint_gt(s->capacity, 0);
    ck_assert(page_resident(s->start));
    idle_worker_finish(&w, t);
}
END_TEST

/* malloc_trim's path takes every empty current slab at once, idle or not;
 * slabs with a block out are left alone. */
START_TEST(forced_reclaim_takes_empty_slabs_only)
{
    unsigned cls = xa_size_class(IR_SIZE);
    void *live = xa_test_malloc(100); /* this thread's slab of 112 B keeps a block */
    memset(live, 0x5a, 100);
    xa_slab *mine = slab_of(live);
    struct idle_worker w;
    pthread_t t;
    idle_worker_start(&w, &t, 0);
    xa_slab *s = w.heap->cur[cls];
    xa_heaps_reclaim_idle(0, true);
    ck_assert_uint_eq(s->capacity, 0);
    ck_assert_uint_gt(mine->capacity, 0);
    for (int i = 0; i < 100; i++)
        ck_assert_uint_eq(((unsigned char *)live)[i], 0x5a);
    idle_worker_finish(&w, t);
    xa_test_free(live);
    assert_clean();
}
END_TEST

/* A block freed before its slab's pages were purged has lost its free
 * mark with them; a second free of it is still reported, whether the
 * slab is untouched since or carved again up to an earlier page. */
static unsigned char *reclaimed_block(void)
{
    enum { N = 8 }; /* 1 KiB blocks: two pages */
    unsigned char *p[N];
    for (int i = 0; i < N; i++)
        ck_assert_ptr_nonnull(p[i] = xa_test_malloc(IR_SIZE));
    for (int i = 0; i < N; i++)
        xa_test_free(p[i]);
    xa_slab *s = slab_of(p[N - 1]);
    ck_assert_ptr_eq(slab_of(p[0]), s);
    ck_assert_uint_ge(s->capacity, N);
    xa_heaps_reclaim_idle(0, true); /* this thread's heap too: it is not in malloc */
    ck_assert_uint_eq(s->capacity, 0);
    return p[N - 1];
}

/* Frees do not wait for the purger: one that empties the slab the purger
 * is about to reset makes it current again, and the owner's next malloc
 * takes a block of it. The purger, which reads the class's counters once
 * more after the slab's count, leaves that slab alone. */
static void *window_block[2];
static unsigned char *window_taken;

static void reclaim_window_owner(int point)
{
    if (point == 0) {
        xa_test_free(window_block[1]); /* the slab is empty, and current again */
    } else {
        window_taken = xa_test_malloc(IR_SIZE);
        memset(window_taken, 0x77, IR_SIZE);
    }
}

START_TEST(free_and_malloc_in_the_reclaim_window_keep_the_slab)
{
    unsigned cls = xa_size_class(IR_SIZE);
    window_block[0] = xa_test_malloc(IR_SIZE);
    window_block[1] = xa_test_malloc(IR_SIZE);
    xa_slab *s = slab_of(window_block[0]);
    xa_heap *h = xa_tls_heap;
    ck_assert_ptr_eq(slab_of(window_block[1]), s);
    ck_assert_ptr_eq(h->cur[cls], s);
    xa_test_free(window_block[0]);
    uint32_t capacity = s->capacity;
    xa_test_reclaim_window = reclaim_window_owner;
    xa_heaps_reclaim_idle(0, true); /* this thread's heap too: it is not in malloc */
    xa_test_reclaim_window = NULL;
    ck_assert_ptr_nonnull(window_taken);
    ck_assert_ptr_eq(slab_of(window_taken), s);
    ck_assert_uint_eq(s->capacity, capacity); /* not reset */
    ck_assert_uint_eq(xa_slab_used(s), 1);
    ck_assert_ptr_eq(h->cur[cls], s);
    for (int k = 0; k < IR_SIZE; k++)
        ck_assert_uint_eq(window_taken[k], 0x77);
    xa_test_free(window_taken);
    assert_clean();
}
END_TEST

START_TEST(double_free_after_reclaim_is_reported)
{
    xa_test_free(reclaimed_block());
}
END_TEST

START_TEST(double_free_past_recarved_pages_is_reported)
{
    unsigned char *late = reclaimed_block();
    void *q = xa_test_malloc(IR_SIZE); /* carves the slab's first page again */
    ck_assert_uint_lt(slab_of(q)->capacity * IR_SIZE, (uintptr_t)late - (uintptr_t)slab_of(late)->start + 1);
    xa_test_free(late);
}
END_TEST

/* Remote frees of another thread's blocks, from a second thread. */
enum { RING_BLOCKS = 3 * XA_HEAP_UNSETTLED };
static void *ring_blocks[RING_BLOCKS];
static bool ring_second_free; /* ring_blocks[1] is freed twice in a row */

static void *free_ring_blocks(void *arg)
{
    (void)arg;
    void *own = xa_test_malloc(BLOCK_SIZE); /* this thread gets a heap */
    xa_heap *h = xa_tls_heap;
    xa_slab *f = xa_heap_foreign(h, xa_size_class(BLOCK_SIZE));
    /* The class's first remote free sets its stack up, the slow way. */
    xa_test_free(ring_blocks[0]);
    ck_assert_uint_eq(f->reserved, 1);
    ck_assert(xa_block_marked_free(ring_blocks[0]));
    /* The next ones wait in the ring, untouched (not marked, not pushed),
     * until as many more remote frees have come. */
    xa_test_free(ring_blocks[1]);
    if (ring_second_free)
        xa_test_free(ring_blocks[1]);
    ck_assert(is_unsettled(h, ring_blocks[1]));
    ck_assert(!xa_block_marked_free(ring_blocks[1]));
    ck_assert(!on_list(f, ring_blocks[1]));
    for (int i = 2; i <= XA_HEAP_UNSETTLED; i++)
        xa_test_free(ring_blocks[i]);
    ck_assert(is_unsettled(h, ring_blocks[1]));
    assert_clean();
    xa_test_free(ring_blocks[XA_HEAP_UNSETTLED + 1]);
    /* The ring came round: the first of them took effect. */
    ck_assert(!is_unsettled(h, ring_blocks[1]));
    ck_assert(xa_block_marked_free(ring_blocks[1]));
    ck_assert(on_list(f, ring_blocks[1]));
    ck_assert_uint_eq(f->reserved, 2);
    ck_assert_uint_eq(unsettled(h), XA_HEAP_UNSETTLED);
    for (int i = XA_HEAP_UNSETTLED + 2; i < RING_BLOCKS; i++)
        xa_test_free(ring_blocks[i]);
    assert_clean();
    /* Malloc slow paths let the rest take effect, within 16 of them (the
     * first malloc of each class above the stacks' takes one): every block
     * is kept, each once. */
    void *big[16];
    int slow = 0;
    while (unsettled(h) && slow < 16) {
        big[slow] = xa_test_malloc(xa_classes[XA_FOREIGN_CLASSES + slow].size);
        ck_assert_ptr_nonnull(big[slow++]);
    }
    ck_assert_uint_eq(unsettled(h), 0);
    ck_assert_uint_eq(f->reserved, RING_BLOCKS);
    for (int i = 0; i < RING_BLOCKS; i++)
        ck_assert(on_list(f, ring_blocks[i]));
    assert_clean();
    while (slow > 0)
        xa_test_free(big[--slow]);
    xa_test_free(own);
    return NULL;
}

static void run_ring_thread(void)
{
    for (int i = 0; i < RING_BLOCKS; i++)
        ck_assert_ptr_nonnull(ring_blocks[i] = xa_test_malloc(BLOCK_SIZE));
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, free_ring_blocks, NULL), 0);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
}

/* A remote free takes effect XA_HEAP_UNSETTLED remote frees later (its
 * block's line is in cache by then), or at the thread's next malloc slow
 * path; until then the block is left as it was. */
START_TEST(remote_free_takes_effect_a_ring_later)
{
    run_ring_thread();
    /* The thread's exit handed every block back: all can be had again. */
    assert_clean();
}
END_TEST

/* A remote double free is reported when the second free takes effect: the
 * first one marked the block by then. */
START_TEST(remote_double_free_is_reported_when_it_settles)
{
    ring_second_free = true;
    run_ring_thread();
}
END_TEST

/* The owner frees a block another thread has freed and that waits in
 * that thread's ring: the owner cannot see it (no mark yet), but the
 * other thread's free, when it takes effect, finds the owner's mark. */
static void *free_one_and_wait(void *arg)
{
    pthread_barrier_t *bar = arg;
    void *own = xa_test_malloc(BLOCK_SIZE);
    xa_test_free(ring_blocks[0]); /* sets the stack up */
    xa_test_free(ring_blocks[1]); /* waits in the ring */
    ck_assert(is_unsettled(xa_tls_heap, ring_blocks[1]));
    pthread_barrier_wait(bar);
    pthread_barrier_wait(bar); /* the owner has freed it too */
    xa_test_free(own);
    return NULL; /* the exit settles the ring: reported there */
}

START_TEST(owner_free_of_an_unsettled_block_is_reported_by_the_remote_thread)
{
    for (int i = 0; i < 2; i++)
        ck_assert_ptr_nonnull(ring_blocks[i] = xa_test_malloc(BLOCK_SIZE));
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, 2);
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, free_one_and_wait, &bar), 0);
    pthread_barrier_wait(&bar);
    xa_test_free(ring_blocks[1]); /* the double free: not seen here */
    pthread_barrier_wait(&bar);
    pthread_join(t, NULL);
}
END_TEST

static Suite *heap_suite(void)
{
    Suite *s = suite_create("heap");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, emptied_big_slab_is_parked_reused_and_decayed);
    tcase_add_test(tc, small_class_keeps_no_spare);
    tcase_add_test(tc, churned_small_class_parks_spares_until_decay);
    tcase_add_test(tc, spares_of_classes_passed_through_go_back_past_the_total);
    tcase_add_test(tc, spare_of_a_class_left_serves_the_next_class);
    tcase_add_test(tc, freed_big_block_is_the_next_one_handed_out);
    tcase_add_test(tc, churned_big_class_parks_spares_within_a_bound);
    tcase_add_test(tc, other_thread_flushes_a_parked_heap_unless_busy);
    tcase_add_test(tc, blocks_past_a_slabs_first_unit_are_freed_by_owner_and_others);
    tcase_add_test_raise_signal(tc, double_free_past_a_slabs_first_unit_is_reported, SIGABRT);
    tcase_add_test(tc, rare_class_borrows_from_twice_its_size);
    tcase_add_test(tc, holes_are_used_before_a_new_page_is_carved);
    tcase_add_test(tc, used_up_slabs_stay_listed_until_passed_behind_newer_ones);
    tcase_add_test(tc, full_slab_rejoins_its_list_once_a_sixteenth_is_free);
    tcase_add_test(tc, full_slab_freed_remotely_a_few_at_a_time_rejoins_its_list);
    tcase_add_test(tc, exiting_thread_leaves_its_full_slabs_never_to_notify);
    tcase_add_test(tc, full_foreign_stack_keeps_its_blocks_and_exit_returns_them);
    tcase_add_test(tc, remote_free_takes_effect_a_ring_later);
    tcase_add_test_raise_signal(tc, remote_double_free_is_reported_when_it_settles, SIGABRT);
    tcase_add_test_raise_signal(tc, owner_free_of_an_unsettled_block_is_reported_by_the_remote_thread,
                                SIGABRT);
    tcase_add_test(tc, abandoned_slab_is_adopted_by_a_freeing_thread);
    tcase_add_test(tc, abandoned_slab_of_another_arena_is_kept_like_a_remote_block);
    tcase_add_test_raise_signal(tc, double_free_of_a_kept_abandoned_block_is_reported, SIGABRT);
    tcase_add_test(tc, abandoned_slab_free_pages_are_purged_after_decay);
    tcase_add_test(tc, forced_purge_takes_abandoned_slab_free_pages);
    tcase_add_test_raise_signal(tc, double_free_of_a_withheld_block_is_reported, SIGABRT);
    tcase_add_test(tc, abandoned_big_slab_free_blocks_are_trimmed);
    tcase_add_test(tc, reused_big_block_is_trimmed_again);
    tcase_add_test(tc, abandoned_slab_uncarved_tail_is_purged);
    tcase_add_test(tc, exited_thread_empty_slab_is_kept_for_the_next_thread);
    tcase_add_loop_test(tc, no_warm_slab_with_decay_0_or_tcache_off, 0, 2);
    tcase_add_test(tc, trim_spares_pages_shared_with_neighbours);
    tcase_add_test(tc, mass_free_trims_unless_the_arena_learnt_a_churn);
    tcase_add_test(tc, big_block_of_the_head_slab_is_freed_on_the_fast_path);
    tcase_add_test(tc, remote_frees_of_an_idle_owner_big_blocks_are_trimmed);
    tcase_add_test(tc, remote_frees_of_an_allocating_owner_big_blocks_are_kept);
    tcase_add_test(tc, trim_undone_by_reuse_keeps_more_next_time);
    tcase_add_test(tc, pool_grown_while_mallocs_keep_pace_is_not_trimmed);
    tcase_add_test(tc, idle_thread_slab_pages_are_reclaimed_and_reused);
    tcase_add_test(tc, class_used_between_looks_is_not_reclaimed);
    tcase_add_test(tc, forced_reclaim_takes_empty_slabs_only);
    tcase_add_test(tc, free_and_malloc_in_the_reclaim_window_keep_the_slab);
    tcase_add_test_raise_signal(tc, double_free_after_reclaim_is_reported, SIGABRT);
    tcase_add_test_raise_signal(tc, double_free_past_recarved_pages_is_reported, SIGABRT);
    suite_add_tcase(s, tc);
    return s;
}

XA_UNIT_MAIN(heap_suite)
