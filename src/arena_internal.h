/* arena_internal.h: what the arena's own files share. arena_chunk.c,
 * run.c, arena_slab.c, large.c and decay.c include it, nothing else may:
 * the rest of the library, huge.c included, goes through arena.h. Every
 * function here expects the arena's lock held. Short helpers, and the
 * cheap tests each run free makes before calling out, are inline: they
 * were inlined when the arena was one file, and the slow paths of malloc
 * and free run them.
 * Layer: arena. */
#ifndef XA_ARENA_INTERNAL_H
#define XA_ARENA_INTERNAL_H

#include "arena.h"
#include "pages.h"

/* ---- free runs (run.c): bins by length, dirty FIFO ---- */

static inline void xa_bin_remove(xa_arena *a, xa_slab *s)
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

static inline void xa_dirty_append(xa_arena *a, xa_slab *s)
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

static inline void xa_dirty_remove(xa_arena *a, xa_slab *s)
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

static inline void xa_set_first_of(xa_chunk *c, unsigned first, unsigned units)
{
    for (unsigned u = first; u < first + units; u++)
        c->first_of[u] = (uint8_t)first;
}

void xa_bin_insert(xa_arena *a, xa_slab *s);
/* Removes a free run from every index and from the byte counts. */
void xa_free_run_detach(xa_arena *a, xa_slab *s);
/* Makes units units from first a free run with dunits dirty, freed at when. */
void xa_free_run_init(xa_arena *a, xa_chunk *c, unsigned first, unsigned units,
                      unsigned dunits, bool zeroed, uint64_t when);
/* Takes a run of units units; returns its descriptor (kind still FREE). */
xa_slab *xa_run_alloc(xa_arena *a, unsigned units);
/* Gives a run back: coalesces with free neighbours, indexes it as dirty,
 * and purges the oldest dirty runs when the arena holds too many. */
void xa_run_free(xa_arena *a, xa_chunk *c, xa_slab *s);

/* ---- chunks (arena_chunk.c) ---- */

/* Maps a chunk, one free run; NULL when out of memory. */
xa_chunk *xa_chunk_new(xa_arena *a);
/* Unmaps chunk c, whose one run is free. */
void xa_chunk_release(xa_arena *a, xa_chunk *c, unsigned path);
void xa_chunk_density_update(xa_arena *a, xa_chunk *c);
/* c's dense_bytes plus delta, returned. Kept only under the DENSE policy,
 * its one reader (promotion and demotion below): elsewhere it was a
 * locked add on the chunk header for every page of blocks carved and
 * every large block (thread churn: 7-10% of its time). The policy is
 * fixed before the first chunk exists. */
static inline uint64_t xa_chunk_dense_add(xa_chunk *c, uint64_t delta)
{
    if (xa_pages_policy != XA_THP_POLICY_DENSE)
        return 0;
    return __atomic_add_fetch(&c->dense_bytes, delta, __ATOMIC_RELAXED);
}

/* c's dense_bytes changed: under the DENSE policy, promote or demote it. */
static inline void xa_chunk_density_changed(xa_arena *a, xa_chunk *c)
{
    if (xa_pages_policy != XA_THP_POLICY_DENSE)
        return;
    xa_chunk_density_update(a, c);
}

/* ---- slabs (arena_slab.c) ---- */

/* Frees the abandoned slabs whose blocks have all come back (a warm one,
 * kept empty, once it has waited warm_age_ns), and purges the pages of
 * the others that hold free blocks only, once they have had no block
 * back for trim_age_ns (counted on purge path path); returns how many
 * slabs it freed. */
size_t xa_slab_reclaim_abandoned(xa_arena *a, uint64_t now, uint64_t warm_age_ns,
                                 uint64_t trim_age_ns, unsigned path);

/* ---- decay (decay.c) ---- */

/* After a's units in use grew: true while they stay at or below their
 * earlier peak (the program takes again memory it had in use before),
 * false when they set a new peak, which it records (see xa_purge_oldest). */
static inline bool xa_arena_used_grew(xa_arena *a)
{
    if (a->used_units <= a->peak_used_units)
        return true;
    a->peak_used_units = a->used_units;
    return false;
}

void xa_decay_run(xa_arena *a, uint64_t now, bool force, unsigned path);
/* arena.h's xa_arena_dirty_allowance_units, for the test below. */
static inline uint64_t xa_dirty_allowance_units(const xa_arena *a)
{
    uint64_t share = a->used_units / 8;
    return share > XA_DIRTY_FLOOR_UNITS ? share : XA_DIRTY_FLOOR_UNITS;
}
/* Purges the oldest dirty runs down to half of allow. */
void xa_purge_oldest(xa_arena *a, uint64_t allow, uint64_t now);
/* Free-time purge: memory goes back while the program frees, not only
 * after decay_ms. The oldest dirty runs go first; the newest (the ones a
 * program freeing and allocating in a loop takes again) stay. */
static inline void xa_purge_excess(xa_arena *a, uint64_t now)
{
    uint64_t allow = xa_dirty_allowance_units(a);
    if (allow < a->churn_floor_units)
        allow = a->churn_floor_units;
    /* Only when the dirty pool has grown by half the allowance since its
     * lowest point: frees outrunning reuse (a mass free, a shrinking
     * heap). A program freeing and allocating in a loop keeps a level
     * pool that it takes again at once; purging it would cost a madvise
     * and a refault per run (decay takes what stays unused). */
    if (xa_likely(a->dirty_units <= allow || a->dirty_units <= a->dirty_low_units + allow / 2))
        return;
    /* ... and only while frees outrun reuse (a streak of the allowance:
     * big-class slabs come and go a few units at a time, and a dozen of
     * them in a row is chance in a steady program). A pool that wanders
     * while the program frees and allocates alike (a server whose
     * working set changes shape) reaches that height too, but what is
     * purged then is faulted in again within moments, and in a virtual
     * machine a refault can cost tens of microseconds. Decay still
     * returns what stays unused. */
    if (a->free_streak_units < allow)
        return;
    xa_purge_oldest(a, allow, now);
}

#endif /* XA_ARENA_INTERNAL_H */
