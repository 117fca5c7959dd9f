/* arena_slab.c: the arena's side of slabs: new ones from runs, freed ones
 * back to runs, abandoned ones (their thread exited) kept, adopted or
 * reclaimed, remote frees collected, carved blocks counted.
 * Layer: arena; above pages. */
#include "arena_internal.h"

#include "config.h"
#include "os.h"
#include "pages.h"

xa_slab *xa_arena_slab_new(xa_arena *a, unsigned cls, struct xa_heap *heap)
{
    const struct xa_class_info *ci = &xa_classes[cls];
    xa_lock_acquire(&a->lock);
    xa_slab *s = xa_run_alloc(a, ci->units);
    if (s) {
        xa_chunk *c = xa_chunk_of(s);
        s->kind = XA_RUN_SMALL;
        s->cls = (uint8_t)cls;
        s->block_size = ci->size;
        s->div_magic = ci->div_magic;
        s->reserved = ci->blocks;
        s->start = xa_unit_addr(c, s->first_unit);
        s->heap = heap;
        /* Copies of what a free of another thread's block asks (keep it,
         * and whose arena's count it lowers), on the line it reads. */
        s->small.keep_key = xa_chunk_keep_key(a->node);
        s->small.arena_index = a->index;
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
    uint64_t dense = xa_chunk_dense_add(c, (uint64_t)n * s->block_size);
    if (xa_unlikely(xa_pages_policy == XA_THP_POLICY_DENSE && !xa_chunk_huge_advised(c) &&
                    dense >= ((uint64_t)XA_THP_DENSE_UNITS << XA_UNIT_SHIFT))) {
        xa_lock_acquire(&a->lock);
        xa_chunk_density_changed(a, c);
        xa_lock_release(&a->lock);
    }
}

void xa_arena_note_uncarved(xa_slab *s)
{
    xa_chunk *c = xa_chunk_of(s);
    xa_arena *a = c->arena;
    __atomic_fetch_sub(&a->class_carved[s->cls], s->capacity, __ATOMIC_RELAXED);
    uint64_t dense = xa_chunk_dense_add(c, (uint64_t)0 - (uint64_t)s->capacity * s->block_size);
    if (xa_unlikely(xa_pages_policy == XA_THP_POLICY_DENSE && xa_chunk_huge_advised(c) &&
                    dense < ((uint64_t)XA_THP_SPARSE_UNITS << XA_UNIT_SHIFT))) {
        xa_lock_acquire(&a->lock);
        xa_chunk_density_changed(a, c);
        xa_lock_release(&a->lock);
    }
}

static void slab_release_locked(xa_arena *a, xa_chunk *c, xa_slab *s)
{
    a->class_slabs[s->cls]--;
    a->class_capacity[s->cls] -= s->reserved;
    __atomic_fetch_sub(&a->class_carved[s->cls], s->capacity, __ATOMIC_RELAXED);
    xa_chunk_dense_add(c, (uint64_t)0 - (uint64_t)s->capacity * s->block_size);
    s->kind = XA_RUN_FREE;
    s->heap = NULL;
    xa_run_free(a, c, s);
}

void xa_arena_slab_free(xa_chunk *c, xa_slab *s)
{
    xa_arena *a = c->arena;
    xa_lock_acquire(&a->lock);
    slab_release_locked(a, c, s);
    xa_lock_release(&a->lock);
}

static void abandon_locked(xa_arena *a, xa_slab *s)
{
    __atomic_store_n(&s->heap, NULL, __ATOMIC_RELEASE);
    xa_slab_set_in_full(s, (s->in_full & ~XA_SLAB_IN_FULL) | XA_SLAB_ABANDONED);
    s->prev = NULL;
    s->next = a->abandoned[s->cls];
    if (s->next)
        s->next->prev = s;
    a->abandoned[s->cls] = s;
}

void xa_arena_slab_abandon(xa_chunk *c, xa_slab *s)
{
    xa_arena *a = c->arena;
    xa_lock_acquire(&a->lock);
    abandon_locked(a, s);
    xa_lock_release(&a->lock);
}

bool xa_arena_slab_keep(xa_chunk *c, xa_slab *s)
{
    /* Big classes are left out: their slabs' free blocks are purged as
     * they go (XA_SLAB_TRIM), which an adopter would pay for again. */
    if (s->block_size >= XA_TRIM_MIN_BLOCK || !__atomic_load_n(&xa_opt.decay_ms, __ATOMIC_RELAXED))
        return false;
    xa_arena *a = c->arena;
    xa_lock_acquire(&a->lock);
    bool keep = a->warm_slabs[s->cls] < XA_WARM_SLABS;
    if (keep) {
        a->warm_slabs[s->cls]++;
        __atomic_store_n(&a->warm_bytes, a->warm_bytes + ((uint64_t)s->units << XA_UNIT_SHIFT),
                         __ATOMIC_RELAXED);
        s->warm = 1;
        s->freed_ns = xa_os_now_ns();
        abandon_locked(a, s);
    }
    xa_lock_release(&a->lock);
    /* The purger must come back for it (as for a freed run): a process
     * whose threads all exited does not call the allocator again. */
    if (keep && !__atomic_load_n(&xa_arena_dirty_pending, __ATOMIC_RELAXED))
        __atomic_store_n(&xa_arena_dirty_pending, true, __ATOMIC_RELAXED);
    return keep;
}

uint32_t xa_slab_collect(xa_slab *s)
{
    uintptr_t old = atomic_load_explicit(&s->thread_free, memory_order_relaxed);
    if (!xa_tf_list(old))
        return 0;
    /* Take the list and its count, keep the state bits. */
    while (!atomic_compare_exchange_weak_explicit(&s->thread_free, &old, old & XA_TF_MASK,
                                                  memory_order_acquire, memory_order_relaxed))
        ;
    uintptr_t head = xa_tf_list(old);
    uint32_t n = xa_tf_count(old);
    /* The owner collects when its own list is empty (its malloc's slow
     * path): the list becomes the slab's as it is, without touching a
     * block. Otherwise (trim, exit) the two lists are joined at the tail. */
    if (s->free) {
        xa_block *tail = (xa_block *)head;
        for (uintptr_t next; (next = tail->next ^ xa_heap_secret) != 0; tail = (xa_block *)next)
            ;
        tail->next = s->free ^ xa_heap_secret;
    }
    s->free = head;
    s->used -= n;
    return n;
}

static void abandoned_unlink(xa_arena *a, xa_slab *s)
{
    if (s->warm) {
        s->warm = 0;
        s->freed_ns = 0;
        a->warm_slabs[s->cls]--;
        __atomic_store_n(&a->warm_bytes, a->warm_bytes - ((uint64_t)s->units << XA_UNIT_SHIFT),
                         __ATOMIC_RELAXED);
    }
    if (s->prev)
        s->prev->next = s->next;
    else
        a->abandoned[s->cls] = s->next;
    if (s->next)
        s->next->prev = s->prev;
    s->next = s->prev = NULL;
}

size_t xa_slab_reclaim_abandoned(xa_arena *a, uint64_t now, uint64_t warm_age_ns)
{
    size_t freed = 0;
    for (unsigned cls = 0; cls < XA_NCLASSES; cls++) {
        for (xa_slab *s = a->abandoned[cls]; s;) {
            xa_slab *next = s->next;
            if (s->warm && now - s->freed_ns < warm_age_ns) {
                s = next; /* (kept for a next thread a while longer) */
                continue;
            }
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
