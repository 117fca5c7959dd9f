/* heap.h: per-thread heaps and their fast paths. Each heap keeps, per size
 * class, a list of slabs it allocates from; each slab has its own free list
 * (free-list sharding). malloc pops from the current slab; a free by the
 * owning thread pushes onto the slab's list: no lock, no atomic
 * read-modify-write. Frees from other threads go to the slab's atomic
 * thread_free list, collected by the owner on its slow path.
 * Layer: above arena; below malloc.c. */
#ifndef XA_HEAP_H
#define XA_HEAP_H

#include "arena.h"
#include "chunk.h"
#include "chunkmap.h"
#include "numa.h"
#include "sizeclass.h"

#define XA_LARGE_CACHE_SLOTS 4
/* Empty slabs a heap parks per class it churns (see slab_churn); a big
 * class (XA_SLAB_TRIM) parks one from the start, and more only within
 * XA_SPARES_BIG_TOTAL. */
#define XA_SPARES_SMALL 4
/* A big class parks a second spare (up to XA_SPARES_SMALL, once the heap
 * churns its slabs) only while the heap holds fewer spares than this in
 * all: their blocks' pages stay resident, where the arena would reuse or
 * purge them. */
#define XA_SPARES_BIG_TOTAL 8
/* Spares a heap holds in all: past them, parking one first returns the
 * spares of the class parked longest ago to the arena. A program whose
 * batches move through the sizes (sh6bench; a server's requests of one
 * kind, then of another) otherwise kept up to XA_SPARES_SMALL slabs of
 * every class it passed through, cold and resident until decay_ms, while
 * the class of the moment took other runs from the arena: twice the RSS
 * and a third more time than with none. */
#define XA_SPARES_TOTAL 16
/* Live thread heaps from which the purger thread is worth starting under
 * background_thread:auto, for idle reclaim (see heap.c). */
#define XA_HEAPS_MANY 4
/* Classes up to 8 KiB keep a per-thread stack of blocks this thread freed
 * but does not own (see xa_heap_free_remote); check_sizeclass checks that
 * class XA_FINE_CLASSES_END - 1 is the 8 KiB one. */
#define XA_FOREIGN_CLASSES 44
_Static_assert(XA_FOREIGN_CLASSES == XA_FINE_CLASSES_END, "class 43 is 8 KiB");
/* Blocks a foreign stack holds at most (see foreign_limit_of in heap.c). */
#define XA_FOREIGN_MAX 256

/* Classes that may borrow from the class of twice their size (blocks of
 * up to BORROW_BYTES, 1 KiB: classes 0-19; see borrow() in heap.c). */
#define XA_BORROW_CLASSES 32

typedef struct xa_heap {
    /* ---- hot ---- */
    /* Current slab per class, never NULL: a slab of the class list (the
     * one a malloc slow path took, or the last one freed into), a stack,
     * or a placeholder (empty, the reclaim sentinel). */
    xa_slab *cur[XA_NCLASSES];
    /* 1 while the owner is inside malloc (fast and slow path): the purger
     * reclaims an idle thread's empty slabs only when it reads 0 here after
     * a process-wide barrier (see "idle reclaim" in heap.c). After cur[],
     * which stays at offset 0 (one addressing mode for cur[cls]). */
    uint32_t busy;
    /* Coarse milliseconds (low 32 bits) of the oldest park among the
     * spares parked now, or of an earlier one: spare_flush skips its look
     * at every class until decay_ms after it. Slow paths only (here, where
     * the word after busy was padding). */
    uint32_t spare_oldest_ms;
    uint64_t nmalloc[XA_NCLASSES]; /* statistics, written by the owner only */
    uint64_t nfree[XA_NCLASSES];
    /* ---- slow paths ---- */
    xa_slab *avail[XA_NCLASSES];   /* slabs that may have free blocks, and the two
                                    * used up last (EXHAUSTED_KEPT); head = cur */
    xa_slab *full;                 /* slabs with no free block (notify armed) */
    _Atomic uintptr_t delayed;     /* blocks freed remotely into full slabs */
    xa_arena *arena;
    struct xa_heap *next_all, *prev_all;
    uint64_t nmalloc_big, nfree_big, nrealloc;
    /* Change to the requested bytes of big blocks made by this heap's
     * block cache (a parked block is not requested): owner-written, summed
     * by the statistics, so a cached pair costs no atomic on the arena's
     * counter, which every thread of the arena shares. */
    int64_t requested_delta;
    /* Bytes of blocks this heap carved in its arena's slabs: owner-written,
     * summed by the statistics (resident estimate). An atomic add to the
     * arena's per-class count at every page carved was a line that two
     * threads carving the same class fought over. */
    int64_t carved_bytes;
    uint32_t slow_count;
    int tid;
    bool no_keep;                  /* tcache:off: empty slabs go back at once */
    bool remote_used;              /* the remote table may hold bytes (atomic) */
    uint32_t outbox_held;          /* blocks held in the outbox (see xa_heap_remote) */
    /* Freed large blocks and huge mappings kept for reuse (tcache). The
     * owner reads and writes the slots with plain loads and stores while
     * busy or slots_busy; another thread (the purger's decay,
     * malloc_trim) only after the handshake of flush_parked_of_others. */
    _Atomic uintptr_t large_cache[XA_LARGE_CACHE_SLOTS];
    uint64_t large_cache_ns[XA_LARGE_CACHE_SLOTS]; /* atomic: when each was parked */
    uint64_t last_trim_ns;         /* last purge of big free blocks */
    uint64_t park_noticed_ns;      /* coarse clock when a parked block last woke the purger */
    /* Empty slabs parked when they empty instead of going back to the
     * arena: one per big class (blocks of XA_TRIM_MIN_BLOCK and up), up to
     * XA_SPARES_SMALL per class the heap churns (slab_churn; a big class
     * only while XA_SPARES_BIG_TOTAL are not reached), in a
     * chain through next. A thread whose set of blocks breathes takes them
     * again without the arena lock, a purge, carving and page faults.
     * Plain loads and stores, as for the large-block slots, and returned
     * to the arena after decay_ms like them. */
    _Atomic(xa_slab *) spare[XA_NCLASSES];
    uint64_t spare_ns[XA_NCLASSES]; /* atomic: when each was parked */
    uint32_t spare_count;          /* spares parked (read by statistics, no lock) */
    /* KiB of big-class blocks freed over the last looks of the free-time
     * trim less twice those allocated, never below zero (see
     * free_local_slow; 32 bits, in the 4 bytes the fields around leave). */
    uint32_t trim_free_streak_kib;
    /* Smaller classes park a spare only once the heap churns their slabs
     * (bit per class, atomic: the purger clears them): slab_returned, it
     * gave an empty slab of the class back to the arena; slab_churn, it
     * then took a new one (a batch of blocks that needs one slab more
     * than the head, allocated and freed in rounds). A spare unused for
     * decay_ms clears both. */
    uint64_t slab_returned, slab_churn;
    uint64_t trimmed_bytes;        /* bytes of free blocks purged (statistics) */
    uint64_t trim_pending;         /* big-class bytes freed since the last trim */
    uint64_t remote_trim_pending;  /* big blocks of others freed since the last upkeep */
    /* The owner of the last big block freed here for another thread, and
     * its slow_count then: an owner whose count moves meanwhile allocates,
     * and takes such blocks back (see remote_trim in heap.c). */
    const struct xa_heap *remote_trim_owner;
    uint32_t remote_trim_owner_slow;
    uint64_t trim_pool_last;       /* free big-block bytes at the last look */
    uint64_t trim_pool_low;        /* lowest free big-block bytes seen since the last trim */
    uint64_t trim_malloc_last;     /* big-class bytes allocated, at the last look */
    /* Free-time trim learning (see free_local_slow in heap.c): bytes the
     * last trim purged and the pool then, and the bytes of free big
     * blocks a trim leaves alone since trims were faulted in again. */
    uint64_t trim_last, trim_pool_after, trim_keep;
    /* Frees of other threads' small blocks, counted here by this thread
     * alone (no atomic on a line other freeing threads share): per class
     * for the class totals; their bytes per arena are in the heap's
     * remote table (xa_heap_remote). */
    uint64_t remote_nfree[XA_NCLASSES];
    /* Blocks of chunks with this key may be kept in the foreign stacks
     * (xa_chunk_keep_key of the heap's node: every arena's blocks, but
     * another node's under NUMA); 0 in the empty heap keeps nothing. */
    unsigned keep_key;
    xa_numa_thread numa;           /* node last seen by the slow path */
    /* Idle reclaim (purger thread only, under heaps_lock): 1 while it takes
     * pages of this heap's empty current slabs; the owner's slow paths wait
     * for 0. reclaim_seen: low bits of nmalloc[] at the purger's last look
     * (a class is idle when they did not move). */
    uint32_t reclaiming;
    uint16_t reclaim_seen[XA_NCLASSES];
    uint64_t reclaim_settled;      /* classes looked at since they last moved (bit per class) */
    uint64_t reclaimed_bytes;      /* atomic: bytes of idle slabs purged (statistics) */
    /* Bit per class whose foreign stack is set up: the owner's slow paths
     * test it before reading the stack, whose page a read would make
     * resident (some kernels back even a read fault with a new page). */
    uint64_t foreign_ready;
    /* Blocks each class took from the class of twice its size before it
     * had a slab of its own (see borrow() in heap.c). */
    uint8_t borrowed[XA_BORROW_CLASSES];
    /* 1 while the owner takes or parks a large block or huge mapping in
     * large_cache (outside malloc's busy): another thread flushes the
     * slots only when it reads 0 here and in busy after its barrier (see
     * flush_parked_of_others in heap.c). A word of its own, written and
     * never read by the owner: a read of busy there, on a path deep in
     * calls, cost a 1 MiB malloc/free cycle a third more (stores of the
     * stack at the same offset in their page). */
    uint32_t slots_busy;
} xa_heap;

_Static_assert(sizeof(xa_heap) <= XA_OS_PAGE, "a heap's fields fit one page");

/* A thread heap's memory: its page of fields, then two stacks per class
 * of blocks of other threads' slabs freed by this thread, reused by its
 * next allocations of the class: the foreign stack, which the frees push
 * onto (reserved counts them), and the serving stack, a pseudo-slab that
 * becomes cur[] when the real slabs run dry, with the foreign stack's
 * blocks moved over at once (used counts its pops). Each class's are
 * set up on the heap's first remote free of the class (capacity 0 until
 * then sends that free to the slow path; foreign_ready says which are).
 * On pages of their own: a thread that never frees another's blocks never
 * touches them, so a heap costs one resident page, not three (a service
 * of 32 such threads: 0.15 MiB). The empty heap has none (keep_key 0). */
/* After them, the remote table: bytes of other threads' blocks freed by
 * this thread, per arena (slot = arena index mod XA_HEAP_REMOTE_SLOTS, the
 * slot's arena in arena_plus1; a slot taken by another arena is handed to
 * its arena's counter first). Per-arena live bytes stay exact whichever
 * thread frees, with no atomic on the arena's line while a thread frees
 * blocks of many arenas in turn. Zero until the first remote free, and
 * zero again when the heap is released. */
#define XA_HEAP_REMOTE_SLOTS 64
/* The outbox, also on that page: blocks of other threads' slabs that this
 * thread freed and no foreign stack keeps (the class's stack is full: a
 * server thread freeing its clients' requests; blocks of up to 8 KiB, the
 * classes that have foreign stacks), marked free already, held
 * in one chain per slab and pushed to their slab a chain at a time: one
 * atomic exchange per chain instead of one per block, on the word that
 * the owner's collection and the other freeing threads share. A slot per
 * slab hash; a slot taken by another slab, a chain of
 * XA_HEAP_OUTBOX_CHAIN blocks, the heap's malloc slow path, a collection
 * and the heap's release push it. A held block still counts as in use in
 * its class and arena (as in the foreign stack) until its chain goes. */
#define XA_HEAP_OUTBOX_SLOTS 8
#define XA_HEAP_OUTBOX_CHAIN 32
struct xa_heap_outbox {
    xa_slab *slab;           /* NULL: empty */
    xa_block *head, *tail;   /* linked through next, head to tail */
    uint32_t n;
};
/* Remote frees waiting to take effect (see xa_heap_free_remote_fast):
 * enough that the line of the block settled now has come over since its
 * free prefetched it, in a burst of frees of blocks other cores wrote. */
#define XA_HEAP_UNSETTLED 16
struct xa_heap_remote {
    xa_block *unsettled[XA_HEAP_UNSETTLED]; /* NULL: empty slot */
    uint32_t unsettled_next;                /* the slot the next free takes */
    uint32_t arena_plus1[XA_HEAP_REMOTE_SLOTS];
    uint64_t bytes[XA_HEAP_REMOTE_SLOTS]; /* owner-written, read by statistics */
    struct xa_heap_outbox outbox[XA_HEAP_OUTBOX_SLOTS];
};
#define XA_FOREIGN_STRIDE sizeof(xa_slab)
#define XA_HEAP_ALLOC_SIZE                                                               \
    (XA_OS_PAGE + XA_FOREIGN_CLASSES * (XA_FOREIGN_STRIDE + sizeof(xa_slab)) +           \
     sizeof(struct xa_heap_remote))

static inline xa_slab *xa_heap_foreign(const xa_heap *h, unsigned cls)
{
    return (xa_slab *)((uintptr_t)h + XA_OS_PAGE + cls * XA_FOREIGN_STRIDE);
}

/* The serving stack of class cls: the blocks of the foreign stack moved
 * there in one go when this thread's allocations start taking them (it is
 * then cur[cls]), so that the frees meanwhile fill the foreign stack
 * anew: see malloc_slow and foreign_charge in heap.c. */
static inline xa_slab *xa_heap_serving(const xa_heap *h, unsigned cls)
{
    return (xa_slab *)((uintptr_t)h + XA_OS_PAGE + XA_FOREIGN_CLASSES * XA_FOREIGN_STRIDE) + cls;
}

/* s is one of class cls's two stacks (never found by address). */
static inline bool xa_heap_is_stack(const xa_heap *h, unsigned cls, const xa_slab *s)
{
    return cls < XA_FOREIGN_CLASSES &&
           (s == xa_heap_foreign(h, cls) || s == xa_heap_serving(h, cls));
}

static inline struct xa_heap_remote *xa_heap_remote(const xa_heap *h)
{
    return (struct xa_heap_remote *)xa_heap_serving(h, XA_FOREIGN_CLASSES);
}

static inline bool xa_heap_foreign_ready(const xa_heap *h, unsigned cls)
{
    return (h->foreign_ready >> cls) & 1;
}

/* The heap layer reaches the layers above it only through these hooks,
 * which init.c sets before the first heap exists. */
struct xa_heap_hooks {
    struct xa_heap *(*thread_init)(void); /* a thread's first allocation */
    void (*tick)(uint64_t now);            /* upkeep: statistics publication */
    void (*dirty)(void);                   /* xa_arena_dirty_pending: purger */
};
extern struct xa_heap_hooks xa_heap_hooks;
/* Defined by init.c: sets the process (first time) and the calling thread
 * up; returns its heap or NULL. The initial thread_init hook. */
struct xa_heap *xa_heap_boot_thread(void);
/* Set by the purger thread while it runs: slow paths then leave decay to it. */
extern bool xa_heap_purger_active;
/* enum xa_background_state of the purger thread, for the statistics. */
extern unsigned xa_heap_purger_state;

extern xa_heap xa_heap_empty;
extern xa_slab xa_slab_empty;
/* cur[cls] for a moment while the purger reclaims the class's current
 * slab; see heap.c. */
extern xa_slab xa_slab_reclaiming;
#ifdef XA_TEST
/* Called by the idle reclaim at two points of its look at a slab (see
 * heap.c), for unit tests to run owner code in between. */
extern void (*xa_test_reclaim_window)(int point);
#endif
extern __thread xa_heap *xa_tls_heap __attribute__((tls_model("initial-exec")));

/* ---- slow paths (heap.c) ---- */
XA_SLOW_PATH void *xa_heap_malloc_slow(xa_heap *h, unsigned cls);
XA_SLOW_PATH void xa_heap_free_local_slow(xa_heap *h, xa_slab *s);
XA_SLOW_PATH void xa_heap_double_free_check(xa_slab *s, xa_block *b);
/* Frees a small block of a slab this thread does not own. */
void xa_heap_free_remote(xa_heap *h, xa_slab *s, xa_block *b);
/* Holds b, a block of another thread's slab s, marked free, in h's outbox
 * (the class's foreign stack is full). */
void xa_heap_outbox_add(xa_heap *h, xa_slab *s, xa_block *b);
/* The calling thread's heap, created (and the process initialised) if
 * needed. NULL only when memory for a heap cannot be had. */
xa_heap *xa_heap_get_slow(void);
/* Thread exit: hands every slab to the arena, recycles the heap. */
void xa_heap_thread_exit(xa_heap *h);
/* Drains pending frees, returns empty slabs and cached large blocks, and
 * purges the pages of free big blocks. Returns the bytes purged here. */
size_t xa_heap_collect(xa_heap *h);
/* Runs time-based upkeep (decay, statistics) now if due. */
void xa_heap_upkeep(xa_heap *h);
/* Calls the dirty hook when an arena asked for it; no lock may be held. */
static inline void xa_heap_notice_dirty(void)
{
    if (xa_unlikely(__atomic_load_n(&xa_arena_dirty_pending, __ATOMIC_RELAXED)))
        xa_heap_hooks.dirty();
}
/* A change to the requested bytes of big blocks made by h's block cache.
 * Owner only: a plain store the statistics read without a lock. */
static inline void xa_heap_requested_add(xa_heap *h, int64_t bytes)
{
    __atomic_store_n(&h->requested_delta, h->requested_delta + bytes, __ATOMIC_RELAXED);
}

/* Big-block counters of every heap, live and exited. */
struct xa_heaps_big {
    uint64_t nmalloc, nfree, nrealloc;
    uint64_t threads;        /* live heaps */
    uint64_t large_cached;   /* bytes of large blocks parked in heaps' slots */
    int64_t requested_delta; /* to add to the arenas' requested_big */
};
/* Counters of every heap, live and exited, per class and as small-block
 * bytes per arena; arena_carved_bytes: bytes the heaps carved, to add to
 * the arena's class_carved (both arrays have xa_narenas entries). */
void xa_heaps_sum(uint64_t *nmalloc, uint64_t *nfree, int64_t *arena_small_bytes,
                  int64_t *arena_carved_bytes, struct xa_heaps_big *big);
/* Large-block cache: take a cached block of exactly units units, or park
 * a freed one. Both return false when they cannot. Huge blocks of up to
 * XA_HEAP_HUGE_CACHE_MAX park in the same slots, matched by mapping size:
 * a hot 2 MiB buffer freed and taken again costs no lock, no system call
 * and no page fault. */
#define XA_HEAP_HUGE_CACHE_MAX ((size_t)8 << 20)
void *xa_heap_large_cache_take(xa_heap *h, unsigned units);
bool xa_heap_large_cache_put(xa_heap *h, xa_chunk *c, xa_slab *s);
void *xa_heap_huge_cache_take(xa_heap *h, size_t map_size, size_t request);
bool xa_heap_huge_cache_put(xa_heap *h, xa_chunk *c);
/* Returns to their arenas the cached large blocks of every heap that have
 * waited decay_ms (all of them when force). Returns true if any remain. */
bool xa_heaps_decay_caches(uint64_t now);
/* Idle reclaim (purger thread): purges the pages of the empty current
 * slabs of classes a thread has not allocated from since the last look,
 * without the owner's help (a parked thread never runs the allocator
 * again). Returns the nanoseconds until the next look is useful, or
 * UINT64_MAX while no heap holds such pages. force: every empty current
 * slab now, idle or not (malloc_trim; now is then unused, and the
 * purger's schedule is left as it was). */
uint64_t xa_heaps_reclaim_idle(uint64_t now, bool force);
/* Set once the process has several thread heaps: the purger thread is
 * then worth starting under background_thread:auto, for idle reclaim. */
extern bool xa_heaps_many;
void xa_heaps_flush_caches(void);
xa_heap *xa_heap_create(xa_arena *arena);
void xa_heaps_fork_prepare(void);
void xa_heaps_fork_parent(void);
void xa_heaps_fork_child(void);

/* Owner code that changes its heap's lists or current slabs outside
 * malloc runs between these two (they nest): it waits while the purger
 * reclaims from the heap, and the purger leaves a heap alone while busy. */
void xa_heap_wait_reclaim(xa_heap *h);
static inline uint32_t xa_heap_owner_enter(xa_heap *h)
{
    uint32_t prev = h->busy;
    __atomic_store_n(&h->busy, 1, __ATOMIC_RELAXED);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    if (xa_unlikely(__atomic_load_n(&h->reclaiming, __ATOMIC_ACQUIRE)))
        xa_heap_wait_reclaim(h);
    return prev;
}
static inline void xa_heap_owner_leave(xa_heap *h, uint32_t prev)
{
    __atomic_store_n(&h->busy, prev, __ATOMIC_RELEASE);
}

/* ThreadSanitizer cannot see the membarrier of idle reclaim, which orders
 * an owner's last free before the purger's look: in a TSan build a free
 * publishes itself with a release store of busy (unchanged), which the
 * purger's acquire load of busy pairs with. Nothing in other builds.
 * XA_USED_INC: malloc's count of a slab's blocks out. The purger reads
 * the count of a slab that a racing free may have made current again
 * (and a malloc then counted into) and drops what it read when the
 * class's counters moved meanwhile (see reclaim_pass): a plain increment
 * on x86, a relaxed atomic one for TSan, which cannot know the value is
 * dropped. */
#if defined(__SANITIZE_THREAD__)
#define XA_TSAN_BUILD 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define XA_TSAN_BUILD 1
#endif
#endif
#ifdef XA_TSAN_BUILD
#define XA_TSAN_PUBLISH(h) \
    __atomic_store_n(&(h)->busy, __atomic_load_n(&(h)->busy, __ATOMIC_RELAXED), __ATOMIC_RELEASE)
#else
#define XA_TSAN_PUBLISH(h) ((void)0)
#endif
#ifdef XA_TSAN_BUILD
#define XA_USED_INC(s) __atomic_fetch_add(&(s)->used, 1, __ATOMIC_RELAXED)
#else
#define XA_USED_INC(s) ((s)->used++)
#endif

/* ---- fast paths ---- */

XA_FAST_PATH xa_heap *xa_heap_get(void)
{
    xa_heap *h = xa_tls_heap;
    if (xa_likely(h != &xa_heap_empty))
        return h;
    return xa_heap_get_slow();
}

XA_FAST_PATH void *xa_heap_malloc_class(xa_heap *h, size_t cls)
{
#if defined(__x86_64__)
    /* The heap and the class straight into the slow path's argument
     * registers: else compilers keep them elsewhere and copy them (or the
     * block, for the return) on every call, in case the slow path runs. */
    __asm__("" : "+S"(cls), "+D"(h));
#endif
    /* busy before the load of cur[]: the purger swaps cur[] first, then
     * reads busy after a process-wide barrier (asymmetric Dekker: the
     * owner's side needs no fence instruction, only this order). */
    __atomic_store_n(&h->busy, 1, __ATOMIC_RELAXED);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    /* (acquire: a slab the purger reset is seen whole; a plain load on x86) */
    xa_slab *s = __atomic_load_n(&h->cur[cls], __ATOMIC_ACQUIRE);
    xa_block *b = (xa_block *)s->free;
    if (xa_unlikely(!b))
        return xa_heap_malloc_slow(h, (unsigned)cls); /* clears busy */
    s->free = b->next ^ xa_heap_secret;
    xa_block_clear(b);
    XA_USED_INC(s);
    h->nmalloc[cls]++;
    __atomic_store_n(&h->busy, 0, __ATOMIC_RELEASE);
    return b;
}

XA_FAST_PATH void *xa_heap_malloc_small(xa_heap *h, size_t size)
{
    return xa_heap_malloc_class(h, xa_size_class(size));
}

/* True when p is at a block boundary of s among the blocks carved so far
 * (p inside the slab's units). One multiply gives both: the low half of
 * rel * ceil(2^64 / size) is below the magic exactly at a boundary, and
 * the high half is then the block's index. Blocks past the carved ones
 * (never handed out, or in pages the purger took from an idle slab, where
 * the free mark is gone) go to the slow path, which reports them. */
XA_FAST_PATH bool xa_slab_is_block(const xa_slab *s, const void *p)
{
    uint64_t rel = (uint32_t)((uintptr_t)p - (uintptr_t)s->start);
    unsigned __int128 m = (unsigned __int128)rel * s->div_magic;
    return (uint64_t)m < s->div_magic && (uint32_t)(m >> 64) < s->capacity;
}

/* True when b's link field could be a free-list link of s: a block already
 * on a free list links into its own slab or to nothing. Live blocks have
 * the field cleared at malloc, so only a double free (or user data that
 * happens to decode into the slab) needs the slow scan. */
XA_FAST_PATH bool xa_slab_link_suspect(const xa_slab *s, const xa_block *b)
{
    (void)s;
    uintptr_t link = b->next ^ xa_heap_secret;
    /* Same chunk as the block (a free-list link always is), or the end of
     * a list: three instructions, no load but the block's own word. */
    return ((link ^ (uintptr_t)b) >> XA_CHUNK_SHIFT) == 0 || link == 0;
}

/* True when b carries the free mark: it is free already (a double free,
 * or realloc of a freed block), or the program wrote the mark there. */
XA_FAST_PATH bool xa_block_marked_free(const xa_block *b)
{
    return b->mark == xa_free_mark_of(b);
}

/* --*p as a signed count; true when the result is zero or negative (the
 * XA_USED_SLOW flag). One decrement in memory and one branch on its flags
 * (compilers load, subtract, store and test). */
XA_FAST_PATH bool xa_dec_not_positive(uint32_t *p)
{
    /* The purger reads the count (acquire) before it resets an empty
     * slab: the push before the decrement must be visible by then. x86
     * keeps stores in order; TSan (which sees no asm) and other machines
     * get a release decrement. */
#if defined(__x86_64__) && !defined(XA_TSAN_BUILD)
    __asm__ goto("subl $1, %0\n\tjle %l[not_positive]"
                 : /* no outputs: *p is in memory, the clobber says so */
                 : "m"(*p)
                 : "cc", "memory"
                 : not_positive);
    return false;
not_positive:
    return true;
#else
    return (int32_t)__atomic_sub_fetch(p, 1, __ATOMIC_RELEASE) <= 0;
#endif
}

/* Bytes of big-class blocks (XA_SLAB_TRIM) a heap frees between two looks
 * at its pool of free big blocks (see heap.c). */
#define XA_HEAP_TRIM_ALLOWANCE ((uint64_t)2 << 20)

/* Pushes b onto its slab's free list; the caller owns the slab and has
 * checked the block (xa_slab_is_block, xa_block_marked_free). */
XA_FAST_PATH void xa_heap_free_owned(xa_heap *h, xa_slab *s, xa_block *b)
{
    uintptr_t mark = xa_free_mark_of(b); /* read before the stores: they may alias it */
    size_t cls = s->cls; /* (kept in a register across the decrement's asm) */
    b->next = s->free ^ xa_heap_secret;
    b->mark = mark;
    s->free = (uintptr_t)b;
    /* Counted before the decrement: the purger reads the count of a slab
     * it may reset, then this counter, and drops the slab if a free (which
     * may have made it current again, its sentinel gone) came meanwhile. */
    h->nfree[cls]++;
    XA_TSAN_PUBLISH(h);
    /* One test for "now empty" and "flagged" (XA_USED_SLOW). A slab the
     * heap keeps when empty (its list's head) never counts down to zero
     * (XA_USED_HEAD): an empty one here goes back to the arena. */
    if (xa_unlikely(xa_dec_not_positive(&s->used))) {
        if (s->used == 0) {
            xa_heap_free_local_slow(h, s);
            return;
        }
        /* Flagged. A big-class slab in use only counts the bytes towards
         * the next look at the pool: done here while under the allowance,
         * so a loop over big blocks makes no call. */
        uint64_t pending = h->trim_pending + s->block_size;
        if (s->in_full == XA_SLAB_TRIM && pending <= XA_HEAP_TRIM_ALLOWANCE &&
            (s->used & ~XA_USED_SLOW) != 0) { /* blocks out, or the kept head */
            h->trim_pending = pending;
            /* The block freed serves the next malloc of its class (as below). */
            __atomic_store_n(&h->cur[cls], s, __ATOMIC_RELAXED);
            return;
        }
        xa_heap_free_local_slow(h, s);
        return;
    }
    /* The slab just freed into serves the next malloc of its class: that
     * block's line is in cache now (the free wrote it), where the current
     * slab's next block may be cold (ovsdb update, larson: frees spread
     * over many slabs of a big working set). Any slab in the class list
     * may be current; only the list's head is kept when it empties.
     * (This store may undo the idle reclaim's sentinel: see nfree.) */
    __atomic_store_n(&h->cur[cls], s, __ATOMIC_RELAXED);
}

/* Keeps b (marked free already) in foreign stack f, which holds n blocks
 * (fewer than its capacity). */
XA_FAST_PATH void xa_heap_foreign_push(xa_slab *f, xa_block *b, uint32_t n)
{
    b->next = f->free ^ xa_heap_secret;
    f->free = (uintptr_t)b;
    f->reserved = n + 1;
}

/* A block of slab s (chunk c) whose owner exited, freed by h: kept like
 * any other thread's block when h cannot adopt the slab (another arena's:
 * a thread that replaces one that exited is often bound elsewhere, and
 * larson's successor threads freed every such block through
 * xa_heap_free_remote); else the slow path adopts it (adopt_on_free).
 * Never for a big-class slab, whose frees count towards its trim. */
XA_FAST_PATH bool xa_heap_keeps_abandoned(const xa_heap *h, const xa_chunk *c, const xa_slab *s)
{
    return s->in_full == XA_SLAB_ABANDONED && c->arena != h->arena;
}

/* True when h keeps a freed block of slab s (chunk c, another heap's or
 * none's) in its foreign stack or outbox: a block of h's node (the test
 * that fails at once for a thread with no heap, keep_key 0, a consumer
 * that only frees), of a class with stacks, of a slab neither trimmed nor
 * abandoned but in another arena (and not XA_SLAB_PAGES_PURGED: those
 * frees are checked in xa_heap_free_remote). */
XA_FAST_PATH bool xa_heap_keeps_remote(const xa_heap *h, const xa_chunk *c, const xa_slab *s)
{
    return s->small.keep_key == h->keep_key && s->cls < XA_FOREIGN_CLASSES &&
           (!(s->in_full & (XA_SLAB_TRIM | XA_SLAB_ABANDONED)) || xa_heap_keeps_abandoned(h, c, s));
}

/* Brings b's line in for writing without waiting for it: the prefetch
 * retires at once, where a load of a line another core wrote holds up
 * every later instruction until it arrives. */
XA_FAST_PATH void xa_prefetch_write(const void *b)
{
#if defined(__x86_64__)
    __asm__("prefetchw %0" : : "m"(*(const char *)b));
#else
    __builtin_prefetch(b, 1, 3);
#endif
}

/* Lets the remote frees still in h's unsettled ring take effect (h the
 * caller's heap): its malloc slow paths, release, collection and the
 * process's exit do. */
void xa_heap_settle_all(xa_heap *h);

/* Settles u, a block this thread freed a few remote frees ago: checked
 * as a free of it would be checked now, then marked and kept in the
 * foreign stack of its class (past a full stack, in the outbox). The fast
 * case in one pass; anything else (a double free, a block no longer of a
 * live slab, an owner or arena that changed meanwhile) goes to
 * xa_heap_settle_slow, which reports it or frees it the slow way. */
void xa_heap_settle_slow(xa_heap *h, xa_block *u);
XA_FAST_PATH void xa_heap_settle(xa_heap *h, xa_block *u)
{
    /* A chunk of slabs still: a slab emptied meanwhile (by a double free
     * of its owner's) may have taken its chunk back to the OS. */
    if (xa_likely(xa_region_of(u) == XA_REGION_RUNS)) {
        xa_chunk *c = xa_chunk_of(u);
        xa_slab *s = xa_run_of(c, u);
        if (xa_likely(s->kind == XA_RUN_SMALL && xa_slab_is_block(s, u) &&
                      !xa_block_marked_free(u) && s->heap != h && xa_heap_keeps_remote(h, c, s) &&
                      xa_heap_foreign_ready(h, s->cls))) {
            xa_slab *f = xa_heap_foreign(h, s->cls);
            uint32_t n = f->reserved;
            u->mark = xa_free_mark_of(u);
            if (xa_likely(n < f->capacity))
                xa_heap_foreign_push(f, u, n);
            else
                xa_heap_outbox_add(h, s, u); /* full: for its owner */
            return;
        }
    }
    xa_heap_settle_slow(h, u);
}

/* A small block of another thread's slab (s->kind SMALL, s->heap not h, p
 * a carved block of s), freed the way it nearly always is: kept in this
 * thread's foreign stack for its next malloc of the class (past a full
 * stack, in the outbox: a thread that frees what others allocate). A
 * leaf: no frame, one test per condition; everything else (another
 * arena, a big block to purge, no heap, a slab whose owner exited) goes
 * to xa_heap_free_remote.
 *
 * Such a free takes effect XA_HEAP_UNSETTLED such frees later: b waits
 * in a slot of the heap's unsettled ring, untouched but for a prefetch,
 * and the block that waited there is settled instead (checked, marked,
 * kept), its line in cache by then. The check for a double free reads the
 * block's mark; the block is, in a producer/consumer service, one the
 * other thread has just written, and that read held up the freeing thread
 * until the line came over (a third of ovsdb producer/consumer's time).
 * The heap's release and collection settle the whole ring. A double free
 * is so reported that much later, and a free of a block its owner freed
 * and reused meanwhile acts as if it had come that late. */
XA_FAST_PATH void xa_heap_free_remote_fast(xa_heap *h, xa_chunk *c, xa_slab *s, xa_block *b)
{
    if (xa_likely(xa_heap_keeps_remote(h, c, s))) {
        if (xa_likely(xa_heap_foreign(h, s->cls)->capacity != 0)) { /* (0: not set up yet) */
            struct xa_heap_remote *r = xa_heap_remote(h);
            unsigned i = r->unsettled_next++ % XA_HEAP_UNSETTLED;
            xa_block *u = r->unsettled[i];
            r->unsettled[i] = b;
            xa_prefetch_write(b);
            if (xa_likely(u != NULL))
                xa_heap_settle(h, u);
            return;
        }
    }
    xa_heap_free_remote(h, s, b);
}

#endif /* XA_HEAP_H */
