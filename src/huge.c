/* huge.c: huge blocks, a mapping each with a chunk header in front, and
 * the per-arena cache of freed ones (the free-then-malloc pattern). The
 * arena's lock guards its lists and counters. See arena.h.
 * Layer: arena (beside arena.c); above chunkmap, pages, os. */
#include "arena.h"

#include <string.h>

#include "chunkmap.h"
#include "config.h"
#include "os.h"
#include "pages.h"

/* Huge blocks kept after free, per arena, for the free-then-malloc pattern. */
#define HUGE_CACHE_MAX_COUNT 8
/* Most bytes of freed mappings kept beyond the dirty allowance once the
 * program mapped a buffer again that the cache had given up (two buffers
 * of 8 MiB: a text and its copy). */
#define HUGE_KEEP_MAX ((size_t)16 << 20)

/* Sizes a and b (nonzero) are one buffer's: within a quarter of each
 * other (a program's JSON text or log buffer varies by a few percent
 * from one round to the next). */
static bool huge_sizes_near(uint64_t a, uint64_t b)
{
    uint64_t lo = a < b ? a : b, hi = a < b ? b : a;
    return hi - lo <= lo / 4;
}


static void huge_link(xa_chunk **list, xa_chunk *c)
{
    c->prev = NULL;
    c->next = *list;
    if (*list)
        (*list)->prev = c;
    *list = c;
}

static void huge_unlink(xa_chunk **list, xa_chunk *c)
{
    if (c->prev)
        c->prev->next = c->next;
    else
        *list = c->next;
    if (c->next)
        c->next->prev = c->prev;
    c->next = c->prev = NULL;
}

static void huge_unmap(xa_arena *a, xa_chunk *c)
{
    size_t size = c->map_size;
    a->huge_mapped -= size;
    __atomic_fetch_add(&a->purged_bytes, size, __ATOMIC_RELAXED);
    __atomic_fetch_add(&a->npurge, 1, __ATOMIC_RELAXED);
    xa_chunkmap_set(c, size, NULL, XA_REGION_NONE);
    xa_os_unmap(c, size);
}

/* A mapping given up at free, not by decay: if the program maps one of
 * its size again soon, the cache learns to keep it (xa_huge_alloc). */
static void huge_note_unmapped(xa_arena *a, size_t map_size, uint64_t now)
{
    a->huge_unmapped_size = map_size;
    a->huge_unmapped_ns = now;
}

/* Grows huge mapping c from old_map to map_size bytes: in place when the
 * address space above it is free, else moved to a fresh 2 MiB-aligned
 * range. The destination is registered in the chunk map before
 * the pages move onto it, so the block is never left unregistered (a
 * metadata allocation can fail there); the old range is cleared before
 * its address space is given up, never after: once given up, another
 * thread may map it and register it. Returns the new header, or NULL with
 * c where it was and still registered. Pre: nobody else relinks c (the
 * arena lock held for a live block, or c taken from the cache). */
static xa_chunk *huge_grow(xa_chunk *c, size_t old_map, size_t map_size)
{
    if (xa_os_remap_inplace(c, old_map, map_size) == 0) {
        xa_chunkmap_set(c, map_size, c, XA_REGION_HUGE);
        return c;
    }
    xa_chunk *n = xa_os_map_aligned(map_size, XA_CHUNK_SIZE);
    if (!n)
        return NULL;
    if (!xa_chunkmap_set(n, map_size, n, XA_REGION_HUGE)) {
        xa_chunkmap_set(n, map_size, NULL, XA_REGION_NONE);
        xa_os_unmap(n, map_size);
        return NULL;
    }
    xa_chunkmap_set(c, old_map, NULL, XA_REGION_NONE);
    if (xa_os_remap_onto(c, old_map, map_size, n) != 0) {
        xa_chunkmap_set(n, map_size, NULL, XA_REGION_NONE);
        xa_chunkmap_set(c, old_map, c, XA_REGION_HUGE); /* (its leaves exist) */
        xa_os_unmap(n, map_size);
        return NULL;
    }
    return n;
}

/* Cuts huge mapping c from old_map down to map_size bytes in place; false
 * (c whole and registered) if the kernel refuses. The tail's chunks leave
 * the chunk map before their address space is given up, never after: once
 * given up, another thread may map it and register it. Pre: as huge_grow. */
static bool huge_cut(xa_chunk *c, size_t old_map, size_t map_size)
{
    uintptr_t keep = XA_ALIGN_UP((uintptr_t)c + map_size, XA_CHUNK_SIZE);
    uintptr_t end = XA_ALIGN_UP((uintptr_t)c + old_map, XA_CHUNK_SIZE);
    if (end > keep)
        xa_chunkmap_set((void *)keep, end - keep, NULL, XA_REGION_NONE);
    if (xa_os_remap_inplace(c, old_map, map_size) != 0) {
        if (end > keep)
            xa_chunkmap_set((void *)keep, end - keep, c, XA_REGION_HUGE);
        return false;
    }
    return true;
}

/* Grows the cached mapping *cp (out of every list) to map_size; its
 * pages come along. False (the mapping unmapped) if it cannot grow. */
static bool huge_grow_cached(xa_arena *a, xa_chunk **cp, size_t map_size)
{
    xa_chunk *c = *cp;
    size_t old_map = c->map_size;
    xa_chunk *n = huge_grow(c, old_map, map_size);
    if (!n) {
        xa_chunkmap_set(c, old_map, NULL, XA_REGION_NONE);
        xa_os_unmap(c, old_map);
        xa_lock_acquire(&a->lock);
        a->huge_mapped -= old_map;
        xa_lock_release(&a->lock);
        return false;
    }
    n->map_size = map_size;
    xa_lock_acquire(&a->lock);
    a->huge_mapped += map_size - old_map;
    xa_lock_release(&a->lock);
    *cp = n;
    return true;
}

/* Cuts the cached mapping c (out of every list) down to map_size; the
 * tail's pages go back to the system. Left whole if the kernel refuses. */
static void huge_shrink_cached(xa_arena *a, xa_chunk *c, size_t map_size)
{
    size_t old_map = c->map_size;
    if (!huge_cut(c, old_map, map_size))
        return;
    c->map_size = map_size;
    xa_lock_acquire(&a->lock);
    a->huge_mapped -= old_map - map_size;
    __atomic_fetch_add(&a->purged_bytes, old_map - map_size, __ATOMIC_RELAXED);
    __atomic_fetch_add(&a->npurge, 1, __ATOMIC_RELAXED);
    xa_lock_release(&a->lock);
}

size_t xa_huge_cache_purge(xa_arena *a, uint64_t now, bool force)
{
    uint64_t decay_ns = (uint64_t)xa_opt.decay_ms * 1000000u;
    size_t bytes = 0;
    for (xa_chunk *c = a->huge_cache; c;) {
        xa_chunk *next = c->next;
        if (force || now - c->freed_ns >= decay_ns) {
            /* Unused for decay_ms: the buffer the keep was learnt for is
             * gone or smaller; it fades out. */
            if (!force)
                a->huge_keep_bytes /= 2;
            huge_unlink(&a->huge_cache, c);
            a->huge_cache_count--;
            a->huge_cache_bytes -= c->map_size;
            bytes += c->map_size;
            huge_unmap(a, c);
        }
        c = next;
    }
    return bytes;
}

void *xa_huge_alloc(xa_arena *a, size_t size, size_t align, bool zero)
{
    size_t off = align > XA_HUGE_HEADER ? align : XA_HUGE_HEADER;
    size_t need = off + size;
    if (need < size || need > ((size_t)1 << 46))
        return NULL;
    size_t map_size = XA_ALIGN_UP(need, XA_OS_PAGE);
    size_t map_align = align > XA_CHUNK_SIZE ? align : XA_CHUNK_SIZE;
    xa_chunk *c = NULL;
    if (off == XA_HUGE_HEADER) {
        xa_lock_acquire(&a->lock);
        /* Any cached mapping saves the page faults of the pages it has:
         * the smallest big enough (cut to size when more than a quarter
         * too big: the tail goes back to the system), else the biggest
         * (grown by mremap: its pages come along, only the new tail
         * faults in). A program cycling buffers of varied sizes (5-25 MiB
         * images, query results) then writes resident pages instead of
         * faulting every page of a fresh mapping in. */
        xa_chunk *best = NULL, *grow = NULL;
        for (xa_chunk *h = a->huge_cache; h; h = h->next) {
            if (h->map_size >= map_size) {
                if (!best || h->map_size < best->map_size)
                    best = h;
            } else if (!grow || h->map_size > grow->map_size) {
                grow = h;
            }
        }
        c = best ? best : grow;
        if (c) {
            huge_unlink(&a->huge_cache, c);
            a->huge_cache_count--;
            a->huge_cache_bytes -= c->map_size;
        }
        xa_lock_release(&a->lock);
        size_t had = c ? c->map_size : 0; /* the bytes that may hold old data */
        if (best && !xa_huge_cached_fits(had, map_size))
            huge_shrink_cached(a, c, map_size);
        else if (!best && grow && !huge_grow_cached(a, &c, map_size))
            c = NULL;
        if (c && zero)
            memset((char *)c + off, 0, had - off < size ? had - off : size);
    }
    if (!c) {
        c = xa_os_map_aligned(map_size, map_align);
        if (!c)
            return NULL;
        c->huge_advised = xa_pages_prepare(c, map_size, a->node, false);
        c->magic = XA_CHUNK_MAGIC;
        c->arena = a;
        c->map_size = map_size;
        c->slabs[0].kind = XA_RUN_HUGE;
        c->slabs[0].units = 1;
        /* Every unit of the first 2 MiB leads to slabs[0] (xa_run_of). */
        memset(c->first_of, 0, sizeof c->first_of);
        if (!xa_chunkmap_set(c, map_size, c, XA_REGION_HUGE)) {
            xa_chunkmap_set(c, map_size, NULL, XA_REGION_NONE);
            xa_os_unmap(c, map_size);
            return NULL;
        }
        uint64_t now = xa_os_now_ns();
        xa_lock_acquire(&a->lock);
        a->huge_mapped += map_size;
        /* The cache gave up a mapping of this buffer's size within
         * decay_ms and the program maps it again: each round of a
         * program's big buffers would fault all their pages in again.
         * The cache learns to keep two such buffers beyond the dirty
         * allowance (glibc's mmap threshold learns the same from frees),
         * until decay returns them unused. */
        bool again = a->huge_unmapped_size &&
                     huge_sizes_near(a->huge_unmapped_size, map_size) &&
                     now - a->huge_unmapped_ns < (uint64_t)xa_opt.decay_ms * 1000000u;
        if (again) {
            uint64_t keep = 2 * (uint64_t)map_size;
            if (keep > HUGE_KEEP_MAX)
                keep = HUGE_KEEP_MAX;
            if (keep > a->huge_keep_bytes)
                a->huge_keep_bytes = keep;
        }
        /* A fresh mapping of a new size: the runs' churn the arena learnt
         * may be over (a buffer that outgrew them). A buffer of a round
         * mapped again says the rounds go on: the floor stays, but only
         * while the dirty runs are no more than the live ones and the
         * buffers going round (two). More says the program moved from
         * runs to mappings (it freed them all): kept, the runs would add
         * to the fresh pages, and a memory cgroup sized for the live heap
         * would kill the program. */
        if (!again || a->dirty_units > a->used_units + 2 * (map_size >> XA_UNIT_SHIFT))
            xa_decay_forget_churn(a, now);
        xa_lock_release(&a->lock);
    }
    c->huge_ptr = (char *)c + off;
    c->huge_size = c->map_size - off;
    c->huge_request = size;
    xa_lock_acquire(&a->lock);
    huge_link(&a->huge_live, c);
    a->huge_count++;
    a->huge_bytes += c->huge_size;
    __atomic_fetch_add(&a->requested_big, size, __ATOMIC_RELAXED);
    xa_lock_release(&a->lock);
    return c->huge_ptr;
}

void xa_huge_free(xa_chunk *c)
{
    xa_arena *a = c->arena;
    xa_lock_acquire(&a->lock);
    if (xa_unlikely(!c->huge_ptr)) {
        xa_lock_release(&a->lock);
        xa_fatal("free(): double free of huge block in mapping %p", (void *)c);
    }
    huge_unlink(&a->huge_live, c);
    a->huge_count--;
    a->huge_bytes -= c->huge_size;
    __atomic_fetch_sub(&a->requested_big, c->huge_request, __ATOMIC_RELAXED);
    bool plain = c->huge_ptr == (char *)c + XA_HUGE_HEADER;
    c->huge_ptr = NULL;
    /* Kept mappings count against the arena's dirty allowance like free
     * runs do, with the live huge blocks in the share of the live heap it
     * allows (an eighth): the oldest go first when this one would pass it,
     * and a free that keeps nothing still cuts the cache down to it (a
     * mass free leaves no more than the allowance of what stays). */
    uint64_t allow = xa_arena_dirty_allowance_units(a) << XA_UNIT_SHIFT;
    uint64_t share = ((a->used_units << XA_UNIT_SHIFT) + a->huge_bytes) / 8;
    if (share > allow)
        allow = share;
    uint64_t dirty = a->dirty_units << XA_UNIT_SHIFT;
    uint64_t learnt = a->huge_keep_bytes;
    bool keep = plain && xa_opt.decay_ms > 0 &&
                (dirty + c->map_size <= allow || c->map_size <= learnt);
    uint64_t add = keep ? c->map_size : 0;
    uint64_t now = xa_os_now_ns();
    while (a->huge_cache && ((keep && a->huge_cache_count >= HUGE_CACHE_MAX_COUNT) ||
                             (dirty + a->huge_cache_bytes + add > allow &&
                              a->huge_cache_bytes + add > learnt))) {
        xa_chunk *old = a->huge_cache;
        while (old->next)
            old = old->next; /* the list is newest first */
        huge_unlink(&a->huge_cache, old);
        a->huge_cache_count--;
        a->huge_cache_bytes -= old->map_size;
        __atomic_fetch_add(&a->purged_by[XA_PURGE_AT_FREE], old->map_size, __ATOMIC_RELAXED);
        huge_note_unmapped(a, old->map_size, now);
        huge_unmap(a, old);
    }
    if (keep) {
        c->freed_ns = now;
        huge_link(&a->huge_cache, c);
        a->huge_cache_count++;
        a->huge_cache_bytes += c->map_size;
    } else {
        __atomic_fetch_add(&a->purged_by[XA_PURGE_AT_FREE], c->map_size, __ATOMIC_RELAXED);
        if (plain)
            huge_note_unmapped(a, c->map_size, now);
        huge_unmap(a, c);
    }
    xa_lock_release(&a->lock);
}

void *xa_huge_realloc(xa_chunk *c, size_t new_size)
{
    xa_arena *a = c->arena;
    size_t off = (size_t)(c->huge_ptr - (char *)c);
    size_t need = off + new_size;
    if (need < new_size)
        return NULL;
    size_t map_size = XA_ALIGN_UP(need, XA_OS_PAGE);
    size_t old_map = c->map_size;
    if (map_size == old_map) {
        xa_lock_acquire(&a->lock);
        __atomic_fetch_add(&a->requested_big, new_size - c->huge_request, __ATOMIC_RELAXED);
        c->huge_request = new_size;
        xa_lock_release(&a->lock);
        return c->huge_ptr;
    }
    /* Under the arena lock: the header sits in the huge list, which other
     * threads walk and relink. */
    xa_chunk *n = c;
    xa_lock_acquire(&a->lock);
    if (map_size < old_map) {
        if (!huge_cut(c, old_map, map_size)) {
            xa_lock_release(&a->lock);
            return NULL;
        }
    } else {
        n = huge_grow(c, old_map, map_size);
        if (!n) {
            xa_lock_release(&a->lock);
            return NULL;
        }
    }
    if (n != c) {
        /* The header moved with the pages; fix the list links. */
        if (n->prev)
            n->prev->next = n;
        else
            a->huge_live = n;
        if (n->next)
            n->next->prev = n;
    }
    a->huge_mapped += map_size - old_map;
    if (map_size > old_map)
        xa_decay_forget_churn(a, xa_os_now_ns());
    a->huge_bytes += (map_size - off) - n->huge_size;
    n->map_size = map_size;
    n->huge_ptr = (char *)n + off;
    n->huge_size = map_size - off;
    __atomic_fetch_add(&a->requested_big, new_size - n->huge_request, __ATOMIC_RELAXED);
    n->huge_request = new_size;
    xa_lock_release(&a->lock);
    return n->huge_ptr;
}
