/* run.c: the runs of an arena's chunks: free runs indexed for O(1) best fit
 * (one bin per length, dirty runs first) and in the dirty FIFO, taken with
 * splitting and given back with coalescing.
 * Layer: arena; above os. */
#include "arena_internal.h"

#include <string.h>

#include "config.h"
#include "os.h"

/* ---- bins of free runs ---- */

void xa_bin_insert(xa_arena *a, xa_slab *s)
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

void xa_free_run_detach(xa_arena *a, xa_slab *s)
{
    xa_bin_remove(a, s);
    xa_dirty_remove(a, s);
    a->dirty_units -= s->dunits;
    a->retained_units -= s->units - s->dunits;
}

void xa_free_run_init(xa_arena *a, xa_chunk *c, unsigned first, unsigned units,
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
    xa_set_first_of(c, first, units);
    xa_bin_insert(a, s);
    a->dirty_units += dunits;
    a->retained_units += units - dunits;
    if (dunits) {
        xa_dirty_append(a, s);
        if (!__atomic_load_n(&xa_arena_dirty_pending, __ATOMIC_RELAXED))
            __atomic_store_n(&xa_arena_dirty_pending, true, __ATOMIC_RELAXED);
    }
}

/* ---- runs ---- */

xa_slab *xa_run_alloc(xa_arena *a, unsigned units)
{
    uint32_t mask = a->bins_nonempty & ~((1u << units) - 1u);
    if (!mask) {
        if (!xa_chunk_new(a))
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
    xa_free_run_detach(a, s);
    unsigned first = s->first_unit;
    if (n > units)
        /* Dirty units are taken first: the remainder keeps what is left. */
        xa_free_run_init(a, c, first + units, n - units, dunits > units ? dunits - units : 0,
                         zeroed, when);
    memset(s, 0, sizeof *s);
    s->first_unit = (uint8_t)first;
    s->units = (uint8_t)units;
    s->zeroed = zeroed;
    xa_set_first_of(c, first, units);
    c->used_units += units;
    a->used_units += units;
    /* Below an earlier peak, the program takes memory again that it had
     * in use before; above it, it grows, and fresh pages are no sign that
     * a purge was premature (a buffer growing by realloc). */
    bool again = xa_arena_used_grew(a);
    /* (two units of a streak per unit taken: see free_streak_units) */
    a->free_streak_units = a->free_streak_units > 2u * units ? a->free_streak_units - 2u * units : 0;
    if (a->dirty_units < a->dirty_low_units) /* reuse: the pool's low point */
        a->dirty_low_units = a->dirty_units;
    if (a->last_purge_units && units > dunits && again) /* clean units: faulted in anew */
        a->refault_units += units - dunits;
    return s;
}

void xa_run_free(xa_arena *a, xa_chunk *c, xa_slab *s)
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
    xa_chunk_density_changed(a, c);
    a->free_streak_units += units;
    uint64_t now = xa_os_now_ns();
    if (first > 1) {
        xa_slab *left = &c->slabs[c->first_of[first - 1]];
        if (left->kind == XA_RUN_FREE) {
            xa_free_run_detach(a, left);
            units += left->units;
            dunits += left->dunits;
            first = left->first_unit;
            /* s no longer starts a run: free() reads it first for a
             * pointer of its unit, and must find no slab there. */
            memset(s, 0, sizeof *s);
        }
    }
    unsigned end = first + units;
    if (end < XA_UNITS_PER_CHUNK) {
        xa_slab *right = &c->slabs[end];
        if (right->kind == XA_RUN_FREE) {
            xa_free_run_detach(a, right);
            units += right->units;
            dunits += right->dunits;
        }
    }
    xa_free_run_init(a, c, first, units, dunits, false, now);
    if (xa_opt.decay_ms == 0)
        xa_decay_run(a, now, true, XA_PURGE_AT_FREE);
    else
        xa_purge_excess(a, now);
}
