/* malloc.c: the exported entry points: the glibc malloc API, C11
 * aligned_alloc, C23 free_sized/free_aligned_sized, the __libc_* aliases,
 * and the xalloc_* extensions. Small sizes go straight to the thread heap's
 * inline fast path; everything else to out-of-line helpers below.
 * In the unit-test build (XA_TEST) the names become xa_test_*, so the test
 * program and glibc keep their own malloc. Layer: top. */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "chunkmap.h"
#include "config.h"
#include "heap.h"
#include "init.h"
#include "prof.h"
#include "stats_collect.h"
#include "util.h"
#include "xalloc.h"
#include "xalloc_stats.h"

#ifdef XA_TEST
#define API(name) xa_test_##name
#else
#define API(name) name
#endif
#define XA_API XA_EXPORT
/* The entry points every allocation runs through start on a cache line:
 * where a fast path falls relative to 64-byte boundaries changed a
 * malloc/free pair loop by 10% when unrelated code moved them. */
#define XA_API_HOT XA_EXPORT __attribute__((aligned(64)))

/* C23 names glibc 2.36 does not declare yet. */
void API(free_sized)(void *p, size_t size);
void API(free_aligned_sized)(void *p, size_t align, size_t size);
void API(cfree)(void *p);
#ifdef XA_TEST
void *xa_test_malloc(size_t size);
void xa_test_free(void *p);
void *xa_test_calloc(size_t n, size_t size);
void *xa_test_realloc(void *p, size_t size);
void *xa_test_reallocarray(void *p, size_t n, size_t size);
int xa_test_posix_memalign(void **out, size_t align, size_t size);
void *xa_test_aligned_alloc(size_t align, size_t size);
void *xa_test_memalign(size_t align, size_t size);
void *xa_test_valloc(size_t size);
void *xa_test_pvalloc(size_t size);
size_t xa_test_malloc_usable_size(void *p);
int xa_test_malloc_trim(size_t pad);
struct mallinfo2 xa_test_mallinfo2(void);
struct mallinfo xa_test_mallinfo(void);
void xa_test_malloc_stats(void);
int xa_test_mallopt(int param, int value);
#endif

/* ---- junk filling (debug option) ---- */

/* Set at init from the junk option; every entry point tests it only on a
 * path it already takes (free's owner check, malloc's size check). */
static size_t fast_small_max = XA_SMALL_MAX;
static size_t fast_table_max = 1024; /* sizes malloc's first test takes */
static bool junk;

/* A junk-mode block keeps a redzone in its slack (usable size beyond the
 * request): canary bytes, then a tag in the last 8 bytes holding the
 * request size and a check word derived from the address and the process
 * secret. free() verifies it, so a write past the end is reported. Blocks
 * without 9 bytes of slack (exact fits, aligned allocations) carry none. */
#define JUNK_CANARY 0xc5
static size_t block_usable(const char *fn, xa_chunk *c, void *p);

static uint64_t junk_tag(const void *p, size_t size)
{
    uint64_t h = ((uint64_t)size ^ (uintptr_t)p ^ xa_heap_secret) * 0x9e3779b97f4a7c15ULL;
    return (uint64_t)size | (h & 0xffffffff00000000ULL);
}

/* Request size the tag of block p records, or SIZE_MAX when it has none. */
static size_t junk_request(void *p, size_t usable)
{
    uint64_t tag;
    if (usable < 9)
        return SIZE_MAX;
    memcpy(&tag, (char *)p + usable - 8, 8);
    size_t size = (size_t)(tag & 0xffffffffu);
    return size + 8 < usable && junk_tag(p, size) == tag ? size : SIZE_MAX;
}

/* A new block's redzone (fill: its bytes junk-filled too; calloc's are
 * zero). Without room for one, a tag an earlier block at this address
 * left in the last 8 bytes is wiped: the slack's, or the user bytes just
 * filled or zeroed hold it, and 0 or 0xa5... is no tag. Left there, it
 * made a block of the same usable size report the old request as its
 * usable size, and its next free report an overflow. */
static void junk_mark_new(void *p, size_t size, bool fill)
{
    if (fill)
        memset(p, 0xa5, size);
    size_t usable = block_usable("malloc", xa_chunkmap_lookup(p), p);
    if (size >> 32 || usable - size < 9) {
        if (usable - size == 8)
            memset((char *)p + size, 0, 8);
        return;
    }
    uint64_t tag = junk_tag(p, size);
    memset((char *)p + size, JUNK_CANARY, usable - 8 - size);
    memcpy((char *)p + usable - 8, &tag, 8);
}

static void junk_fill_new(void *p, size_t size) { junk_mark_new(p, size, true); }

/* Pre: junk mode, p a valid block of usable bytes. */
static void junk_check_free(void *p, size_t usable)
{
    size_t size = junk_request(p, usable);
    if (size == SIZE_MAX)
        return;
    const unsigned char *z = (const unsigned char *)p + size;
    for (size_t i = 0; i < usable - 8 - size; i++)
        if (z[i] != JUNK_CANARY)
            xa_fatal("free(): heap overflow: %p (%zu-byte request) written at offset %zu",
                     p, size, size + i);
}

/* ---- helpers ---- */

static inline void *enomem(void)
{
    errno = ENOMEM;
    return NULL;
}

static void *malloc_big(size_t size, size_t align, bool zero)
{
    xa_heap *h = xa_heap_get();
    if (!h)
        return enomem();
    if (size > (size_t)PTRDIFF_MAX)
        return enomem();
    void *p;
    if (size <= XA_LARGE_MAX && align <= XA_UNIT_SIZE) {
        unsigned units = (unsigned)((size + XA_UNIT_SIZE - 1) >> XA_UNIT_SHIFT);
        p = xa_heap_large_cache_take(h, units);
        if (p) {
            xa_run_of(xa_chunk_of(p), p)->large_size = size;
            xa_heap_requested_add(h, (int64_t)size);
            if (zero)
                memset(p, 0, size);
            h->nmalloc_big++;
            return p;
        }
        p = xa_arena_large_alloc(h->arena, size, zero);
    } else {
        p = NULL;
        if (align <= XA_HUGE_HEADER && size <= XA_HEAP_HUGE_CACHE_MAX) {
            p = xa_heap_huge_cache_take(h, XA_ALIGN_UP(XA_HUGE_HEADER + size, XA_OS_PAGE), size);
            if (p && zero)
                memset(p, 0, size);
        }
        if (!p)
            p = xa_huge_alloc(h->arena, size, align, zero);
    }
    if (!p)
        return enomem();
    h->nmalloc_big++;
    return p;
}

static XA_NOINLINE void *malloc_small_slow_wrap(size_t size)
{
    xa_heap *h = xa_heap_get();
    if (!h)
        return enomem();
    void *p = xa_heap_malloc_small(h, size);
    if (!p)
        return enomem();
    if (junk)
        junk_fill_new(p, size);
    return p;
}

/* Big blocks, and every size in junk mode. */
static XA_NOINLINE void *malloc_big_entry(size_t size)
{
    if (size <= XA_SMALL_MAX)
        return malloc_small_slow_wrap(size);
    void *p = malloc_big(size, 0, false);
    if (p && junk)
        junk_fill_new(p, size);
    return p;
}

/* Sizes past the first class table: the medium table or a bit scan, and
 * the same pop, with no frame. */
static XA_NOINLINE void *malloc_other(size_t size)
{
    /* Above fast_table_max, so above 1024 unless junk mode zeroed both. */
    if (xa_likely(size <= fast_small_max))
        return xa_heap_malloc_class(xa_tls_heap, xa_size_class_above_1k(size));
    return malloc_big_entry(size);
}

XA_FAST_PATH void *malloc_inline(size_t size)
{
    /* One test for the sizes of the first class table (none in junk
     * mode); bigger ones go out of line. The slow path sets errno itself,
     * so both calls are tail calls. */
    if (xa_likely(size <= fast_table_max))
        return xa_heap_malloc_class(xa_tls_heap, xa_class_of_small[size]);
    return malloc_other(size);
}

static XA_NOINLINE __attribute__((noreturn)) void invalid_pointer(const char *fn, void *p)
{
    xa_fatal("%s(): invalid pointer %p (not a block allocated by xalloc, or already freed)",
             fn, p);
}

/* Descriptor of the run holding p: slabs[0] of a huge block's mapping when
 * p lies beyond its first 2 MiB. */
static inline xa_slab *run_or_huge(xa_chunk *c, const void *p)
{
    return (uintptr_t)p - (uintptr_t)c < XA_CHUNK_SIZE ? xa_run_of(c, p) : &c->slabs[0];
}

/* True when p is the block of large run s (kind XA_RUN_LARGE) of chunk c:
 * the run's start, and not parked in a thread's cache (freed already). */
static inline bool large_block_at(xa_chunk *c, const xa_slab *s, const void *p)
{
    return p == xa_unit_addr(c, s->first_unit) && !s->in_full;
}

/* Usable size of a block, validating the pointer; fn names the caller in
 * the report. */
static size_t block_usable(const char *fn, xa_chunk *c, void *p)
{
    uintptr_t off = (uintptr_t)p - (uintptr_t)c;
    if (off < XA_CHUNK_SIZE) {
        xa_slab *s = xa_run_of(c, p);
        switch (s->kind) {
        case XA_RUN_SMALL: {
            uintptr_t rel = (uintptr_t)p - (uintptr_t)s->start;
            if (rel < (uintptr_t)s->capacity * s->block_size &&
                xa_class_divides(s->cls, (uint32_t)rel))
                return s->block_size;
            break;
        }
        case XA_RUN_LARGE:
            if (large_block_at(c, s, p))
                return (size_t)s->units << XA_UNIT_SHIFT;
            break;
        case XA_RUN_HUGE:
            if (p == c->huge_ptr)
                return c->huge_size;
            break;
        default:
            break;
        }
    } else if (c->slabs[0].kind == XA_RUN_HUGE && p == c->huge_ptr) {
        return c->huge_size;
    }
    invalid_pointer(fn, p);
}

static XA_NOINLINE void free_generic(xa_chunk *c, void *p);
static XA_NOINLINE void free_not_owned(xa_chunk *c, xa_slab *s, void *p);

/* A large block's free (s its run, p its start, checked): into the
 * thread's cache, or back to the arena. */
static void free_large(xa_chunk *c, xa_slab *s, xa_heap *h)
{
    if (h == &xa_heap_empty || !xa_heap_large_cache_put(h, c, s))
        xa_arena_large_free(c, s);
    xa_heap_notice_dirty();
    if (h != &xa_heap_empty)
        h->nfree_big++;
}
static XA_NOINLINE void free_remote(xa_chunk *c, xa_slab *s, void *p, xa_heap *h);

/* The fast path's tests failed on its unit's descriptor (p in chunk c's
 * 2 MiB): a block in a later unit of a multi-unit slab takes the fast
 * path's steps with its run's own descriptor; anything else (a bad
 * pointer, a double free, a large block, junk or profiling work) fails
 * them again (the same descriptor, for a run's first unit) and goes to
 * free_generic. */
static XA_NOINLINE void free_check(xa_chunk *c, void *p)
{
    xa_slab *s = xa_run_of(c, p);
    if (xa_slab_is_block(s, p) && !xa_block_marked_free(p)) {
        xa_heap *h = xa_tls_heap;
        if (s->heap == h)
            xa_heap_free_owned(h, s, p);
        else
            free_remote(c, s, p, h);
        return;
    }
    /* A large block, at its run's start and not parked: what free_generic
     * would check first, without its other tests (a hot 1 MiB buffer).
     * Not in junk mode (redzone check) nor while profiling (records). */
    if (s->kind == XA_RUN_LARGE && large_block_at(c, s, p) && !junk && !xa_prof_on) {
        free_large(c, s, xa_tls_heap);
        return;
    }
    free_generic(c, p);
}

/* Frees the fast path did not take; most are small blocks of another
 * thread's slab, handled here without saving registers (tail call). */
static XA_NOINLINE void free_slow(xa_chunk *c, void *p)
{
    uintptr_t rel = (uintptr_t)p - (uintptr_t)c;
    if (xa_likely(rel < XA_CHUNK_SIZE && !junk)) {
        free_not_owned(c, xa_run_of(c, p), p);
        return;
    }
    free_generic(c, p);
}

/* From the fast path (p in chunk c's 2 MiB, s its run, not junk mode):
 * another thread's small block goes straight to the remote free, which
 * checks the mark (when the free takes effect); everything else to
 * free_generic. */
static XA_NOINLINE void free_not_owned(xa_chunk *c, xa_slab *s, void *p)
{
    xa_heap *h = xa_tls_heap;
    if (xa_likely(s->kind == XA_RUN_SMALL && s->heap != h && xa_slab_is_block(s, p))) {
        xa_heap_free_remote_fast(h, c, s, p);
        return;
    }
    free_generic(c, p);
}

/* The fast path's remote free: s is not h's (h the caller's heap), and p
 * is at a block boundary of s, which the fast path has just tested. The
 * kind is left: the chunk header's descriptor (unit 0) holds other fields
 * where a slab has its interior-pointer test, so that test alone does not
 * tell a slab. The mark is the remote free's to check, when it takes
 * effect (see xa_heap_free_remote_fast). */
static XA_NOINLINE void free_remote(xa_chunk *c, xa_slab *s, void *p, xa_heap *h)
{
    if (xa_likely(s->kind == XA_RUN_SMALL)) {
        xa_heap_free_remote_fast(h, c, s, p);
        return;
    }
    free_generic(c, p);
}

#if XA_PROF
static bool free_prof(xa_chunk *c, void *p);
#endif

/* Everything else: validation with a report, owner frees that looked like
 * double frees, junk filling, large and huge blocks. */
static XA_NOINLINE void free_generic(xa_chunk *c, void *p)
{
    xa_heap *h = xa_tls_heap;
#if XA_PROF
    if (xa_prof_on && free_prof(c, p)) /* prof hook: sampled blocks */
        return;
#endif
    size_t usable = block_usable("free", c, p);
    if (junk)
        junk_check_free(p, usable);
    xa_slab *s = run_or_huge(c, p);
    switch (s->kind) {
    case XA_RUN_SMALL:
        if (s->heap == h) {
            if (xa_block_marked_free(p) || xa_slab_link_suspect(s, p))
                xa_heap_double_free_check(s, p);
            if (junk)
                memset((char *)p + sizeof(xa_block), 0x5a, s->block_size - sizeof(xa_block));
            xa_heap_free_owned(h, s, p);
        } else {
            if (xa_block_marked_free(p)) /* before the junk fill wipes the mark */
                xa_heap_double_free_check(s, p);
            if (junk)
                memset((char *)p + sizeof(xa_block), 0x5a, s->block_size - sizeof(xa_block));
            xa_heap_free_remote(h, s, p);
        }
        return;
    case XA_RUN_LARGE:
        if (s->in_full)
            xa_fatal("free(): double free of %p (large block)", p);
        free_large(c, s, h);
        return;
    default:
        if (h == &xa_heap_empty || !xa_heap_huge_cache_put(h, c))
            xa_huge_free(c);
        break;
    }
    xa_heap_notice_dirty();
    if (h != &xa_heap_empty)
        h->nfree_big++;
}

/* NULL, foreign pointers and huge blocks: everything the region filter
 * does not send down the fast path. */
static XA_NOINLINE void free_other(void *p)
{
    if (!p)
        return;
    unsigned kind = xa_region_of(p);
    if (kind == XA_REGION_RUNS || kind == XA_REGION_RUNS_SLOW) { /* prof hook, junk mode */
        free_slow(xa_chunk_of(p), p);
        return;
    }
    xa_chunk *c = xa_chunkmap_lookup(p);
    if (c) {
        free_slow(c, p);
        return;
    }
    /* Before init, pointers can only come from another allocator (the
     * dynamic loader's bootstrap one): leave them alone. */
    if (!xa_ready)
        return;
    invalid_pointer("free", p);
}

XA_FAST_PATH void free_inline(void *p)
{
    /* (A sampled block of the profiling build is never a block boundary
     * or a big block: it goes to free_generic like any bad pointer.)
     * (Junk mode marks its chunks RUNS_SLOW: they go to free_other.) */
    if (xa_likely(xa_region_of(p) == XA_REGION_RUNS)) {
        xa_chunk *c = xa_chunk_of(p);
        /* The descriptor of p's unit, by arithmetic alone: right for every
         * block of a one-unit slab (all classes up to 8 KiB but one) and
         * the first unit of any run. Inside a longer run it describes
         * nothing (xa_run_free keeps it so) and fails the block test,
         * which sends p to free_check. No load on the way to the push's
         * address: the next malloc's load of s->free waits for it. */
        xa_slab *s = xa_unit_desc(c, p);
        /* One register for the descriptor: without this gcc folds its
         * address into each field's displacement and computes it again
         * (five instructions) for the tests after the push. */
        __asm__("" : "+r"(s));
        /* A block boundary: pushed onto its slab's list by the owner if it
         * does not carry the free mark, or handed to the remote free.
         * Anything else (an interior or foreign pointer, a suspected double
         * free, a large run, whose descriptor has no interior-pointer
         * test) is sorted out, and reported, by free_generic. The mark is
         * read here for the owner only: the remote free reads it later,
         * from a line it has brought in by then (a block another thread
         * has just written would hold up this one until it came over). */
        if (xa_unlikely(!xa_slab_is_block(s, p))) {
            free_check(c, p);
            return;
        }
        xa_heap *h = xa_tls_heap;
        if (xa_likely(s->heap == h)) {
            if (xa_unlikely(xa_block_marked_free(p))) {
                free_check(c, p);
                return;
            }
            xa_heap_free_owned(h, s, p);
            return;
        }
        free_remote(c, s, p, h);
        return;
    }
    free_other(p);
}

/* The end of every realloc that moves: the old block's first bytes (old
 * of them usable) into q, the new block of size bytes, and the old block
 * freed; NULL, the old block untouched, when q could not be allocated. */
static inline void *realloc_move(void *p, size_t old, void *q, size_t size)
{
    if (!q)
        return NULL;
    memcpy(q, p, old < size ? old : size);
    free_inline(p);
    return q;
}

/* realloc in junk mode: always a new block, so the redzone follows the
 * new request (an in-place resize would leave the old one behind). */
static XA_NOINLINE void *junk_realloc(void *p, size_t size)
{
    xa_chunk *c = xa_chunkmap_lookup(p);
    if (!c)
        invalid_pointer("realloc", p);
    xa_slab *s = run_or_huge(c, p);
    if (s->kind == XA_RUN_SMALL && (xa_block_marked_free(p) ||
                                    (s->heap == xa_tls_heap && xa_slab_link_suspect(s, p))))
        xa_heap_double_free_check(s, p); /* realloc of a freed block */
    size_t old = junk_request(p, block_usable("realloc", c, p));
    if (old == SIZE_MAX)
        old = block_usable("realloc", c, p);
    return realloc_move(p, old, malloc_other(size), size);
}

/* ---- aligned allocation ---- */

static void *aligned_impl(size_t align, size_t size);
#if XA_PROF
static XA_NOINLINE void *aligned_sampled(size_t align, size_t size);
#endif
static void *aligned_internal(size_t align, size_t size)
{
#if XA_PROF
    if (xa_prof_sample_due(size)) /* prof hook */
        return aligned_sampled(align, size);
#endif
    return aligned_impl(align, size);
}

static void *aligned_impl(size_t align, size_t size)
{
    if (align <= 16)
        return malloc_inline(size);
    if (size > (size_t)PTRDIFF_MAX || align > (size_t)PTRDIFF_MAX)
        return enomem();
    if (size <= XA_SMALL_MAX && align <= XA_UNIT_SIZE) {
        /* Slabs start on 64 KiB boundaries, so a block of a class whose
         * size is a multiple of align is aligned. */
        size_t want = size < align ? align : size;
        if (want <= XA_SMALL_MAX) {
            /* (align is a power of two: every caller checks or rounds it) */
            for (unsigned cls = xa_size_class(want); cls < XA_NCLASSES; cls++) {
                if ((xa_classes[cls].size & (align - 1)) == 0) {
                    /* The class is known: no second size lookup (junk
                     * mode's blocks get their redzone through malloc). */
                    if (xa_likely(!junk))
                        return xa_heap_malloc_class(xa_tls_heap, cls);
                    return malloc_inline(xa_classes[cls].size);
                }
            }
        }
    }
    void *p = malloc_big(size < XA_SMALL_MAX + 1 ? XA_SMALL_MAX + 1 : size, align, false);
    if (p && xa_unlikely(junk))
        junk_fill_new(p, size);
    return p;
}

static size_t round_pow2(size_t a)
{
    if (a <= 1)
        return 1;
    return (size_t)1 << (64 - __builtin_clzl(a - 1));
}

/* Growth by realloc past this size moves a block to a large run. */
#define REALLOC_RUN_MIN ((size_t)XA_TRIM_MIN_BLOCK)

/* realloc of large block s (validated) to size, when size still needs its
 * run's units (and is no small size): only the requested size changes, no
 * lock. False otherwise. */
static inline bool large_resize_same_run(xa_chunk *c, xa_slab *s, size_t size)
{
    if (size <= REALLOC_RUN_MIN || ((size + XA_UNIT_SIZE - 1) >> XA_UNIT_SHIFT) != s->units)
        return false;
    __atomic_fetch_add(&c->arena->requested_big, size - s->large_size, __ATOMIC_RELAXED);
    s->large_size = size;
    return true;
}

/* ---- the API ---- */

#if XA_PROF
static XA_NOINLINE void *malloc_sampled(size_t size);
static XA_NOINLINE void *calloc_sampled(size_t total);
static XA_NOINLINE void *realloc_prof(void *p, size_t size);
static size_t usable_prof(xa_chunk *c, void *p);
#endif

XA_API_HOT void *API(malloc)(size_t size)
{
#if XA_PROF
    if (xa_prof_sample_due(size)) /* prof hook */
        return malloc_sampled(size);
#endif
    return malloc_inline(size);
}

XA_API_HOT void API(free)(void *p)
{
    free_inline(p);
}

XA_API void API(cfree)(void *p)
{
    free_inline(p);
}

XA_API_HOT void API(free_sized)(void *p, size_t size)
{
    (void)size;
    free_inline(p);
}

XA_API void API(free_aligned_sized)(void *p, size_t align, size_t size)
{
    (void)align;
    (void)size;
    free_inline(p);
}

XA_API_HOT void *API(calloc)(size_t n, size_t size)
{
    size_t total;
    if (__builtin_mul_overflow(n, size, &total))
        return enomem();
#if XA_PROF
    if (xa_prof_sample_due(total) && xa_prof_sample_begin()) /* prof hook */
        return calloc_sampled(total);
#endif
    if (total <= XA_SMALL_MAX) {
        void *p = malloc_inline(total);
        if (p)
            memset(p, 0, total);
        return p;
    }
    void *p = malloc_big(total, 0, true);
    if (p && xa_unlikely(junk))
        junk_mark_new(p, total, false);
    return p;
}

static void *realloc_impl(void *p, size_t size);
XA_API_HOT void *API(realloc)(void *p, size_t size)
{
#if XA_PROF
    if (!p) /* prof hook: realloc(NULL, size) is a malloc */
        return API(malloc)(size);
    if (xa_prof_on) /* prof hook: sampled blocks, growth counts (see prof.h) */
        return realloc_prof(p, size);
#endif
    return realloc_impl(p, size);
}

static void *realloc_impl(void *p, size_t size)
{
    if (!p)
        return malloc_inline(size);
    if (size == 0) {
        /* glibc frees and returns NULL. */
        free_inline(p);
        return NULL;
    }
    if (xa_unlikely(junk))
        return junk_realloc(p, size);
    xa_heap *h = xa_tls_heap;
    if (h != &xa_heap_empty)
        h->nrealloc++;
    if (xa_likely(xa_region_of(p) == XA_REGION_RUNS)) {
        /* Common cases first: a small block that still fits its class, or
         * that moves to a block of another class below a large run's size
         * (a string or a vector growing by steps), checked once here as
         * free checks it; the general path below looks the pointer up
         * again, and free looked it up a third time. */
        xa_chunk *c = xa_chunk_of(p);
        xa_slab *s = xa_run_of(c, p);
        if (s->kind == XA_RUN_SMALL && xa_slab_is_block(s, p) && !xa_block_marked_free(p)) {
            size_t old = s->block_size;
            if (size <= old && size > old / 2)
                return p;
            if (size <= REALLOC_RUN_MIN)
                return realloc_move(p, old, malloc_inline(size), size);
        } else if (s->kind == XA_RUN_LARGE && large_block_at(c, s, p) &&
                   large_resize_same_run(c, s, size)) {
            /* (checked as block_usable checks it: a buffer growing by
             * small steps, nearly every call) */
            return p;
        }
    }
    xa_chunk *c = xa_chunkmap_lookup(p);
    if (!c) {
        if (!xa_ready)
            return enomem();
        invalid_pointer("realloc", p);
    }
    size_t old = block_usable("realloc", c, p);
    xa_slab *s = run_or_huge(c, p);
    /* A buffer that grows past REALLOC_RUN_MIN becomes a large block (a
     * run of 64 KiB units), which then grows in place into free
     * neighbouring units, and past XA_LARGE_MAX a huge one, which grows
     * with mremap: a growing buffer does not leave a block behind in every
     * size class it passes through. */
    bool grow_as_run = size > old && size > REALLOC_RUN_MIN && size <= XA_LARGE_MAX;
    if (s->kind == XA_RUN_SMALL) {
        /* A block whose first word decodes to a free-list link may be a
         * freed one: the owner can tell by walking its lists (a freed
         * block handed back here would be handed out twice). */
        if (xa_block_marked_free(p) || (s->heap == h && xa_slab_link_suspect(s, p)))
            xa_heap_double_free_check(s, p);
        /* Same block while the new size still uses at least half of it. */
        if (size <= old && size > old / 2)
            return p;
    } else if (s->kind == XA_RUN_LARGE) {
        if (large_resize_same_run(c, s, size))
            return p;
        if (size > REALLOC_RUN_MIN && size <= XA_LARGE_MAX && xa_arena_large_resize(c, s, size))
            return p;
    } else if (size > XA_LARGE_MAX && size <= (size_t)PTRDIFF_MAX) {
        void *q = xa_huge_realloc(c, size);
        if (q)
            return q;
    }
    void *q = grow_as_run && h != &xa_heap_empty ? malloc_big(size, 0, false) : malloc_inline(size);
    return realloc_move(p, old, q, size);
}

XA_API void *API(reallocarray)(void *p, size_t n, size_t size)
{
    size_t total;
    if (__builtin_mul_overflow(n, size, &total))
        return enomem();
    return API(realloc)(p, total);
}

XA_API int API(posix_memalign)(void **out, size_t align, size_t size)
{
    if (align < sizeof(void *) || (align & (align - 1)) != 0)
        return EINVAL;
    /* On ENOMEM errno is ENOMEM too, as glibc and musl leave it: saving
     * and restoring it cost a call and a frame on every success. */
    void *p = aligned_internal(align, size);
    if (!p)
        return ENOMEM;
    *out = p;
    return 0;
}

static void *memalign_common(size_t align, size_t size)
{
    if (align > (size_t)PTRDIFF_MAX + 1) {
        errno = EINVAL;
        return NULL;
    }
    /* glibc rounds an alignment that is not a power of two up. */
    if (align & (align - 1))
        align = round_pow2(align);
    return aligned_internal(align, size);
}

XA_API void *API(aligned_alloc)(size_t align, size_t size)
{
    return memalign_common(align, size);
}

XA_API void *API(memalign)(size_t align, size_t size)
{
    return memalign_common(align, size);
}

XA_API void *API(valloc)(size_t size)
{
    return aligned_internal(XA_OS_PAGE, size);
}

XA_API void *API(pvalloc)(size_t size)
{
    size_t rounded = XA_ALIGN_UP(size, XA_OS_PAGE);
    if (rounded < size)
        return enomem();
    return aligned_internal(XA_OS_PAGE, rounded ? rounded : XA_OS_PAGE);
}

static XA_NOINLINE size_t usable_other(void *p);
XA_API size_t API(malloc_usable_size)(void *p)
{
    /* A slab's block at a boundary in a few loads, as free tells it: some
     * programs ask at every malloc and free (redis's memory accounting).
     * Anything else (NULL, big blocks, a tagged block of the profiling
     * build, junk mode's chunks, a bad pointer) takes the general path. */
    if (xa_likely(xa_region_of(p) == XA_REGION_RUNS)) {
        xa_slab *s = xa_run_of(xa_chunk_of(p), p);
        if (xa_likely(s->kind == XA_RUN_SMALL && xa_slab_is_block(s, p)))
            return s->block_size;
    }
    return usable_other(p);
}

/* The program's usable bytes of p, a block that is not a tagged one
 * (validated: a bad pointer is reported as fn's): to the block's end, or
 * its request in junk mode (the redzone is not the program's). */
static size_t program_usable(const char *fn, xa_chunk *c, void *p)
{
    size_t usable = block_usable(fn, c, p);
    if (xa_unlikely(junk) && junk_request(p, usable) != SIZE_MAX)
        return junk_request(p, usable);
    return usable;
}

static XA_NOINLINE size_t usable_other(void *p)
{
    if (!p)
        return 0;
    xa_chunk *c = xa_chunkmap_lookup(p);
    if (!c) {
        if (!xa_ready)
            return 0;
        invalid_pointer("malloc_usable_size", p);
    }
#if XA_PROF
    if (xa_prof_on) { /* prof hook: a sampled block's user bytes */
        size_t u = usable_prof(c, p);
        if (u != SIZE_MAX)
            return u;
    }
#endif
    return program_usable("malloc_usable_size", c, p);
}

#if XA_PROF
/* ---- sampled blocks (profiling build) ----
 * A sampled request of size bytes aligned to align (at most 64 KiB) that
 * fits a slab is served from a class of size + off bytes (off = 16, or
 * align when larger), whose size is a multiple of align, and handed out
 * at block + off, with a header in the 16 bytes before that pointer: a
 * tag made of the address and the process secrets, and the sample
 * record. Every class is a multiple of 16 and the block is at least off +
 * 1 bytes (so at least 32), hence block + off is never a block boundary:
 * the owner's free fast path rejects it by itself (xa_slab_is_block), and
 * so does every other path that takes a block boundary only, which all
 * end in free_generic, where the tag is recognised before anything
 * reports an interior pointer. The free path of ordinary blocks thus has
 * no profiling test at all, and a sampled free needs no table lookup.
 * Anything else (big blocks, and the few requests within off bytes of the
 * largest class) is a large or huge block whose record is kept in its
 * descriptor (prof_big_slot), read by the big blocks' free path only. */

typedef struct prof_hdr {
    void *rec;    /* the sample record, or NULL (none could be made) */
    uintptr_t tag; /* prof_tag(user pointer) */
} prof_hdr;
_Static_assert(sizeof(prof_hdr) == 16, "the header fits the 16 bytes every offset leaves");

/* 2^-64 odds that user data matches, from secrets the program cannot read
 * back (free blocks carry xa_free_mark_of(), which a tag never equals but
 * by the same odds). */
static inline uintptr_t prof_tag(const void *user)
{
    return (((uintptr_t)user ^ xa_heap_secret) * 0x9e3779b97f4a7c15ULL) ^ xa_heap_free_mark;
}

static inline prof_hdr *prof_header_of(void *user)
{
    return (prof_hdr *)user - 1;
}

/* The header of p when p is the user pointer of a tagged sampled block of
 * chunk c (its block start in *block, its slab in *slab); NULL when it is
 * not one. p at a power-of-two offset in a freed block is a second free
 * (or realloc) of a sampled block: reported as such (fn). */
static prof_hdr *prof_tagged_in(xa_slab *s, void *p, const char *fn, char **block);
static prof_hdr *prof_tagged(xa_chunk *c, void *p, const char *fn, char **block, xa_slab **slab)
{
    if ((uintptr_t)p - (uintptr_t)c >= XA_CHUNK_SIZE)
        return NULL;
    xa_slab *s = xa_run_of(c, p);
    *slab = s;
    return s->kind == XA_RUN_SMALL ? prof_tagged_in(s, p, fn, block) : NULL;
}

/* prof_tagged for p in small slab s. */
static prof_hdr *prof_tagged_in(xa_slab *s, void *p, const char *fn, char **block)
{
    if (((uintptr_t)p & 15) != 0)
        return NULL;
    /* xa_slab_is_block's multiply gives the block's index too (exact:
     * rel < 2 MiB, blocks at most 256 KiB): no division. A block
     * boundary (fraction 0) is never tagged. */
    uint64_t rel = (uint32_t)((uintptr_t)p - (uintptr_t)s->start);
    unsigned __int128 m = (unsigned __int128)rel * s->div_magic;
    uint64_t idx = (uint64_t)(m >> 64);
    if ((uint64_t)m < s->div_magic || idx >= s->capacity)
        return NULL;
    uintptr_t in = rel - idx * s->block_size;
    char *b = (char *)p - in;
    prof_hdr *hd = prof_header_of(p);
    if (hd->tag != prof_tag(p)) {
        if ((in & (in - 1)) == 0 && xa_block_marked_free((xa_block *)b))
            xa_fatal("%s(): double free of %p (a sampled block, already freed)", fn, p);
        return NULL;
    }
    *block = b;
    return hd;
}

/* User bytes of tagged block p (block b of slab s): to the block's end, or
 * to the redzone in junk mode. */
static size_t prof_tagged_usable(xa_slab *s, char *b, void *p)
{
    size_t off = (size_t)((char *)p - b);
    if (xa_unlikely(junk)) {
        size_t req = junk_request(b, s->block_size);
        if (req != SIZE_MAX && req >= off)
            return req - off;
    }
    return s->block_size - off;
}

/* Takes the header off tagged block p and frees the block; returns its
 * record (the caller puts it back or drops it). */
static void *prof_untag_free(prof_hdr *hd, char *b)
{
    void *rec = hd->rec;
    /* A second free of p no longer finds a tag; with off = 16 the header
     * is the block's first 16 bytes, now as a live block has them. */
    hd->rec = NULL;
    hd->tag = 0;
    free_inline(b);
    return rec;
}

/* Where big block p of chunk c keeps its record: a large run's own
 * descriptor, a huge block's in slabs[1] of its header (slabs[0] is the
 * chunk's fields, slabs[1] describes nothing in a huge chunk); NULL when p
 * is no big block's user pointer (a slab's block, a parked run). */
static void **prof_big_slot_in(xa_chunk *c, xa_slab *s, void *p);
static void **prof_big_slot(xa_chunk *c, void *p)
{
    return prof_big_slot_in(c, run_or_huge(c, p), p);
}

/* prof_big_slot, s being run_or_huge(c, p) (slabs[0] for a huge block). */
static void **prof_big_slot_in(xa_chunk *c, xa_slab *s, void *p)
{
    if (s->kind == XA_RUN_LARGE)
        return large_block_at(c, s, p) ? &s->prof_rec : NULL;
    return s->kind == XA_RUN_HUGE && p == c->huge_ptr ? &c->slabs[1].prof_rec : NULL;
}

/* prof_big_slot of a block this thread just got (NULL: a slab block). */
static void **prof_new_big_slot(void *p)
{
    if (xa_region_of(p) != XA_REGION_HUGE) { /* (a chunk of runs: no lookup) */
        xa_chunk *c = xa_chunk_of(p);
        return prof_big_slot_in(c, xa_run_of(c, p), p);
    }
    xa_chunk *c = xa_chunkmap_lookup(p);
    return c ? prof_big_slot(c, p) : NULL;
}

/* Puts back taken record rec for big block q of size bytes (released
 * when q is no big block, which realloc's paths to it never give). */
static void prof_put_big(void *rec, void *q, size_t size)
{
    void **slot = prof_new_big_slot(q);
    xa_prof_sample_put(rec, slot ? q : NULL, size, slot);
}

/* A sampled block: its user pointer (NULL with errno set when out of
 * memory), and where its record goes: the header's slot or the big
 * block's descriptor's. Returned in registers: no local of the caller
 * has its address taken, which would keep it from tail calls. */
typedef struct prof_placed {
    void *p;
    void **slot;
} prof_placed;

/* Allocates the block of a sampled request (see above); the header's
 * record is left NULL. */
static prof_placed prof_block(size_t size, size_t align, bool zero)
{
    if (size > (size_t)PTRDIFF_MAX || align > (size_t)PTRDIFF_MAX)
        return (prof_placed){enomem(), NULL};
    size_t off = align > 16 ? align : 16;
    if (off <= XA_UNIT_SIZE && size <= XA_SMALL_MAX - off) {
        /* 1 byte at least: the class of a 0-byte request plus 16 would be
         * the 16-byte one, where block + 16 is the next boundary. */
        size_t want = (size ? size : 1) + off;
        if (off > 16) {
            /* A class whose size is a multiple of off (aligned_impl's way:
             * slabs start on 64 KiB boundaries); 0: none. With off = 16
             * every class will do, and want has one (no lookup here). */
            unsigned cls = xa_size_class(want);
            while (cls < XA_NCLASSES && xa_classes[cls].size % off != 0)
                cls++;
            want = cls < XA_NCLASSES ? xa_classes[cls].size : 0;
        }
        if (want) {
            char *b = malloc_inline(want);
            if (!b)
                return (prof_placed){NULL, NULL};
            void *p = b + off;
            prof_hdr *hd = prof_header_of(p);
            hd->rec = NULL;
            hd->tag = prof_tag(p);
            if (zero)
                memset(p, 0, size);
            return (prof_placed){p, &hd->rec};
        }
    }
    /* Never a slab block: its free would take the fast path unseen. */
    size_t big = size <= XA_SMALL_MAX ? XA_SMALL_MAX + 1 : size;
    void *p = malloc_big(big, align > 16 ? align : 0, zero);
    if (p && junk) {
        /* A fresh redzone for size bytes (big may be more than size: a
         * tag left behind by an earlier block at p would not match). */
        junk_fill_new(p, size);
        if (zero)
            memset(p, 0, size);
    }
    return (prof_placed){p, p ? prof_new_big_slot(p) : NULL};
}

/* A sampled allocation, recorded. Inline: every frame between the entry
 * point and the unwinder costs each sample a step of the unwind. */
static inline __attribute__((always_inline)) void *prof_alloc(size_t size, size_t align, bool zero)
{
    prof_placed b = prof_block(size, align, zero);
    if (!b.slot) /* (a big block always has one) */
        return b.p;
    /* A tail call: the frames above the program's are the entry point's
     * and the recorder's, as for any sample. */
    return xa_prof_sample_record(b.p, size, b.slot);
}

/* The entry points' sampled paths (the distance ran out). */
static XA_NOINLINE void *malloc_sampled(size_t size)
{
    return xa_prof_sample_begin() ? prof_alloc(size, 16, false) : malloc_inline(size);
}

/* (calloc asks xa_prof_sample_begin() itself: one body for its unsampled
 * path.) */
static XA_NOINLINE void *calloc_sampled(size_t total)
{
    return prof_alloc(total, 16, true);
}

static XA_NOINLINE void *aligned_sampled(size_t align, size_t size)
{
    return xa_prof_sample_begin() ? prof_alloc(size, align, false) : aligned_impl(align, size);
}

/* free_generic's hook: frees p when it is a tagged block; takes a sampled
 * big block's record out of the profile before it is freed. */
static bool free_prof(xa_chunk *c, void *p)
{
    /* (One descriptor lookup for both kinds: a pointer past the chunk's
     * first 2 MiB gets slabs[0], neither small nor large.) */
    xa_slab *s = run_or_huge(c, p);
    if (s->kind == XA_RUN_SMALL) {
        char *b;
        prof_hdr *hd = prof_tagged_in(s, p, "free", &b);
        if (!hd)
            return false;
        void *rec = prof_untag_free(hd, b);
        if (rec)
            xa_prof_sample_drop(rec);
        return true;
    }
    void **slot = prof_big_slot_in(c, s, p);
    if (slot && *slot)
        xa_prof_sample_free(slot, p);
    return false;
}

static size_t usable_prof(xa_chunk *c, void *p)
{
    char *b;
    xa_slab *s;
    return prof_tagged(c, p, "malloc_usable_size", &b, &s) ? prof_tagged_usable(s, b, p)
                                                           : SIZE_MAX;
}

/* Growth that realloc_impl serves with a large run (see grow_as_run). */
static inline bool prof_grows_as_run(size_t old, size_t size)
{
    return size > old && size > REALLOC_RUN_MIN && size <= XA_LARGE_MAX &&
           xa_tls_heap != &xa_heap_empty;
}

/* A sampled block of old usable bytes moves: a new sampled block of size
 * bytes (a large run when it grows as realloc_impl would make one: it then
 * grows in place), old bytes of p copied, p freed (hd: tagged block b),
 * the record rec (may be NULL) put back for the new one. NULL when out of
 * memory (p untouched: the caller puts rec back). */
static void *prof_move(void *p, size_t old, size_t size, void *rec, prof_hdr *hd, char *b)
{
    prof_placed nb = {NULL, NULL};
    if (prof_grows_as_run(old, size)) {
        nb.p = malloc_big(size, 0, false);
        if (nb.p && junk)
            junk_fill_new(nb.p, size);
    } else {
        nb = prof_block(size, 16, false);
    }
    void *q = nb.p;
    if (!q)
        return NULL;
    if (!nb.slot)
        nb.slot = prof_new_big_slot(q);
    memcpy(q, p, old < size ? old : size);
    if (hd)
        prof_untag_free(hd, b);
    else
        free_inline(p); /* (its record taken already) */
    if (rec)
        xa_prof_sample_put(rec, nb.slot ? q : NULL, size, nb.slot);
    return q;
}

/* realloc with prof:true: sampled blocks stay sampled; an ordinary block
 * counts its growth against the sample distance (see prof.h). */
static XA_NOINLINE void *realloc_counted(void *p, size_t size, size_t old);
static XA_NOINLINE void *realloc_prof_slow(void *p, size_t size);
static XA_NOINLINE void *realloc_prof(void *p, size_t size)
{
    /* The common case first, without the general lookups: a slab's block
     * at a boundary (a tagged block never is) or a large run with no
     * record. Every way out is a tail call: no frame of its own. */
    if (xa_likely(xa_region_of(p) == XA_REGION_RUNS) && size != 0) {
        xa_chunk *rc = xa_chunk_of(p);
        xa_slab *rs = xa_run_of(rc, p);
        if (rs->kind == XA_RUN_SMALL && xa_slab_is_block(rs, p))
            return realloc_counted(p, size, rs->block_size);
        void **slot = prof_big_slot_in(rc, rs, p); /* (a large run's user pointer) */
        if (slot && !*slot)
            return realloc_counted(p, size, (size_t)rs->units << XA_UNIT_SHIFT);
    }
    return realloc_prof_slow(p, size);
}

/* realloc_prof's other cases: sampled blocks, and pointers it does not
 * recognise at once (huge blocks, bad pointers, before init). */
static XA_NOINLINE void *realloc_prof_slow(void *p, size_t size)
{
    if (xa_likely(xa_region_of(p) == XA_REGION_RUNS) && size != 0) {
        xa_chunk *rc = xa_chunk_of(p);
        xa_slab *rs = xa_run_of(rc, p);
        void **slot = prof_big_slot_in(rc, rs, p);
        if (slot) { /* (a large run: a chunk of runs holds no huge block) */
            void *rec = *slot ? xa_prof_sample_of(slot, p) : NULL;
            if (!rec) /* (a stale record) */
                return realloc_counted(p, size, (size_t)rs->units << XA_UNIT_SHIFT);
            if (size > REALLOC_RUN_MIN && size <= XA_LARGE_MAX &&
                ((size + XA_UNIT_SIZE - 1) >> XA_UNIT_SHIFT) == rs->units) {
                /* A sampled run keeping its units (a buffer grown by small
                 * steps): realloc_impl only notes the new size, and the
                 * record stays in the descriptor with it. */
                void *q = realloc_impl(p, size);
                xa_prof_sample_resize(rec, size);
                return q;
            }
        }
    }
    xa_chunk *c = xa_chunkmap_lookup(p);
    char *b;
    xa_slab *s;
    prof_hdr *hd = c ? prof_tagged(c, p, "realloc", &b, &s) : NULL;
    xa_heap *h = xa_tls_heap;
    if (hd) {
        if (h != &xa_heap_empty)
            h->nrealloc++;
        if (size == 0) { /* glibc frees and returns NULL */
            free_inline(p);
            return NULL;
        }
        size_t old = prof_tagged_usable(s, b, p);
        size_t off = (size_t)((char *)p - b);
        /* In place while the block still fits and is half used (not in
         * junk mode: the redzone would not follow). */
        if (!junk && size <= s->block_size - off && size + off > s->block_size / 2) {
            if (hd->rec)
                xa_prof_sample_put(xa_prof_sample_take(hd->rec), p, size, &hd->rec);
            return p;
        }
        void *rec = hd->rec ? xa_prof_sample_take(hd->rec) : NULL;
        void *q = prof_move(p, old, size, rec, hd, b);
        if (!q && rec)
            xa_prof_sample_put(rec, p, SIZE_MAX, &hd->rec);
        return q;
    }
    if (!c) /* not ours: realloc_impl reports it (or fails before init) */
        return realloc_impl(p, size);
    size_t old = program_usable("realloc", c, p);
    /* Stays big: past the largest class, or a run that realloc_impl keeps
     * (same units) or grows (in place when it can); not in junk mode,
     * where junk_realloc would make a slab block. */
    bool run_kept = size > REALLOC_RUN_MIN && size <= XA_LARGE_MAX &&
                    ((size + XA_UNIT_SIZE - 1) >> XA_UNIT_SHIFT) == (old >> XA_UNIT_SHIFT) &&
                    (uintptr_t)p - (uintptr_t)c < XA_CHUNK_SIZE &&
                    xa_run_of(c, p)->kind == XA_RUN_LARGE;
    void **slot = prof_big_slot(c, p);
    void *taken = slot && *slot ? xa_prof_sample_of(slot, p) : NULL;
    if (taken) { /* a sampled big block */
        *slot = NULL;
        xa_prof_sample_take(taken);
        void *q;
        if (size == 0) {
            free_inline(p);
            xa_prof_sample_put(taken, NULL, 0, NULL);
            return NULL;
        }
        if (size > XA_SMALL_MAX || (!junk && (run_kept || prof_grows_as_run(old, size)))) {
            q = realloc_impl(p, size);
            if (q)
                prof_put_big(taken, q, size);
            else
                xa_prof_sample_put(taken, p, SIZE_MAX, slot);
            return q;
        }
        if (h != &xa_heap_empty)
            h->nrealloc++;
        q = prof_move(p, old, size, taken, NULL, NULL);
        if (!q)
            xa_prof_sample_put(taken, p, SIZE_MAX, slot);
        return q;
    }
    return realloc_counted(p, size, old);
}

/* realloc of p, an unsampled block of old usable bytes, counting its
 * growth against the sample distance. */
static XA_NOINLINE void *realloc_counted(void *p, size_t size, size_t old)
{
    /* Usable sizes on both sides: growth inside a size class is free, a
     * move to the next class counts the whole step. A request within the
     * old usable size never gets more (no second lookup, and a tail
     * call). */
    if (size <= old)
        return realloc_impl(p, size);
    void *q = realloc_impl(p, size);
    if (!q)
        return q;
    size_t usable = API(malloc_usable_size)(q);
    if (xa_likely(!xa_prof_sample_due(usable > old ? usable - old : 0)) ||
        !xa_prof_sample_begin())
        return q;
    void **slot = prof_new_big_slot(q);
    if (slot)
        return xa_prof_sample_record(q, size, slot);
    /* A slab block cannot be sampled where it is: move it. */
    int saved_errno = errno;
    void *t = prof_alloc(size, 16, false);
    if (!t) {
        errno = saved_errno;
        return q; /* (unsampled, but the realloc itself succeeded) */
    }
    memcpy(t, q, size);
    free_inline(q);
    return t;
}
#endif

XA_API size_t xalloc_purge(void)
{
    if (!xa_ready)
        return 0;
    xa_heap *h = xa_tls_heap;
    size_t total = 0;
    if (h != &xa_heap_empty)
        total += xa_heap_collect(h);
    /* Other threads' empty current slabs too, idle or not. */
    xa_heaps_reclaim_idle(0, true);
    xa_heaps_flush_caches();
    for (unsigned i = 0; i < xa_narenas; i++) {
        xa_arena *a = __atomic_load_n(&xa_arenas[i], __ATOMIC_ACQUIRE);
        if (a)
            total += xa_arena_purge_all(a);
    }
    return total;
}

XA_API int API(malloc_trim)(size_t pad)
{
    (void)pad;
    return xalloc_purge() > 0;
}

static size_t clamp_int(uint64_t v)
{
    return v > (uint64_t)INT32_MAX ? (size_t)INT32_MAX : (size_t)v;
}

XA_API struct mallinfo2 API(mallinfo2)(void)
{
    struct xalloc_stats st;
    struct mallinfo2 mi;
    memset(&mi, 0, sizeof mi);
    xa_stats_collect(&st);
    mi.arena = st.mapped - st.huge_bytes;
    mi.ordblks = st.large_count;
    mi.hblks = st.huge_count;
    mi.hblkhd = st.huge_bytes;
    mi.uordblks = st.allocated;
    mi.fordblks = st.mapped > st.allocated ? st.mapped - st.allocated : 0;
    mi.keepcost = st.dirty;
    return mi;
}

XA_API struct mallinfo API(mallinfo)(void)
{
    struct mallinfo2 m2 = API(mallinfo2)();
    struct mallinfo mi;
    memset(&mi, 0, sizeof mi);
    mi.arena = (int)clamp_int(m2.arena);
    mi.ordblks = (int)clamp_int(m2.ordblks);
    mi.hblks = (int)clamp_int(m2.hblks);
    mi.hblkhd = (int)clamp_int(m2.hblkhd);
    mi.uordblks = (int)clamp_int(m2.uordblks);
    mi.fordblks = (int)clamp_int(m2.fordblks);
    mi.keepcost = (int)clamp_int(m2.keepcost);
    return mi;
}

XA_API void API(malloc_stats)(void)
{
    xalloc_stats_print(NULL, NULL);
}

XA_API int API(mallopt)(int param, int value)
{
    /* glibc's tunables have no meaning here; accepting them keeps programs
     * that set M_ARENA_MAX or M_MMAP_THRESHOLD working. */
    (void)param;
    (void)value;
    return 1;
}

XA_API const char *xalloc_version(void)
{
#define XA_STR_(x) #x
#define XA_STR(x) XA_STR_(x)
    return XA_STR(XALLOC_VERSION_MAJOR) "." XA_STR(XALLOC_VERSION_MINOR) "." XA_STR(
        XALLOC_VERSION_PATCH);
}

/* Called by init.c once options are known. */
void xa_malloc_boot(void);
void xa_malloc_boot(void)
{
    junk = xa_opt.junk;
    if (junk) {
        fast_small_max = fast_table_max = 0;
        xa_region_runs = XA_REGION_RUNS_SLOW;
    }
}

#ifndef XA_TEST
/* glibc-internal names: code inside libc (and some programs) call these
 * directly; they must reach this allocator, never glibc's heap. Plain
 * functions rather than aliases, so they build alike with gcc and clang. */
void *__libc_malloc(size_t size);
void __libc_free(void *p);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t size);
void *__libc_memalign(size_t align, size_t size);
void *__libc_valloc(size_t size);
void *__libc_pvalloc(size_t size);
int __posix_memalign(void **out, size_t align, size_t size);

XA_API void *__libc_malloc(size_t size)
{
#if XA_PROF
    if (xa_prof_sample_due(size)) /* prof hook */
        return malloc_sampled(size);
#endif
    return malloc_inline(size);
}
XA_API void __libc_free(void *p) { free_inline(p); }
XA_API void *__libc_calloc(size_t n, size_t size) { return calloc(n, size); }
XA_API void *__libc_realloc(void *p, size_t size) { return realloc(p, size); }
XA_API void *__libc_memalign(size_t align, size_t size) { return memalign_common(align, size); }
XA_API void *__libc_valloc(size_t size) { return valloc(size); }
XA_API void *__libc_pvalloc(size_t size) { return pvalloc(size); }
XA_API int __posix_memalign(void **out, size_t align, size_t size)
{
    return posix_memalign(out, align, size);
}
#endif
