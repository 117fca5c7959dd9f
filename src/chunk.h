/* chunk.h: the layout of a chunk and of the run (slab / large extent)
 * descriptors in its header. Layer: data definitions shared by arena
 * (which owns chunks) and heap (which owns slabs). No functions.
 *
 * A chunk is 2 MiB, 2 MiB-aligned: exactly one huge page. Unit 0 (64 KiB)
 * holds the header (its first page: the chunk's fields and the run
 * descriptors); units 1..31 are cut into runs. A run is either free, a slab
 * of one size class, or one large block. Its descriptor is slabs[first
 * unit]; first_of[u] gives the first unit of the run holding unit u.
 * free() tries slabs[unit of p] first (no load: see xa_unit_desc), so a
 * descriptor inside a run (not its first unit) stays zeroed.
 * A huge block is a chunk of its own (several 2 MiB regions) whose slabs[0]
 * has kind XA_RUN_HUGE. */
#ifndef XA_CHUNK_H
#define XA_CHUNK_H

#include <stdatomic.h>
#include <stddef.h>

#include "common.h"

enum xa_run_kind {
    XA_RUN_FREE = 0,
    XA_RUN_SMALL = 1,
    XA_RUN_LARGE = 2,
    XA_RUN_HEADER = 3,
    XA_RUN_HUGE = 4,
};

/* States of a slab's thread_free word (low two bits; blocks are 16-aligned). */
enum xa_tf_state {
    XA_TF_NORMAL = 0,    /* remote frees go to the list */
    XA_TF_NOTIFY = 1,    /* slab is (or was) full: the next remote free tells the owner */
    XA_TF_NOTIFYING = 2, /* a remote thread is telling the owner now */
    XA_TF_NEVER = 3,     /* no owner (abandoned): never notify */
};
#define XA_TF_MASK ((uintptr_t)3)
/* The rest of the word: the list's first block (bits 4-47: user-space
 * addresses fit in 47 bits, blocks are 16-aligned) and, in bits 48-63, how
 * many blocks the list holds, added by each push, so that the owner takes
 * the whole list without walking it (the walk was a cache miss per block,
 * in the owner, for blocks another thread had just written). A slab holds
 * fewer than 2^16 blocks (check_sizeclass checks it). */
#define XA_TF_COUNT_SHIFT 48
#define XA_TF_LIST_MASK ((((uintptr_t)1 << XA_TF_COUNT_SHIFT) - 1) & ~(uintptr_t)15)
#define XA_TF_MAX_BLOCKS 0xffffu

/* The first block of a thread_free word's list (0 if empty). */
static inline uintptr_t xa_tf_list(uintptr_t word)
{
    return word & XA_TF_LIST_MASK;
}

/* The number of blocks on a thread_free word's list. */
static inline uint32_t xa_tf_count(uintptr_t word)
{
    return (uint32_t)(word >> XA_TF_COUNT_SHIFT);
}

typedef struct xa_block {
    uintptr_t next; /* encoded with the process secret */
    uintptr_t mark; /* xa_free_mark_of(block) while free, 0 once handed out */
} xa_block;

/* Clears both words of a block being handed out (a live block never
 * decodes to a free-list link nor carries the free mark) with one 16-byte
 * store: one store fewer per malloc, the same instruction count (the zero
 * register costs the instruction the second store did); 4% off a
 * malloc/free pair. Unaligned form, as 8 bytes is all the type promises. */
static inline void xa_block_clear(xa_block *b)
{
    typedef uintptr_t xa_block_words __attribute__((vector_size(16), aligned(8), may_alias));
    _Static_assert(sizeof(xa_block) == sizeof(xa_block_words), "two words");
    *(xa_block_words *)b = (xa_block_words){0, 0};
}

/* The secret every free-list link is XORed with, and the mark every free
 * small block carries in its second word (defined in heap.c, set once by
 * init before the first block exists). The mark is what tells a second
 * free of a block from a first, whichever threads make them: a free block
 * may sit on its slab's lists, its owner's delayed list or another
 * thread's stack, which no other thread can walk. A live block carries it
 * only if the program wrote that random 64-bit value there itself. */
extern XA_HIDDEN uintptr_t xa_heap_secret, xa_heap_free_mark;

/* The mark of the free block at b: it depends on the address, so that a
 * stale mark copied elsewhere (realloc or the program copying bytes it
 * never wrote, from memory that once held free blocks) is no mark there. */
static inline uintptr_t xa_free_mark_of(const void *b)
{
    return xa_heap_free_mark ^ (uintptr_t)b;
}

struct xa_heap;
struct xa_arena;

/* Bits of a small slab's in_full byte. Any bit set sends the owner's free
 * to xa_heap_free_local_slow, at no cost to the fast path, which tests the
 * byte anyway: IN_FULL, the slab is in the owner's full list; TRIM, its
 * blocks have whole pages of their own, and frees count towards purging
 * them (see heap.c). */
#define XA_SLAB_IN_FULL 1u
#define XA_SLAB_TRIM 2u
/* In the arena's abandoned list (no owner): set and cleared under the
 * arena lock. */
#define XA_SLAB_ABANDONED 4u
/* Abandoned, and pages of it that held only free blocks purged (see
 * purged_pages): set and cleared under the arena lock, with ABANDONED. */
#define XA_SLAB_PAGES_PURGED 8u

typedef struct xa_slab {
    /* ---- first line: what a free reads to know the block, and the word
     * other threads' frees push to. Written on slow paths only (and by
     * the pushes, one atomic per chain), so a thread freeing another's
     * blocks reads a line that the owner's malloc and free leave alone:
     * were the owner's counters here, every such free would pull the
     * line from the owner's core and the owner's next malloc pull it
     * back (producer/consumer: a third of malloc's time). ---- */
    _Atomic uintptr_t thread_free; /* count | remote-freed blocks | enum xa_tf_state */
    uint8_t in_full;          /* small: XA_SLAB_IN_FULL | XA_SLAB_TRIM; large: parked */
    uint8_t kind;             /* enum xa_run_kind */
    uint8_t cls;              /* size class (small) */
    uint8_t units;            /* run length in units */
    union {
        uint32_t dunits;      /* free run: units touched since last purge */
        /* Small, XA_SLAB_PAGES_PURGED: bit per 4 KiB page from start (a
         * small class's slab spans 32 at most) purged while abandoned;
         * the free blocks whose first bytes lay there are off the free
         * list until an adopter lists them again (atomic: remote frees
         * read it). */
        uint32_t purged_pages;
    };
    struct xa_heap *heap;     /* owner; NULL when none */
    char *start;              /* first block */
    uint64_t div_magic;       /* ceil(2^64 / block_size): interior-pointer test */
    union {
        size_t large_size;    /* large: requested bytes */
        /* Small: the keep key and index of the chunk's arena, set when
         * the slab is made, so that a free of another thread's block reads
         * no line but this one and the block's (the header lines of all
         * chunks share one set of the L1 cache: 2 MiB apart). */
        struct {
            uint32_t keep_key;
            uint32_t arena_index;
        } small;
    };
    uint32_t capacity;        /* blocks carved so far */
    uint32_t reserved;        /* blocks the slab holds */
    uint32_t block_size;
    uint8_t first_unit;
    uint8_t dirty;            /* free run: dunits > 0 */
    uint8_t zeroed;           /* free/large run: known to read as zero */
    uint8_t in_dirty_list;
    /* ---- second line: the owner's fast paths (malloc touches nothing
     * else of the slab) and slow paths ---- */
    uintptr_t free;           /* first free block (plain pointer), 0 = none */
    uint32_t used;            /* blocks out, incl. remote frees not collected */
    /* Small, abandoned: kept empty at its thread's exit for the next
     * thread of the arena (xa_arena_slab_keep; freed_ns is then when). */
    uint32_t warm;
    struct xa_slab *next, *prev;   /* heap class list, full list, bins */
    struct xa_slab *dnext, *dprev; /* arena dirty FIFO (free runs) */
    /* Free run: when it became free. Small, abandoned: warm, when it was
     * kept; else when it was abandoned or last got remote frees, 0 once
     * its free pages were purged (see xa_slab_reclaim_abandoned). */
    uint64_t freed_ns;
#if XA_PROF
    /* Profiling build: a sampled large block's record (in a huge chunk,
     * slabs[1]'s holds the huge block's); NULL or stale otherwise, which
     * the record's own pointer tells apart (prof.c). */
    void *prof_rec;
#else
    uint64_t pad[1];          /* 128 bytes: descriptors indexed by shift */
#endif
} xa_slab;

_Static_assert(sizeof(xa_slab) == 128, "slab descriptor is 128 bytes");
_Static_assert(offsetof(xa_slab, in_dirty_list) < 64 && offsetof(xa_slab, free) == 64,
               "what frees read on the first line, the owner's counters on the second");

/* Bit 31 of a small slab's used mirrors in_full != 0 (but for the head of
 * a big class, see xa_slab_slow_bit), so the owner's free tests "empty or
 * flagged" with the one decrement it does anyway (a result <= 0 as a
 * signed number). Counts stay far below bit 30. */
#define XA_USED_SLOW 0x80000000u
/* Bit 30: s heads its owner's class list (often the current slab) and
 * the heap keeps it when it empties (tcache on). The owner's free then
 * never sees its count reach zero, so that test has a single outcome: the
 * slow path. */
#define XA_USED_HEAD 0x40000000u
#define XA_USED_FLAGS (XA_USED_SLOW | XA_USED_HEAD)

/* Blocks out of a small slab (the count without the flags). */
static inline uint32_t xa_slab_used(const struct xa_slab *s)
{
    return s->used & ~XA_USED_FLAGS;
}

/* True when b's first bytes (link and mark) lie in a page of s purged
 * while s was abandoned: b was free then, and is off the free list. */
static inline bool xa_slab_block_withheld(const struct xa_slab *s, const void *b)
{
    uintptr_t page = ((uintptr_t)b - (uintptr_t)s->start) / XA_OS_PAGE;
    return page < 32 &&
           ((__atomic_load_n(&s->purged_pages, __ATOMIC_RELAXED) >> page) & 1u) != 0;
}

/* The XA_USED_SLOW bit a small slab with in_full byte v and count used
 * carries: set in the full list or abandoned, and for a big-class slab
 * (TRIM), whose frees count towards the trim of free blocks, unless it
 * heads its owner's class list. A block of the head is freed and taken
 * again at once in the common case, so its free stays on the fast path;
 * a mass free reaches the head's blocks last, and upkeep trims those. */
static inline uint32_t xa_slab_slow_bit(unsigned v, uint32_t used)
{
    bool flagged = (v & ~XA_SLAB_TRIM) != 0 || ((v & XA_SLAB_TRIM) && !(used & XA_USED_HEAD));
    return flagged ? XA_USED_SLOW : 0;
}

/* Sets a small slab's SLOW bit from its in_full byte and HEAD bit. */
static inline void xa_slab_sync_slow(struct xa_slab *s)
{
    s->used = (s->used & ~XA_USED_SLOW) | xa_slab_slow_bit(s->in_full, s->used);
}

/* Sets a small slab's in_full byte and its mirror in used. */
static inline void xa_slab_set_in_full(struct xa_slab *s, unsigned v)
{
    s->in_full = (uint8_t)v;
    xa_slab_sync_slow(s);
}

#define XA_CHUNK_MAGIC 0x78616c6c6f63ULL /* "xalloc" */

typedef struct xa_chunk {
    /* slabs[u] describes the run that starts at unit u, on 128-byte
     * boundaries (the hot fields of two slabs in use by two threads never
     * share a cache line). Unit 0 is the header, and its descriptor's 128
     * bytes hold the chunk's own fields too, around the two it needs as a
     * descriptor (kind: XA_RUN_HEADER, or XA_RUN_HUGE for a huge mapping;
     * units: 1): the whole header is one page, where 33 slots of 128 bytes
     * took two (a resident page per chunk, 0.13 MiB over 32 chunks). A
     * free of a pointer in unit 0 reads slabs[0].heap, which is the arena
     * pointer here and so never the freeing thread's heap: it goes to the
     * slow path, which tests the kind. */
    union {
        xa_slab slabs[XA_UNITS_PER_CHUNK];
        struct {
            uint64_t magic;
            uint8_t huge_advised;     /* advised MADV_HUGEPAGE */
            uint8_t unit0_kind_;      /* slabs[0].kind: not a header field */
            uint8_t pad0_;
            uint8_t unit0_units_;     /* slabs[0].units: not a header field */
            uint32_t used_units;      /* units in runs that are not free */
            struct xa_arena *arena;   /* where slabs[0].heap is */
            /* Per unit: the unit its run starts at, which is also the
             * index of the run's descriptor, at 128 * index from the chunk,
             * so xa_run_of is one shift and add. */
            uint8_t first_of[XA_UNITS_PER_CHUNK];
            /* ---- written as runs come and go: off the line every free reads ---- */
            size_t map_size;          /* bytes mapped (2 MiB, or more for huge) */
            uint64_t dense_bytes;     /* atomic: bytes of large blocks and carved slab blocks (DENSE only) */
            struct xa_chunk *next, *prev; /* arena's chunk list / huge list */
            char *huge_ptr;           /* huge: the user pointer */
            size_t huge_size;         /* huge: usable bytes from huge_ptr */
            size_t huge_request;      /* huge: requested bytes */
            uint64_t freed_ns;        /* huge cache: when it was freed */
        };
    };
} xa_chunk;

_Static_assert(sizeof(xa_chunk) == XA_OS_PAGE && XA_OS_PAGE <= XA_UNIT_SIZE,
               "the chunk header is one page of unit 0");
_Static_assert(offsetof(xa_chunk, freed_ns) + 8 <= sizeof(xa_slab),
               "the chunk's fields fit slabs[0]");
_Static_assert(offsetof(xa_chunk, unit0_kind_) == offsetof(xa_slab, kind) &&
                   offsetof(xa_chunk, unit0_units_) == offsetof(xa_slab, units) &&
                   offsetof(xa_chunk, arena) == offsetof(xa_slab, heap),
               "the chunk's fields leave slabs[0].kind and .units alone");
_Static_assert(offsetof(xa_chunk, first_of) + XA_UNITS_PER_CHUNK <= 64,
               "first_of and arena share the header's first line");

/* The chunk is advised MADV_HUGEPAGE: read without the arena lock by
 * frees and carving (a stale answer only misplaces one purge), written
 * under it. */
static inline bool xa_chunk_huge_advised(const xa_chunk *c)
{
    return __atomic_load_n(&c->huge_advised, __ATOMIC_RELAXED) != 0;
}

/* The keep key of memory of NUMA slot node (-1: none): a thread keeps
 * another thread's freed block for its own reuse when the block's chunk
 * has its arena's key, so on the node it runs on. Never 0 (the empty
 * heap's key, which keeps nothing). */
static inline uint32_t xa_chunk_keep_key(int node)
{
    return (uint32_t)(node + 2);
}

static inline char *xa_unit_addr(xa_chunk *c, unsigned u)
{
    return (char *)c + ((size_t)u << XA_UNIT_SHIFT);
}

/* The chunk of runs holding p (p in its first 2 MiB). */
static inline xa_chunk *xa_chunk_of(const void *p)
{
    return (xa_chunk *)((uintptr_t)p & ~(uintptr_t)(XA_CHUNK_SIZE - 1));
}

/* Descriptor of the run holding p, p inside chunk c's 2 MiB. */
static inline xa_slab *xa_run_of(xa_chunk *c, const void *p)
{
    return (xa_slab *)((char *)c +
                       ((size_t)c->first_of[((uintptr_t)p - (uintptr_t)c) >> XA_UNIT_SHIFT] << 7));
}
_Static_assert(offsetof(xa_chunk, slabs) == 0 && sizeof(xa_slab) == 128,
               "xa_run_of: descriptor i at 128 * i");

/* slabs[unit of p]: p's run's descriptor when p is in the run's first unit
 * (free()'s guess, no load). For a later unit of a run it is a descriptor
 * of no run, zeroed (div_magic 0, heap NULL: see xa_run_free). */
static inline xa_slab *xa_unit_desc(xa_chunk *c, const void *p)
{
    return &c->slabs[((uintptr_t)p - (uintptr_t)c) >> XA_UNIT_SHIFT];
}

#endif /* XA_CHUNK_H */
