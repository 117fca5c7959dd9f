/* decay.c: when free memory goes back to the OS: at free time above the
 * dirty allowance, after decay_ms (slow paths, the purger thread), or all
 * of it on request.
 * Layer: arena; above pages, os. */
#include "arena_internal.h"

#include "config.h"
#include "os.h"
#include "pages.h"

static size_t purge_free_run(xa_arena *a, xa_slab *s, unsigned path)
{
    xa_chunk *c = xa_chunk_of(s);
    size_t bytes = (size_t)s->units << XA_UNIT_SHIFT;
    if (c->used_units == 0) {
        xa_chunk_release(a, c, path);
        return bytes;
    }
    if (c->huge_advised && !a->purge_split) {
        /* Purging part of a huge page would split it: only whole chunks go
         * back under thp:always. The run stays dirty, out of the FIFO,
         * until its chunk empties (then it is queued again). */
        xa_dirty_remove(a, s);
        return 0;
    }
    xa_bin_remove(a, s);
    xa_dirty_remove(a, s);
    bool zero = xa_pages_purge(xa_unit_addr(c, s->first_unit), bytes);
    a->dirty_units -= s->dunits;
    a->retained_units += s->dunits;
    if (a->dirty_units < a->dirty_low_units)
        a->dirty_low_units = a->dirty_units;
    bytes = (size_t)s->dunits << XA_UNIT_SHIFT;
    s->dunits = 0;
    s->dirty = 0;
    s->zeroed = zero;
    xa_arena_count_purged(a, path, bytes, 1);
    xa_bin_insert(a, s);
    return bytes;
}

uint64_t xa_arena_dirty_allowance_units(const xa_arena *a)
{
    return xa_dirty_allowance_units(a);
}

/* The free-time purge, past its test (xa_purge_excess). */
void xa_purge_oldest(xa_arena *a, uint64_t allow, uint64_t now)
{
    /* A pool that swings wider than the allowance looks the same as frees
     * outrunning reuse, so the purge learns from its own effect: when at
     * least half of what it gave back last time was taken again (clean
     * units handed out since, below an earlier peak: see run.c), that
     * purge only cost a madvise and the page faults. The floor then rises
     * by what was faulted in again (at least it doubles), up to twice the
     * most units the arena had in use since the floor last halved, or
     * twice the base floor where that is more. The peak, not the units in
     * use at the purge: threads that come and go each dump their whole
     * heap at exit for the next one to fault in again, and at that moment
     * little is in use; twice the peak, because the dump comes on top of
     * what the pool held already. The floor halves back (and the peak
     * starts over) only after a purge whose pages stayed purged for
     * decay_ms: the purges of one shrinking phase follow each other within
     * milliseconds, and a program that shrinks and grows again in cycles
     * (sqlite3 freeing and refilling its caches) would otherwise unlearn
     * it before every regrowth. A mass free, with no allocation between
     * its purges, keeps the base allowance; decay still returns what the
     * floor keeps once it goes unused, and a fresh huge mapping makes the
     * arena forget it (xa_decay_forget_churn). */
    /* Down to half the allowance, so one purge covers many frees; but
     * never below a learnt floor: those pages would fault in again. */
    uint64_t target = allow / 2;
    if (target < a->churn_floor_units)
        target = a->churn_floor_units;
    if (a->last_purge_units) {
        uint64_t cap = 2 * a->peak_used_units;
        if (cap < 2 * XA_DIRTY_FLOOR_UNITS)
            cap = 2 * XA_DIRTY_FLOOR_UNITS;
        if (a->refault_units * 2 >= a->last_purge_units) {
            uint64_t want = allow + a->refault_units > allow * 2 ? allow + a->refault_units
                                                                 : allow * 2;
            uint64_t floor = want < cap ? want : cap;
            if (floor > a->churn_floor_units) {
                /* (atomic: heaps read it for their own trims, unlocked) */
                __atomic_store_n(&a->churn_floor_units, floor, __ATOMIC_RELAXED);
                a->last_purge_units = 0;
                a->refault_units = 0;
                if (a->dirty_units <= floor)
                    return;
                /* Only the excess over what was just learnt: halving it
                 * would have the next round fault in again what the
                 * floor was raised for. */
                target = floor;
            }
        } else if (now - a->last_purge_ns >= (uint64_t)xa_opt.decay_ms * 1000000u) {
            __atomic_store_n(&a->churn_floor_units, a->churn_floor_units / 2, __ATOMIC_RELAXED);
            a->peak_used_units = a->used_units;
        }
    }
    uint64_t purged = 0;
    for (xa_slab *s = a->dirty_head; s && a->dirty_units > target;) {
        xa_slab *next = s->dnext;
        purged += purge_free_run(a, s, XA_PURGE_AT_FREE);
        s = next;
    }
    /* Pages given back (a run of a huge-page chunk only leaves the FIFO). */
    a->last_purge_units = purged >> XA_UNIT_SHIFT;
    a->last_purge_ns = now;
    a->refault_units = 0;
    a->dirty_low_units = a->dirty_units;
}

void xa_decay_forget_churn(xa_arena *a, uint64_t now)
{
    if (!a->churn_floor_units)
        return; /* nothing learnt: what a purge taught so far still counts */
    /* The program maps fresh memory for huge blocks while the arena keeps
     * free runs for a churn it learnt: what it needs now is not what the
     * floor keeps (a buffer that outgrew the runs it once used). Learning
     * starts over from the base allowance, and the excess goes back. */
    __atomic_store_n(&a->churn_floor_units, 0, __ATOMIC_RELAXED);
    a->last_purge_units = 0;
    a->refault_units = 0;
    a->peak_used_units = a->used_units;
    uint64_t allow = xa_dirty_allowance_units(a);
    if (a->dirty_units > allow)
        xa_purge_oldest(a, allow, now);
}

void xa_decay_run(xa_arena *a, uint64_t now, bool force, unsigned path)
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
    /* Slabs kept warm for a next thread: freed when none came for a decay
     * step (their runs then wait decay_ms like any freed run). */
    uint64_t decay_ns = (uint64_t)xa_opt.decay_ms * 1000000u;
    xa_slab_reclaim_abandoned(a, now, decay_ns / 4 > 1000000u ? decay_ns / 4 : 1000000u, decay_ns,
                              path);
    xa_decay_run(a, now, false, path);
    xa_lock_release(&a->lock);
}

size_t xa_arena_purge_all(xa_arena *a)
{
    xa_lock_acquire(&a->lock);
    uint64_t before = __atomic_load_n(&a->purged_bytes, __ATOMIC_RELAXED);
    uint64_t now = xa_os_now_ns();
    xa_slab_reclaim_abandoned(a, now, 0, 0, XA_PURGE_TRIM);
    /* Forced purge also takes clean-but-never-queued dirty runs of
     * thp:always chunks: the operator asked for memory back now. */
    for (unsigned n = 1; n < XA_UNITS_PER_CHUNK; n++) {
        for (xa_slab *s = a->bin_head[n]; s;) {
            xa_slab *next = s->next;
            if (s->dirty && !s->in_dirty_list)
                xa_dirty_append(a, s);
            s = next;
        }
    }
    /* Even huge chunks give their free runs back now: the operator asked,
     * and a split huge page is the price. */
    a->purge_split = true;
    xa_decay_run(a, now, true, XA_PURGE_TRIM);
    a->purge_split = false;
    size_t purged = (size_t)(__atomic_load_n(&a->purged_bytes, __ATOMIC_RELAXED) - before);
    xa_lock_release(&a->lock);
    return purged;
}
