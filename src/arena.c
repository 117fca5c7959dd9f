/* arena.c: the arenas themselves: the table, creation on first use, which
 * arena a thread binds to, the lock-free dirty total, fork handlers. Their
 * memory is handled beside it: arena_chunk.c, run.c, arena_slab.c,
 * large.c, decay.c, huge.c. See arena.h.
 * Layer: arena; above numa, meta; below heap. */
#include "arena.h"

#include "meta.h"
#include "numa.h"

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
    for (unsigned tries = 0;; tries++) {
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
        if (!a) {
            a = xa_arena_get(0);
            if (a)
                __atomic_fetch_add(&a->nthreads, 1, __ATOMIC_RELAXED);
            return a;
        }
        /* Counted now, not when the heap is made, and only if the count is
         * still the one the choice saw: threads starting together then
         * spread over arenas instead of several taking the same idle one
         * while others stay empty. A few tries, then any will do. */
        uint32_t seen = best_threads;
        if (tries >= 8) {
            __atomic_fetch_add(&a->nthreads, 1, __ATOMIC_RELAXED);
            return a;
        }
        if (__atomic_compare_exchange_n(&a->nthreads, &seen, seen + 1, false, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED))
            return a;
    }
}

uint64_t xa_arenas_dirty_bytes(void)
{
    uint64_t bytes = 0;
    for (unsigned i = 0; i < xa_narenas; i++) {
        xa_arena *a = __atomic_load_n(&xa_arenas[i], __ATOMIC_ACQUIRE);
        if (a)
            bytes += (__atomic_load_n(&a->dirty_units, __ATOMIC_RELAXED) << XA_UNIT_SHIFT) +
                     __atomic_load_n(&a->huge_cache_bytes, __ATOMIC_RELAXED) +
                     __atomic_load_n(&a->warm_bytes, __ATOMIC_RELAXED);
    }
    return bytes;
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
