/* arena.h: arenas own chunks. They hand out runs of units (slabs for the
 * heaps, large blocks), huge blocks as mappings of their own, keep the free
 * runs indexed for O(1) best fit (one bin per run length, dirty runs first)
 * with coalescing, and decide when free memory goes back to the OS (decay).
 * Every function here takes the arena lock: arenas are slow-path only.
 * Layer: above chunkmap, pages, numa, meta; below heap. */
#ifndef XA_ARENA_H
#define XA_ARENA_H

#include "chunk.h"
#include "lock.h"
#include "sizeclass.h"

#define XA_MAX_ARENAS 1024
#define XA_LARGE_MAX_UNITS (XA_UNITS_PER_CHUNK - 1)
#define XA_LARGE_MAX ((size_t)XA_LARGE_MAX_UNITS * XA_UNIT_SIZE)
/* Where a huge block starts in its mapping: past the two descriptors a
 * huge chunk uses (slabs[0], with the chunk's fields, and slabs[1], the
 * profiling record), not past the whole header page. The block's first
 * bytes then share the page the header dirties anyway: a block whose
 * program touches only its ends costs two resident pages, as under glibc,
 * not three. Nothing reads slabs[2..] of a huge chunk. 256 bytes also
 * keeps the block aligned for any vector type and off the header's lines. */
#define XA_HUGE_HEADER (2 * sizeof(xa_slab))
_Static_assert(XA_HUGE_HEADER % 64 == 0 && XA_HUGE_HEADER < XA_OS_PAGE,
               "a huge block starts on a cache line of the header page");

/* Who purged: at free time (dirty above the allowance), decay on an
 * allocation slow path, decay on the purger thread, or on request
 * (malloc_trim, xalloc_purge, xalloc-stat --purge). */
enum xa_purge_path {
    XA_PURGE_AT_FREE = 0,
    XA_PURGE_SLOW_PATH = 1,
    XA_PURGE_THREAD = 2,
    XA_PURGE_TRIM = 3,
    XA_PURGE_PATHS = 4,
};

/* Dirty memory an arena may hold before frees purge it at once: at least
 * this many units (4 MiB: hot blocks freed and taken again stay resident;
 * the hottest, up to 8 MiB, are parked in the thread's own slots and do
 * not count here), or an eighth of what is in use. Above it, the
 * oldest dirty runs are purged down to half the allowance, so one purge
 * covers many frees. */
#define XA_DIRTY_FLOOR_UNITS 64u

typedef struct xa_arena {
    xa_lock lock;
    unsigned index;
    int node;                         /* NUMA node of its memory */
    uint32_t nthreads;                /* threads bound (atomic) */
    uint32_t bins_nonempty;           /* bit n: a free run of n units exists */
    xa_slab *bin_head[XA_UNITS_PER_CHUNK];
    xa_slab *bin_tail[XA_UNITS_PER_CHUNK];
    xa_slab *dirty_head, *dirty_tail; /* free runs waiting for decay, FIFO */
    xa_slab *abandoned[XA_NCLASSES];  /* slabs of exited threads */
    uint16_t warm_slabs[XA_NCLASSES]; /* of them, kept empty (xa_arena_slab_keep) */
    uint64_t warm_bytes;              /* their runs' bytes (lock; read as a hint) */
    /* Of the others (blocks still out), those whose free pages are yet to
     * be purged (freed_ns set): the purger comes back for them (lock;
     * read as a hint). */
    uint32_t trim_due_slabs;
    xa_chunk *chunks;                 /* chunks of runs */
    xa_chunk *huge_live;              /* live huge blocks */
    xa_chunk *huge_cache;             /* freed huge mappings kept for reuse */
    uint64_t next_decay_ns;
    /* statistics, under the lock */
    uint64_t nchunks, huge_mapped, huge_cache_bytes, huge_cache_count;
    uint64_t used_units, dirty_units, retained_units;
    uint64_t dirty_low_units;         /* lowest dirty_units since the last free-time purge */
    /* Units freed lately, less twice the units taken, never below zero:
     * it grows only while frees outrun reuse by more than 2:1 (a mass
     * free, a heap that shrinks), while a program that frees and takes
     * alike drives it to zero again whatever its pool does. A phase of
     * allocations alone leaves nothing behind: a mass free that follows
     * counts from its first unit. */
    uint64_t free_streak_units;
    /* Free-time purge learning (see xa_purge_oldest): units the last
     * purge gave back and when, clean units handed out since, and the
     * floor the allowance has learned from them. */
    uint64_t last_purge_units, refault_units, churn_floor_units, last_purge_ns;
    /* Most units in use since the floor last halved: the floor's ceiling
     * follows it, not the units in use at the purge (see xa_purge_oldest). */
    uint64_t peak_used_units;
    /* Huge-block reuse learning (see huge.c): the last mapping unmapped at
     * free (not by decay) and when, and the bytes of freed mappings the
     * cache keeps beyond the dirty allowance since one was mapped again. */
    uint64_t huge_unmapped_ns, huge_unmapped_size, huge_keep_bytes;
    uint64_t purged_bytes, npurge;
    uint64_t purged_by[XA_PURGE_PATHS]; /* bytes purged, per enum xa_purge_path */
    uint64_t huge_chunks;             /* chunks of runs backed by huge pages now */
    uint64_t thp_promotions, thp_demotions;
    bool purge_split;                 /* purge_all: huge chunks purged in part too */
    uint64_t large_count, large_bytes, huge_count, huge_bytes;
    uint64_t requested_big;           /* atomic: bytes requested for live large and huge blocks */
    uint64_t class_slabs[XA_NCLASSES], class_capacity[XA_NCLASSES];
    uint64_t class_carved[XA_NCLASSES];
    /* Allocation counts of blocks of this arena: those of exited heaps
     * (under the heap-list lock) and frees by other threads (atomic). */
    uint64_t dead_nmalloc[XA_NCLASSES], dead_nfree[XA_NCLASSES];
    /* Bytes of blocks carved by its heaps, those of exited ones (under the
     * heap-list lock); class_carved counts the rest (see carved_bytes in
     * heap.h). */
    int64_t dead_carved_bytes;
    uint64_t remote_nfree[XA_NCLASSES]; /* by threads without a heap */
    uint64_t remote_freed_bytes;        /* atomic: bytes handed over by heaps (remote_bytes) */
} xa_arena;

/* Counts bytes of a purged in calls purges, on purge path path
 * (enum xa_purge_path; statistics). */
static inline void xa_arena_count_purged(xa_arena *a, unsigned path, uint64_t bytes,
                                         uint64_t calls)
{
    __atomic_fetch_add(&a->purged_by[path], bytes, __ATOMIC_RELAXED);
    __atomic_fetch_add(&a->purged_bytes, bytes, __ATOMIC_RELAXED);
    __atomic_fetch_add(&a->npurge, calls, __ATOMIC_RELAXED);
}

extern unsigned xa_narenas;
/* Set when an arena gains dirty memory while it was clear; the layer above
 * (which may start or wake the purger thread) clears it. A hint only. */
extern bool xa_arena_dirty_pending;
/* Dirty, cached and warm bytes of every arena (free memory kept resident
 * that decay gives back), read without locks (a hint). */
uint64_t xa_arenas_dirty_bytes(void);
extern xa_arena *xa_arenas[XA_MAX_ARENAS];

/* Sets the arena count; arenas themselves are created on first use. */
void xa_arena_boot(unsigned narenas);
/* The arena a new thread is bound to (round robin, by node under NUMA). */
xa_arena *xa_arena_choose(void);
/* The same among the arenas of NUMA slot slot (a thread that moved). */
xa_arena *xa_arena_choose_on(int slot);
/* Arena i, created if needed; NULL if metadata memory ran out. */
xa_arena *xa_arena_get(unsigned i);

/* A fresh slab of class cls owned by heap; NULL when out of memory. */
xa_slab *xa_arena_slab_new(xa_arena *a, unsigned cls, struct xa_heap *heap);
/* An abandoned slab of class cls, now owned by heap; NULL if none. */
xa_slab *xa_arena_slab_adopt(xa_arena *a, unsigned cls, struct xa_heap *heap);
/* Slab s, when it is still abandoned, now owned by heap (its remote frees
 * collected); false when another thread took it first. */
bool xa_arena_slab_adopt_this(xa_arena *a, xa_slab *s, struct xa_heap *heap);
/* Returns an empty slab's run (its owner no longer lists it). */
void xa_arena_slab_free(xa_chunk *c, xa_slab *s);
/* Hands a non-empty slab to the arena (owner thread exits). */
void xa_arena_slab_abandon(xa_chunk *c, xa_slab *s);
/* An empty slab of an exiting thread (a class below XA_TRIM_MIN_BLOCK),
 * kept as it is (carved, resident) among the abandoned ones, for the next
 * thread of the arena to adopt instead of carving a new slab; freed when
 * no thread took it within a decay step. False when the class has
 * XA_WARM_SLABS kept already, or decay_ms is 0: the caller frees it (and
 * does not ask under tcache:off). */
bool xa_arena_slab_keep(xa_chunk *c, xa_slab *s);
#define XA_WARM_SLABS 4
/* Moves a slab's remote frees onto its free list; the caller owns the
 * slab (its heap's thread, or the arena lock for an ownerless one).
 * Returns the blocks moved. */
uint32_t xa_slab_collect(xa_slab *s);
/* Free blocks of abandoned slab s off its list, their pages purged (see
 * XA_SLAB_PAGES_PURGED); 0 for any other slab. */
uint32_t xa_slab_withheld(const xa_slab *s);
/* Purges the pages of free big block b (a class of XA_TRIM_MIN_BLOCK and
 * up) but the one of its first words, once; returns the bytes purged,
 * counted on purge path path. */
size_t xa_slab_trim_block(xa_block *b, uint32_t block_size, unsigned path);
/* Makes s, an empty slab of a class below XA_TRIM_MIN_BLOCK that its heap
 * kept, a slab of class cls (the same run length, below XA_TRIM_MIN_BLOCK
 * too) with no block carved. The caller, its heap, uncounts the bytes it
 * had carved (see carved_bytes in heap.h). */
void xa_arena_slab_reclass(xa_slab *s, unsigned cls);
/* Counts blocks carved from a slab (statistics, and the chunk's density
 * under the DENSE page policy). */
void xa_arena_note_carved(xa_slab *s, uint32_t n);
/* The density part alone, for a heap that counts the bytes itself (see
 * carved_bytes in heap.h). Under the DENSE page policy only. */
void xa_arena_note_dense_carved(xa_slab *s, uint32_t n);
/* Counts every block of s as uncarved again (its pages were purged and it
 * starts over from its first page); may demote the chunk's huge pages. */
void xa_arena_note_uncarved(xa_slab *s);

/* Large blocks: runs of units; size <= XA_LARGE_MAX. */
void *xa_arena_large_alloc(xa_arena *a, size_t size, bool zero);
void xa_arena_large_free(xa_chunk *c, xa_slab *s);
/* Resizes a large block in place (shrink, or grow into a free right
 * neighbour). Returns true on success. */
bool xa_arena_large_resize(xa_chunk *c, xa_slab *s, size_t new_size);

/* Dirty bytes the arena may hold before frees purge (in units): the
 * floor, or an eighth of what is in use. Huge-block caching counts against
 * it too (huge.c). Pre: a's lock held. */
uint64_t xa_arena_dirty_allowance_units(const xa_arena *a);
/* A fresh mapping for a huge block: the learnt free-time purge floor is
 * forgotten and the excess dirty memory purged. Pre: a's lock held. */
void xa_decay_forget_churn(xa_arena *a, uint64_t now);
/* Unmaps a's cached huge mappings that have waited decay_ms (all with
 * force); returns their bytes. Pre: a's lock held. */
size_t xa_huge_cache_purge(xa_arena *a, uint64_t now, bool force);

/* Huge blocks (huge.c): a mapping each, from an alignment-aware mapping. */
void *xa_huge_alloc(xa_arena *a, size_t size, size_t align, bool zero);
/* A cached mapping of size have serves a request of size want when it is
 * at most a quarter too big (any unit, the same for both): the arena's
 * cache of mappings and the heaps' slots take the same ones. */
static inline bool xa_huge_cached_fits(uint64_t have, uint64_t want)
{
    return have >= want && have - want <= want / 4;
}
void xa_huge_free(xa_chunk *c);
/* Resizes in place or moves with mremap; returns the (possibly new)
 * pointer, or NULL with the block untouched. */
void *xa_huge_realloc(xa_chunk *c, size_t new_size);

/* Purges what has waited decay_ms (cheap when nothing is due); path
 * says who asks, for the statistics. */
void xa_arena_maybe_decay(xa_arena *a, uint64_t now, unsigned path);
/* Purges every free page now; returns bytes purged. */
size_t xa_arena_purge_all(xa_arena *a);

void xa_arenas_fork_prepare(void);
void xa_arenas_fork_parent(void);
void xa_arenas_fork_child(void);

#endif /* XA_ARENA_H */
