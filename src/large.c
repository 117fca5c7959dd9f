/* large.c: large blocks, one run each (up to 31 units): allocation, free
 * and resizing in place. Huge blocks are in huge.c.
 * Layer: arena. */
#include "arena_internal.h"

#include <string.h>

void *xa_arena_large_alloc(xa_arena *a, size_t size, bool zero)
{
    unsigned units = (unsigned)((size + XA_UNIT_SIZE - 1) >> XA_UNIT_SHIFT);
    xa_lock_acquire(&a->lock);
    xa_slab *s = xa_run_alloc(a, units);
    if (s) {
        s->kind = XA_RUN_LARGE;
        s->large_size = size;
        __atomic_fetch_add(&a->requested_big, size, __ATOMIC_RELAXED);
        a->large_count++;
        a->large_bytes += (uint64_t)units << XA_UNIT_SHIFT;
        xa_chunk *c = xa_chunk_of(s);
        xa_chunk_dense_add(c, (uint64_t)units << XA_UNIT_SHIFT);
        xa_chunk_density_changed(a, c);
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
    xa_chunk_dense_add(c, (uint64_t)0 - ((uint64_t)s->units << XA_UNIT_SHIFT));
    __atomic_fetch_sub(&a->requested_big, s->large_size, __ATOMIC_RELAXED);
    s->kind = XA_RUN_FREE;
    xa_run_free(a, c, s);
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
        xa_chunk_dense_add(c, (uint64_t)0 - ((uint64_t)(have - want) << XA_UNIT_SHIFT));
        xa_slab *tail = &c->slabs[first + want];
        memset(tail, 0, sizeof *tail);
        tail->first_unit = (uint8_t)(first + want);
        tail->units = (uint8_t)(have - want);
        xa_set_first_of(c, first + want, have - want);
        xa_run_free(a, c, tail);
        ok = true;
    } else if (first + want <= XA_UNITS_PER_CHUNK && first + have < XA_UNITS_PER_CHUNK) {
        xa_slab *right = &c->slabs[first + have];
        if (right->kind == XA_RUN_FREE && have + right->units >= want) {
            unsigned rfirst = right->first_unit, runits = right->units;
            unsigned rdunits = right->dunits;
            bool rzero = right->zeroed;
            uint64_t when = right->freed_ns;
            xa_free_run_detach(a, right);
            unsigned take = want - have;
            if (runits > take)
                xa_free_run_init(a, c, rfirst + take, runits - take,
                                 rdunits > take ? rdunits - take : 0, rzero, when);
            xa_set_first_of(c, first, want);
            s->units = (uint8_t)want;
            c->used_units += take;
            a->used_units += take;
            xa_arena_used_grew(a);
            a->large_bytes += (uint64_t)take << XA_UNIT_SHIFT;
            xa_chunk_dense_add(c, (uint64_t)take << XA_UNIT_SHIFT);
            xa_chunk_density_changed(a, c);
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
