/* arena.c: chunks, runs (slabs and large blocks), decay. Huge blocks are
 * in huge.c. See arena.h.
 * Layer: above chunkmap, pages, numa, meta, os; below heap. */
#include "arena.h"

#include <string.h>

#include "chunkmap.h"
#include "config.h"
#include "meta.h"
#include "numa.h"
#include "os.h"
#include "pages.h"

unsigned xa_narenas = 1;
xa_arena *xa_arenas[XA_MAX_ARENAS];
bool xa_arena_dirty_pending;
static xa_lock arenas_create_lock = XA_LOCK_INIT(XA_RANK_ARENA_LIST);


void xa_arena_boot(unsigned narenas)
{
    xa_narenas = narenas < 1 ? 1 : narenas > XA_MAX_ARENAS ? XA_MAX_ARENAS : narenas;
}

xa_arena *xa_arena_get(unsigned i)
{
    xa_arena *a = __atomic_load_n(&xa_arenas[i], __ATOMIC_ACQUIRE);
    if (xa_likely(a))
        return a;
    xa_lock_acquire(&arenas_create_lock);
    a = xa_arenas[i];
    if (!a) {
        a = xa_meta_alloc(sizeof *a, XA_CACHELINE);
        if (a) {
            xa_lock_init(&a->lock, XA_RANK_ARENA);
            a->index = i;
            a->node = xa_numa_arena_slot(i);
            __atomic_store_n(&xa_arenas[i], a, __ATOMIC_RELEASE);
        }
    }
    xa_lock_release(&arenas_create_lock);
    return a;
}

xa_arena *xa_arena_choose(void)
{
    return xa_arena_choose_on(xa_numa_current_node());
}

xa_arena *xa_arena_choose_on(int slot)
{
    /* The arena with the fewest threads bound: spreads concurrent threads
     * evenly, and a thread that replaces one that exited lands where that
     * one's freed memory is, instead of growing a fresh arena
     * (round robin would). Under NUMA, among the arenas of the node. */
    unsigned step, first = xa_numa_arenas_of_slot(slot, xa_narenas, &step);
    unsigned best = first;
    uint32_t best_threads = UINT32_MAX;
    for (unsigned i = first; i < xa_narenas; i += step) {
        xa_arena *a = __atomic_load_n(&xa_arenas[i], __ATOMIC_ACQUIRE);
        uint32_t t = a ? __atomic_load_n(&a->nthreads, __ATOMIC_RELAXED) : 0;
        if (t < best_threads) {
            best_threads = t;
            best = i;
            if (t == 0 && a)
                break; /* an existing idle arena: its memory is warm */
        }
    }
    xa_arena *a = xa_arena_get(best);
    if (!a)
        a = xa_arena_get(0);
    /* Counted now, not when the heap is made: threads starting together
     * then spread over arenas instead of all picking the same idle one. */
    if (a)
        __atomic_fetch_add(&a->nthreads, 1, __ATOMIC_RELAXED);
    return a;
}

/* ---- bins of free runs ---- */

static void bin_insert(xa_arena *a, xa_slab *s)
{
    unsigned n = s->units;
    /* Dirty runs go first so they are reused before clean ones: reusing
     * resident memory costs no page fault and keeps RSS low. */
    s->prev = s->next = NULL;
    if (!a->bin_head[n]) {
        a->bin_head[n] = a->bin_tail[n] = s;
    } else if (s->dirty) {
        s->next = a->bin_head[n];
        a->bin_head[n]->prev = s;
        a->bin_head[n] = s;
    } else {
        s->prev = a->bin_tail[n];
        a->bin_tail[n]->next = s;
        a->bin_tail[n] = s;
    }
    a->bins_nonempty |= 1u << n;
}

static void bin_remove(xa_arena *a, xa_slab *s)
{
    unsigned n = s->units;
    if (s->prev)
        s->prev->next = s->next;
    else
        a->bin_head[n] = s->next;
    if (s->next)
        s->next->prev = s->prev;
    else
        a->bin_tail[n] = s->prev;
    if (!a->bin_head[n])
        a->bins_nonempty &= ~(1u << n);
    s->next = s->prev = NULL;
}

static void dirty_append(xa_arena *a, xa_slab *s)
{
    s->dnext = NULL;
    s->dprev = a->dirty_tail;
    if (a->dirty_tail)
        a->dirty_tail->dnext = s;
    else
        a->dirty_head = s;
    a->dirty_tail = s;
    s->in_dirty_list = 1;
}

static void dirty_remove(xa_arena *a, xa_slab *s)
{
    if (!s->in_dirty_list)
        return;
    if (s->dprev)
        s->dprev->dnext = s->dnext;
    else
        a->dirty_head = s->dnext;
    if (s->dnext)
        s->dnext->dprev = s->dprev;
    else
        a->dirty_tail = s->dprev;
    s->dnext = s->dprev = NULL;
    s->in_dirty_list = 0;
}

/* Removes a free run from every index and from the byte counts. */
static void free_run_detach(xa_arena *a, xa_slab *s)
{
    bin_remove(a, s);
    dirty_remove(a, s);
    a->dirty_units -= s->dunits;
    a->retained_units -= s->units - s->dunits;
}

static void set_first_of(xa_chunk *c, unsigned first, unsigned units)
{
    for (unsigned u = first; u < first + units; u++)
        c->first_of[u] = (uint8_t)first;
}

static void free_run_init(xa_arena *a, xa_chunk *c, unsigned first, unsigned units,
                          unsigned dunits, bool zeroed, uint64_t when)
{
    xa_slab *s = &c->slabs[first];
    memset(s, 0, sizeof *s);
    s->kind = XA_RUN_FREE;
    s->first_unit = (uint8_t)first;
    s->units = (uint8_t)units;
    s->dunits = dunits;
    s->dirty = dunits > 0;
    s->zeroed = zeroed;
    s->freed_ns = when;
    set_first_of(c, first, units);
    bin_insert(a, s);
    a->dirty_units += dunits;
    a->retained_units += units - dunits;
    if (dunits) {
        dirty_append(a, s);
        if (!__atomic_load_n(&xa_arena_dirty_pending, __ATOMIC_RELAXED))
            __atomic_store_n(&xa_arena_dirty_pending, true, __ATOMIC_RELAXED);
    }
}

/* ---- huge pages per chunk ---- */

/* Puts a chunk's dirty free runs back in the FIFO (they leave it while the
 * chunk is huge: purging part of it would split the huge page). */
static void requeue_dirty_runs(xa_arena *a, xa_chunk *c)
{
    for (unsigned u = 1; u < XA_UNITS_PER_CHUNK;) {
        xa_slab *s = &c->slabs[u];
        if (s->kind == XA_RUN_FREE && s->dunits && !s->in_dirty_list)
            dirty_append(a, s);
        u += s->units ? s->units : 1;
    }
}

/* DENSE policy: promote a chunk that became dense, demote one that became
 * sparse (see pages.h). Density is what the program can have touched:
 * large blocks, and slab blocks as far as carved (a slab's run is reserved
 * whole but its pages are touched page by page). Called under the arena
 * lock when dense_bytes changed. */
static void chunk_density_changed(xa_arena *a, xa_chunk *c)
{
    if (xa_pages_policy != XA_THP_POLICY_DENSE)
        return;
    uint64_t dense = __atomic_load_n(&c->dense_bytes, __ATOMIC_RELAXED);
    if (!c->huge_advised && dense >= ((uint64_t)XA_THP_DENSE_UNITS << XA_UNIT_SHIFT)) {
        __atomic_store_n(&c->huge_advised, 1, __ATOMIC_RELAXED);
        a->huge_chunks++;
        a->thp_promotions++;
        xa_pages_promote(c);
    } else if (c->huge_advised && dense < ((uint64_t)XA_THP_SPARSE_UNITS << XA_UNIT_SHIFT)) {
        __atomic_store_n(&c->huge_advised, 0, __ATOMIC_RELAXED);
        a->huge_chunks--;
        a->thp_demotions++;
        xa_pages_demote(c);
        requeue_dirty_runs(a, c);
    }
}

/* ---- chunks ---- */

static xa_chunk *chunk_new(xa_arena *a)
{
    xa_chunk *c = xa_os_map_aligned(XA_CHUNK_SIZE, XA_CHUNK_SIZE);
    if (!c)
        return NULL;
    c->huge_advised = xa_pages_prepare(c, XA_CHUNK_SIZE, a->node, true);
    c->magic = XA_CHUNK_MAGIC;
    c->arena = a;
    c->map_size = XA_CHUNK_SIZE;
    c->keep_key = xa_chunk_keep_key(a->node);
    c->arena_index = a->index;
    a->huge_chunks += c->huge_advised;
    c->slabs[0].kind = XA_RUN_HEADER;
    c->slabs[0].units = 1;
    c->first_of[0] = 0; /* the header's own descriptor, slabs[0] */
    if (!xa_chunkmap_set(c, XA_CHUNK_SIZE, c, xa_region_runs)) {
        xa_chunkmap_set(c, XA_CHUNK_SIZE, NULL, XA_REGION_NONE);
        xa_os_unmap(c, XA_CHUNK_SIZE);
        return NULL;
    }
    c->next = a->chunks;
    if (a->chunks)
        a->chunks->prev = c;
    a->chunks = c;
    a->nchunks++;
    free_run_init(a, c, 1, XA_LARGE_MAX_UNITS, 0, true, 0);
    return c;
}

static void chunk_release(xa_arena *a, xa_chunk *c, unsigned path)
{
    xa_slab *s = &c->slabs[1];
    /* Only pages that were in use count as purged; the rest of the chunk
     * was never touched or was purged before. */
    uint64_t resident = (uint64_t)s->dunits << XA_UNIT_SHIFT;
    __atomic_fetch_add(&a->purged_by[path], resident, __ATOMIC_RELAXED);
    free_run_detach(a, s);
    if (c->prev)
        c->prev->next = c->next;
    else
        a->chunks = c->next;
    if (c->next)
        c->next->prev = c->prev;
    a->nchunks--;
    a->huge_chunks -= c->huge_advised;
    __atomic_fetch_add(&a->purged_bytes, resident, __ATOMIC_RELAXED);
    __atomic_fetch_add(&a->npurge, 1, __ATOMIC_RELAXED);
    xa_chunkmap_set(c, XA_CHUNK_SIZE, NULL, XA_REGION_NONE);
    xa_os_unmap(c, XA_CHUNK_SIZE);
}

/* ---- runs ---- */

/* Takes a run of units units; returns its descriptor (kind still FREE). */
static xa_slab *run_alloc(xa_arena *a, unsigned units)
{
    uint32_t mask = a->bins_nonempty & ~((1u << units) - 1u);
    if (!mask) {
        if (!chunk_new(a))
            return NULL;
        mask = a->bins_nonempty & ~((1u << units) - 1u);
    }
    /* The smallest run that fits, unless a bigger one is dirty: resident
     * pages are reused before clean ones are faulted in, or the dirty pool
     * grows while clean runs are used, to be purged and faulted again. */
    unsigned n = (unsigned)__builtin_ctz(mask);
    for (uint32_t m = mask; m; m &= m - 1) {
        unsigned k = (unsigned)__builtin_ctz(m);
        if (a->bin_head[k]->dirty) {
            n = k;
            break;
        }
    }
    xa_slab *s = a->bin_head[n];
    xa_chunk *c = xa_chunk_of(s);
    unsigned dunits = s->dunits;
    bool zeroed = s->zeroed;
    uint64_t when = s->freed_ns;
    free_run_detach(a, s);
    unsigned first = s->first_unit;
    if (n > units)
        /* Dirty units are taken first: the remainder keeps what is left. */
        free_run_init(a, c, first + units, n - units, dunits > units ? dunits - units : 0,
                      zeroed, when);
    memset(s, 0, sizeof *s);
    s->first_unit = (uint8_t)first;
    s->units = (uint8_t)units;
    s->zeroed = zeroed;
    set_first_of(c, first, units);
    c->used_units += units;
    a->used_units += units;
    if (a->dirty_units < a->dirty_low_units) /* reuse: the pool's low point */
        a->dirty_low_units = a->dirty_units;
    return s;
}

static void decay_run(xa_arena *a, uint64_t now, bool force, unsigned path);
static void purge_excess(xa_arena *a);
/* Gives a run back: coalesces with free neighbours, indexes it as dirty,
 * and purges the oldest dirty runs when the arena holds too many. */
static void run_free(xa_arena *a, xa_chunk *c, xa_slab *s)
{
    unsigned first = s->first_unit, units = s->units;
    /* A block's pages count as touched; a slab's only as far as carved. */
    unsigned dunits = units;
    if (s->block_size) { /* a slab (large runs have no block size) */
        size_t touched = (size_t)s->capacity * s->block_size;
        dunits = (unsigned)((touched + XA_UNIT_SIZE - 1) >> XA_UNIT_SHIFT);
        if (dunits > units)
            dunits = units;
    }
    c->used_units -= units;
    a->used_units -= units;
    chunk_density_changed(a, c);
    uint64_t now = xa_os_now_ns();
    if (first > 1) {
        xa_slab *left = &c->slabs[c->first_of[first - 1]];
        if (left->kind == XA_RUN_FREE) {
            free_run_detach(a, left);
            units += left->units;
            dunits += left->dunits;
            first = left->first_unit;
        }
    }
    unsigned end = first + units;
    if (end < XA_UNITS_PER_CHUNK) {
        xa_slab *right = &c->slabs[end];
        if (right->kind == XA_RUN_FREE) {
            free_run_detach(a, right);
            units += right->units;
            dunits += right->dunits;
        }
    }
    free_run_init(a, c, first, units, dunits, false, now);
    if (xa_opt.decay_ms == 0)
        decay_run(a, now, true, XA_PURGE_AT_FREE);
    else
        purge_excess(a);
}

/* ---- decay ---- */

static size_t purge_free_run(xa_arena *a, xa_slab *s, unsigned path)
{
    xa_chunk *c = xa_chunk_of(s);
    size_t bytes = (size_t)s->units << XA_UNIT_SHIFT;
    if (c->used_units == 0) {
        chunk_release(a, c, path);
        return bytes;
    }
    if (c->huge_advised && !a->purge_split) {
        /* Purging part of a huge page would split it: only whole chunks go
         * back under thp:always. The run stays dirty, out of the FIFO,
         * until its chunk empties (then it is queued again). */
        dirty_remove(a, s);
        return 0;
    }
    bin_remove(a, s);
    dirty_remove(a, s);
    bool zero = xa_pages_purge(xa_unit_addr(c, s->first_unit), bytes);
    a->dirty_units -= s->dunits;
    a->retained_units += s->dunits;
    if (a->dirty_units < a->dirty_low_units)
        a->dirty_low_units = a->dirty_units;
    bytes = (size_t)s->dunits << XA_UNIT_SHIFT;
    s->dunits = 0;
    s->dirty = 0;
    s->zeroed = zero;
    __atomic_fetch_add(&a->purged_bytes, bytes, __ATOMIC_RELAXED);
    __atomic_fetch_add(&a->purged_by[path], bytes, __ATOMIC_RELAXED);
    __atomic_fetch_add(&a->npurge, 1, __ATOMIC_RELAXED);
    bin_insert(a, s);
    return bytes;
}

uint64_t xa_arena_dirty_allowance_units(const xa_arena *a)
{
    uint64_t share = a->used_units / 8;
    return share > XA_DIRTY_FLOOR_UNITS ? share : XA_DIRTY_FLOOR_UNITS;
}

/* Free-time purge: memory goes back while the program frees, not only
 * after decay_ms. The oldest dirty runs go first; the newest (the ones a
 * program freeing and allocating in a loop takes again) stay. */
static void purge_excess(xa_arena *a)
{
    uint64_t allow = xa_arena_dirty_allowance_units(a);
    /* Only when the dirty pool has grown by half the allowance since its
     * lowest point: frees outrunning reuse (a mass free, a shrinking
     * heap). A program freeing and allocating in a loop keeps a level
     * pool that it takes again at once; purging it would cost a madvise
     * and a refault per run (decay takes what stays unused). */
    if (xa_likely(a->dirty_units <= allow || a->dirty_units <= a->dirty_low_units + allow / 2))
        return;
    for (xa_slab *s = a->dirty_head; s && a->dirty_units > allow / 2;) {
        xa_slab *next = s->dnext;
        purge_free_run(a, s, XA_PURGE_AT_FREE);
        s = next;
    }
    a->dirty_low_units = a->dirty_units;
}

static size_t reclaim_abandoned(xa_arena *a);

static void decay_run(xa_arena *a, uint64_t now, bool force, unsigned path)
{
    uint64_t decay_ns = (uint64_t)xa_opt.decay_ms * 1000000u;
    xa_slab *s = a->dirty_head;
    while (s && (force || now - s->freed_ns >= decay_ns)) {
        xa_slab *next = s->dnext;
        purge_free_run(a, s, path);
        s = next;
    }
    __atomic_fetch_add(&a->purged_by[path], xa_huge_cache_purge(a, now, force), __ATOMIC_RELAXED);
    /* Next check: when the oldest dirty run comes due, at most a decay
     * period (and at least 1 ms) away. */
    uint64_t step = decay_ns / 4 > 1000000u ? decay_ns / 4 : 1000000u;
    __atomic_store_n(&a->next_decay_ns, now + step, __ATOMIC_RELAXED);
}

void xa_arena_maybe_decay(xa_arena *a, uint64_t now, unsigned path)
{
    if (now < __atomic_load_n(&a->next_decay_ns, __ATOMIC_RELAXED))
        return;
    xa_lock_acquire(&a->lock);
    reclaim_abandoned(a);
    decay_run(a, now, false, path);
    xa_lock_release(&a->lock);
}

uint64_t xa_arenas_dirty_bytes(void)
{
    uint64_t bytes = 0;
    for (unsigned i = 0; i < xa_narenas; i++) {
        xa_arena *a = __atomic_load_n(&xa_arenas[i], __ATOMIC_ACQUIRE);
        if (a)
            bytes += (__atomic_load_n(&a->dirty_units, __ATOMIC_RELAXED) << XA_UNIT_SHIFT) +
                     __atomic_load_n(&a->huge_cache_bytes, __ATOMIC_RELAXED);
    }
    return bytes;
}

size_t xa_arena_purge_all(xa_arena *a)
{
    xa_lock_acquire(&a->lock);
    uint64_t before = __atomic_load_n(&a->purged_bytes, __ATOMIC_RELAXED);
    reclaim_abandoned(a);
    uint64_t now = xa_os_now_ns();
    /* Forced purge also takes clean-but-never-queued dirty runs of
     * thp:always chunks: the operator asked for memory back now. */
    for (unsigned n = 1; n < XA_UNITS_PER_CHUNK; n++) {
        for (xa_slab *s = a->bin_head[n]; s;) {
            xa_slab *next = s->next;
            if (s->dirty && !s->in_dirty_list)
                dirty_append(a, s);
            s = next;
        }
    }
    /* Even huge chunks give their free runs back now: the operator asked,
     * and a split huge page is the price. */
    a->purge_split = true;
    decay_run(a, now, true, XA_PURGE_TRIM);
    a->purge_split = false;
    size_t purged = (size_t)(__atomic_load_n(&a->purged_bytes, __ATOMIC_RELAXED) - before);
    xa_lock_release(&a->lock);
    return purged;
}

/* ---- slabs ---- */

xa_slab *xa_arena_slab_new(xa_arena *a, unsigned cls, struct xa_heap *heap)
{
    const struct xa_class_info *ci = &xa_classes[cls];
    xa_lock_acquire(&a->lock);
    xa_slab *s = run_alloc(a, ci->units);
    if (s) {
        xa_chunk *c = xa_chunk_of(s);
        s->kind = XA_RUN_SMALL;
        s->cls = (uint8_t)cls;
        s->block_size = ci->size;
        s->div_magic = ci->div_magic;
        s->reserved = ci->blocks;
        s->start = xa_unit_addr(c, s->first_unit);
        s->heap = heap;
        if (ci->size >= XA_TRIM_MIN_BLOCK)
            xa_slab_set_in_full(s, XA_SLAB_TRIM);
        a->class_slabs[cls]++;
        a->class_capacity[cls] += ci->blocks;
    }
    xa_lock_release(&a->lock);
    return s;
}

void xa_arena_note_carved(xa_slab *s, uint32_t n)
{
    xa_chunk *c = xa_chunk_of(s);
    xa_arena *a = c->arena;
    __atomic_fetch_add(&a->class_carved[s->cls], n, __ATOMIC_RELAXED);
    uint64_t dense = __atomic_add_fetch(&c->dense_bytes, (uint64_t)n * s->block_size,
                                        __ATOMIC_RELAXED);
    if (xa_unlikely(xa_pages_policy == XA_THP_POLICY_DENSE && !xa_chunk_huge_advised(c) &&
                    dense >= ((uint64_t)XA_THP_DENSE_UNITS << XA_UNIT_SHIFT))) {
        xa_lock_acquire(&a->lock);
        chunk_density_changed(a, c);
        xa_lock_release(&a->lock);
    }
}

void xa_arena_note_uncarved(xa_slab *s)
{
    xa_chunk *c = xa_chunk_of(s);
    xa_arena *a = c->arena;
    __atomic_fetch_sub(&a->class_carved[s->cls], s->capacity, __ATOMIC_RELAXED);
    uint64_t dense = __atomic_sub_fetch(&c->dense_bytes, (uint64_t)s->capacity * s->block_size,
                                        __ATOMIC_RELAXED);
    if (xa_unlikely(xa_pages_policy == XA_THP_POLICY_DENSE && xa_chunk_huge_advised(c) &&
                    dense < ((uint64_t)XA_THP_SPARSE_UNITS << XA_UNIT_SHIFT))) {
        xa_lock_acquire(&a->lock);
        chunk_density_changed(a, c);
        xa_lock_release(&a->lock);
    }
}

static void slab_release_locked(xa_arena *a, xa_chunk *c, xa_slab *s)
{
    a->class_slabs[s->cls]--;
    a->class_capacity[s->cls] -= s->reserved;
    __atomic_fetch_sub(&a->class_carved[s->cls], s->capacity, __ATOMIC_RELAXED);
    __atomic_fetch_sub(&c->dense_bytes, (uint64_t)s->capacity * s->block_size, __ATOMIC_RELAXED);
    s->kind = XA_RUN_FREE;
    s->heap = NULL;
    run_free(a, c, s);
}

void xa_arena_slab_free(xa_chunk *c, xa_slab *s)
{
    xa_arena *a = c->arena;
    xa_lock_acquire(&a->lock);
    slab_release_locked(a, c, s);
    xa_lock_release(&a->lock);
}

void xa_arena_slab_abandon(xa_chunk *c, xa_slab *s)
{
    xa_arena *a = c->arena;
    xa_lock_acquire(&a->lock);
    __atomic_store_n(&s->heap, NULL, __ATOMIC_RELEASE);
    xa_slab_set_in_full(s, (s->in_full & ~XA_SLAB_IN_FULL) | XA_SLAB_ABANDONED);
    s->prev = NULL;
    s->next = a->abandoned[s->cls];
    if (s->next)
        s->next->prev = s;
    a->abandoned[s->cls] = s;
    xa_lock_release(&a->lock);
}

uint32_t xa_slab_collect(xa_slab *s)
{
    uintptr_t old = atomic_load_explicit(&s->thread_free, memory_order_relaxed);
    if (!(old & ~XA_TF_MASK))
        return 0;
    /* Take the list, keep the state bits. */
    while (!atomic_compare_exchange_weak_explicit(&s->thread_free, &old, old & XA_TF_MASK,
                                                  memory_order_acquire, memory_order_relaxed))
        ;
    uintptr_t head = old & ~XA_TF_MASK;
    uint32_t n = 1;
    xa_block *tail = (xa_block *)head;
    for (uintptr_t next; (next = tail->next ^ xa_heap_secret) != 0; tail = (xa_block *)next)
        n++;
    tail->next = s->free ^ xa_heap_secret;
    s->free = head;
    s->used -= n;
    return n;
}

static void abandoned_unlink(xa_arena *a, xa_slab *s)
{
    if (s->prev)
        s->prev->next = s->next;
    else
        a->abandoned[s->cls] = s->next;
    if (s->next)
        s->next->prev = s->prev;
    s->next = s->prev = NULL;
}

static size_t reclaim_abandoned(xa_arena *a)
{
    size_t freed = 0;
    for (unsigned cls = 0; cls < XA_NCLASSES; cls++) {
        for (xa_slab *s = a->abandoned[cls]; s;) {
            xa_slab *next = s->next;
            xa_slab_collect(s);
            if (xa_slab_used(s) == 0) {
                abandoned_unlink(a, s);
                slab_release_locked(a, xa_chunk_of(s), s);
                freed++;
            }
            s = next;
        }
    }
    return freed;
}

/* Takes abandoned slab s for heap. Pre: arena lock held, s abandoned. */
static void adopt_locked(xa_arena *a, xa_slab *s, struct xa_heap *heap)
{
    abandoned_unlink(a, s);
    xa_slab_set_in_full(s, s->in_full & ~XA_SLAB_ABANDONED);
    xa_slab_collect(s);
    /* Back to a normal owner: remote frees may notify again. */
    uintptr_t old = atomic_load_explicit(&s->thread_free, memory_order_relaxed);
    while (!atomic_compare_exchange_weak_explicit(&s->thread_free, &old,
                                                  (old & ~XA_TF_MASK) | XA_TF_NORMAL,
                                                  memory_order_acq_rel, memory_order_relaxed))
        ;
    __atomic_store_n(&s->heap, heap, __ATOMIC_RELEASE);
}

xa_slab *xa_arena_slab_adopt(xa_arena *a, unsigned cls, struct xa_heap *heap)
{
    if (!__atomic_load_n(&a->abandoned[cls], __ATOMIC_RELAXED))
        return NULL;
    xa_lock_acquire(&a->lock);
    xa_slab *s = a->abandoned[cls];
    if (s)
        adopt_locked(a, s, heap);
    xa_lock_release(&a->lock);
    return s;
}

bool xa_arena_slab_adopt_this(xa_arena *a, xa_slab *s, struct xa_heap *heap)
{
    xa_lock_acquire(&a->lock);
    bool ok = s->kind == XA_RUN_SMALL && (s->in_full & XA_SLAB_ABANDONED);
    if (ok)
        adopt_locked(a, s, heap);
    xa_lock_release(&a->lock);
    return ok;
}

/* ---- large ---- */

void *xa_arena_large_alloc(xa_arena *a, size_t size, bool zero)
{
    unsigned units = (unsigned)((size + XA_UNIT_SIZE - 1) >> XA_UNIT_SHIFT);
    xa_lock_acquire(&a->lock);
    xa_slab *s = run_alloc(a, units);
    if (s) {
        s->kind = XA_RUN_LARGE;
        s->large_size = size;
        __atomic_fetch_add(&a->requested_big, size, __ATOMIC_RELAXED);
        a->large_count++;
        a->large_bytes += (uint64_t)units << XA_UNIT_SHIFT;
        xa_chunk *c = xa_chunk_of(s);
        __atomic_fetch_add(&c->dense_bytes, (uint64_t)units << XA_UNIT_SHIFT, __ATOMIC_RELAXED);
        chunk_density_changed(a, c);
    }
    xa_lock_release(&a->lock);
    if (!s)
        return NULL;
    void *p = xa_unit_addr(xa_chunk_of(s), s->first_unit);
    if (zero && !s->zeroed)
        memset(p, 0, size);
    s->zeroed = 0;
    return p;
}

void xa_arena_large_free(xa_chunk *c, xa_slab *s)
{
    xa_arena *a = c->arena;
    xa_lock_acquire(&a->lock);
    if (xa_unlikely(s->kind != XA_RUN_LARGE)) {
        xa_lock_release(&a->lock);
        xa_fatal("free(): double free or invalid pointer %p (large block)",
                 (void *)xa_unit_addr(c, s->first_unit));
    }
    a->large_count--;
    a->large_bytes -= (uint64_t)s->units << XA_UNIT_SHIFT;
    __atomic_fetch_sub(&c->dense_bytes, (uint64_t)s->units << XA_UNIT_SHIFT, __ATOMIC_RELAXED);
    __atomic_fetch_sub(&a->requested_big, s->large_size, __ATOMIC_RELAXED);
    s->kind = XA_RUN_FREE;
    run_free(a, c, s);
    xa_lock_release(&a->lock);
}

bool xa_arena_large_resize(xa_chunk *c, xa_slab *s, size_t new_size)
{
    xa_arena *a = c->arena;
    unsigned want = (unsigned)((new_size + XA_UNIT_SIZE - 1) >> XA_UNIT_SHIFT);
    bool ok = false;
    xa_lock_acquire(&a->lock);
    unsigned first = s->first_unit, have = s->units;
    if (want == have) {
        ok = true;
    } else if (want < have) {
        /* Shrink: the tail becomes a free run (coalescing to the right). */
        s->units = (uint8_t)want;
        a->large_bytes -= (uint64_t)(have - want) << XA_UNIT_SHIFT;
        __atomic_fetch_sub(&c->dense_bytes, (uint64_t)(have - want) << XA_UNIT_SHIFT,
                           __ATOMIC_RELAXED);
        xa_slab *tail = &c->slabs[first + want];
        memset(tail, 0, sizeof *tail);
        tail->first_unit = (uint8_t)(first + want);
        tail->units = (uint8_t)(have - want);
        set_first_of(c, first + want, have - want);
        run_free(a, c, tail);
        ok = true;
    } else if (first + want <= XA_UNITS_PER_CHUNK && first + have < XA_UNITS_PER_CHUNK) {
        xa_slab *right = &c->slabs[first + have];
        if (right->kind == XA_RUN_FREE && have + right->units >= want) {
            unsigned rfirst = right->first_unit, runits = right->units;
            unsigned rdunits = right->dunits;
            bool rzero = right->zeroed;
            uint64_t when = right->freed_ns;
            free_run_detach(a, right);
            unsigned take = want - have;
            if (runits > take)
                free_run_init(a, c, rfirst + take, runits - take,
                              rdunits > take ? rdunits - take : 0, rzero, when);
            set_first_of(c, first, want);
            s->units = (uint8_t)want;
            c->used_units += take;
            a->used_units += take;
            a->large_bytes += (uint64_t)take << XA_UNIT_SHIFT;
            __atomic_fetch_add(&c->dense_bytes, (uint64_t)take << XA_UNIT_SHIFT, __ATOMIC_RELAXED);
            chunk_density_changed(a, c);
            ok = true;
        }
    }
    if (ok) {
        __atomic_fetch_add(&a->requested_big, new_size - s->large_size, __ATOMIC_RELAXED);
        s->large_size = new_size;
    }
    xa_lock_release(&a->lock);
    return ok;
}

/* ---- fork ---- */

void xa_arenas_fork_prepare(void)
{
    xa_lock_acquire(&arenas_create_lock);
    for (unsigned i = 0; i < xa_narenas; i++)
        if (xa_arenas[i])
            xa_lock_acquire(&xa_arenas[i]->lock);
}

void xa_arenas_fork_parent(void)
{
    for (unsigned i = xa_narenas; i-- > 0;)
        if (xa_arenas[i])
            xa_lock_release(&xa_arenas[i]->lock);
    xa_lock_release(&arenas_create_lock);
}

void xa_arenas_fork_child(void)
{
    for (unsigned i = 0; i < xa_narenas; i++)
        if (xa_arenas[i])
            xa_lock_reset(&xa_arenas[i]->lock);
    xa_lock_reset(&arenas_create_lock);
}
