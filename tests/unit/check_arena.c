/* check_arena.c: unit tests of the arena layer (src/arena*.c, run.c,
 * large.c, decay.c, huge.c): large extents with best fit, coalescing and
 * in-place resize, huge blocks with mremap, decay and purge, statistics
 * of runs. Uses the internal test build. */
#include <check.h>

#include "unit/unit_main.h"
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "chunkmap.h"
#include "config.h"
#include "init.h"
#include "os.h"
#include "sizeclass.h"

static xa_arena *arena(void)
{
    ck_assert(xa_init_process());
    xa_arena *a = xa_arena_get(0);
    ck_assert_ptr_nonnull(a);
    return a;
}

static xa_slab *slab_of(void *p)
{
    xa_chunk *c = xa_chunkmap_lookup(p);
    ck_assert_ptr_nonnull(c);
    return xa_run_of(c, p);
}

START_TEST(large_blocks_are_unit_aligned_and_disjoint)
{
    xa_arena *a = arena();
    enum { N = 64 };
    char *p[N];
    for (int i = 0; i < N; i++) {
        size_t size = (size_t)(i % 7 + 1) * 100000;
        p[i] = xa_arena_large_alloc(a, size, true);
        ck_assert_ptr_nonnull(p[i]);
        ck_assert_uint_eq((uintptr_t)p[i] % XA_UNIT_SIZE, 0);
        for (size_t k = 0; k < size; k += 4096)
            ck_assert_int_eq(p[i][k], 0);
        memset(p[i], i, size);
        xa_slab *s = slab_of(p[i]);
        ck_assert_int_eq(s->kind, XA_RUN_LARGE);
        ck_assert_uint_ge((size_t)s->units << XA_UNIT_SHIFT, size);
    }
    for (int i = 0; i < N; i++) {
        size_t size = (size_t)(i % 7 + 1) * 100000;
        for (size_t k = 0; k < size; k += 512)
            ck_assert_int_eq((unsigned char)p[i][k], i);
        xa_chunk *c = xa_chunkmap_lookup(p[i]);
        xa_arena_large_free(c, slab_of(p[i]));
    }
}
END_TEST

START_TEST(free_runs_coalesce_into_whole_chunks)
{
    xa_arena *a = arena();
    /* Fill one chunk exactly with 31 one-unit blocks, free them in an
     * interleaved order: the chunk must end up as one free run. */
    void *p[XA_LARGE_MAX_UNITS];
    p[0] = xa_arena_large_alloc(a, XA_LARGE_MAX, false);
    xa_chunk *c = xa_chunkmap_lookup(p[0]);
    xa_arena_large_free(c, slab_of(p[0]));
    for (int i = 0; i < (int)XA_LARGE_MAX_UNITS; i++) {
        p[i] = xa_arena_large_alloc(a, XA_UNIT_SIZE, false);
        ck_assert_ptr_eq(xa_chunkmap_lookup(p[i]), c);
    }
    ck_assert_uint_eq(c->used_units, XA_LARGE_MAX_UNITS);
    for (int i = 0; i < (int)XA_LARGE_MAX_UNITS; i += 2)
        xa_arena_large_free(c, slab_of(p[i]));
    for (int i = 1; i < (int)XA_LARGE_MAX_UNITS; i += 2)
        xa_arena_large_free(c, slab_of(p[i]));
    ck_assert_uint_eq(c->used_units, 0);
    ck_assert_int_eq(c->slabs[1].kind, XA_RUN_FREE);
    ck_assert_uint_eq(c->slabs[1].units, XA_LARGE_MAX_UNITS);
    for (unsigned u = 1; u < XA_UNITS_PER_CHUNK; u++)
        ck_assert_uint_eq(c->first_of[u], 1); /* the run starting at unit 1 */
}
END_TEST

START_TEST(best_fit_prefers_the_smallest_run)
{
    xa_arena *a = arena();
    /* Make a 3-unit hole and a 10-unit hole; a 2-unit request must take
     * the 3-unit hole. */
    void *big = xa_arena_large_alloc(a, XA_LARGE_MAX, false);
    xa_chunk *c = xa_chunkmap_lookup(big);
    xa_arena_large_free(c, slab_of(big));
    void *b1 = xa_arena_large_alloc(a, 3 * XA_UNIT_SIZE, false);
    void *sep1 = xa_arena_large_alloc(a, XA_UNIT_SIZE, false);
    void *b2 = xa_arena_large_alloc(a, 10 * XA_UNIT_SIZE, false);
    void *sep2 = xa_arena_large_alloc(a, 17 * XA_UNIT_SIZE, false);
    ck_assert_ptr_eq(xa_chunkmap_lookup(sep2), c);
    xa_arena_large_free(c, slab_of(b1));
    xa_arena_large_free(c, slab_of(b2));
    void *q = xa_arena_large_alloc(a, 2 * XA_UNIT_SIZE, false);
    ck_assert_ptr_eq(q, b1);
    xa_arena_large_free(c, slab_of(q));
    xa_arena_large_free(c, slab_of(sep1));
    xa_arena_large_free(c, slab_of(sep2));
}
END_TEST

/* free() takes the descriptor of a pointer's unit as its first guess: a
 * slab whose run merges into a free run on its left stops starting a run,
 * and its old descriptor must then describe nothing (a stale pointer into
 * it fails the fast path's block test and is sorted out by the slow path,
 * which reports it). */
START_TEST(slab_merged_into_left_run_leaves_no_descriptor)
{
    xa_arena *a = arena();
    void *big = xa_arena_large_alloc(a, XA_LARGE_MAX, false);
    xa_chunk *c = xa_chunkmap_lookup(big);
    xa_arena_large_free(c, slab_of(big));
    void *left = xa_arena_large_alloc(a, XA_UNIT_SIZE, false);
    ck_assert_ptr_eq(left, xa_unit_addr(c, 1));
    unsigned cls = xa_size_class(10240);
    ck_assert_uint_eq(xa_classes[cls].units, 2);
    xa_slab *s = xa_arena_slab_new(a, cls, NULL);
    ck_assert_ptr_eq(s, &c->slabs[2]);
    void *rest = xa_arena_large_alloc(a, (XA_LARGE_MAX_UNITS - 3) * XA_UNIT_SIZE, false);
    ck_assert_ptr_eq(rest, xa_unit_addr(c, 4));
    /* The slab's second unit has a descriptor of no run from the start. */
    char *second = (char *)xa_unit_addr(c, 2) + 7 * 10240; /* block 7: in unit 3 */
    ck_assert_ptr_ne(xa_unit_desc(c, second), s);
    ck_assert_uint_eq(xa_unit_desc(c, second)->div_magic, 0);
    xa_arena_large_free(c, slab_of(left));
    xa_arena_slab_free(c, s); /* merges into the free unit 1 */
    ck_assert_uint_eq(c->first_of[2], 1);
    ck_assert_uint_eq(c->slabs[2].div_magic, 0);
    ck_assert_ptr_null(c->slabs[2].heap);
    ck_assert_uint_eq(c->slabs[2].kind, XA_RUN_FREE);
    xa_arena_large_free(c, slab_of(rest));
}
END_TEST

START_TEST(large_resize_in_place)
{
    xa_arena *a = arena();
    char *p = xa_arena_large_alloc(a, 4 * XA_UNIT_SIZE, false);
    xa_chunk *c = xa_chunkmap_lookup(p);
    memset(p, 7, 4 * XA_UNIT_SIZE);
    xa_slab *s = slab_of(p);
    ck_assert(xa_arena_large_resize(c, s, 2 * XA_UNIT_SIZE));
    ck_assert_uint_eq(s->units, 2);
    /* The freed tail is free again, so growing back fits in place. */
    ck_assert(xa_arena_large_resize(c, s, 6 * XA_UNIT_SIZE));
    ck_assert_uint_eq(s->units, 6);
    for (size_t k = 0; k < 2 * XA_UNIT_SIZE; k++)
        ck_assert_int_eq(p[k], 7);
    xa_arena_large_free(c, s);
}
END_TEST

START_TEST(huge_blocks_map_grow_and_unmap)
{
    xa_arena *a = arena();
    size_t size = 5u << 20;
    char *p = xa_huge_alloc(a, size, 0, true);
    ck_assert_ptr_nonnull(p);
    xa_chunk *c = xa_chunkmap_lookup(p);
    ck_assert_ptr_nonnull(c);
    ck_assert_ptr_eq(xa_chunkmap_lookup(p + size - 1), c);
    ck_assert_int_eq(c->slabs[0].kind, XA_RUN_HUGE);
    ck_assert_uint_ge(c->huge_size, size);
    /* The block starts on the header's page (one resident page less per
     * block), past the two descriptors a huge chunk uses. */
    ck_assert_uint_eq((uintptr_t)(p - (char *)c), XA_HUGE_HEADER);
    ck_assert_uint_ge(XA_HUGE_HEADER, 2 * sizeof(xa_slab));
    ck_assert_uint_eq((uintptr_t)p % 64, 0);
    memset(p, 3, size);
    char *q = xa_huge_realloc(c, 40u << 20);
    ck_assert_ptr_nonnull(q);
    /* Grown by mremap: the header moved with the pages, same offset. */
    ck_assert_uint_eq((uintptr_t)q % XA_CHUNK_SIZE, XA_HUGE_HEADER);
    for (size_t k = 0; k < size; k += 4096)
        ck_assert_int_eq(q[k], 3);
    xa_chunk *c2 = xa_chunkmap_lookup(q);
    ck_assert_ptr_eq(xa_chunkmap_lookup(q + (40u << 20) - 1), c2);
    xa_huge_free(c2);
    /* Aligned huge block: the pointer honours the alignment. */
    char *al = xa_huge_alloc(a, 3u << 20, 4u << 20, false);
    ck_assert_ptr_nonnull(al);
    ck_assert_uint_eq((uintptr_t)al % (4u << 20), 0);
    xa_huge_free(xa_chunkmap_lookup(al));
}
END_TEST

START_TEST(purge_returns_free_chunks)
{
    xa_arena *a = arena();
    void *p[8];
    for (int i = 0; i < 8; i++)
        p[i] = xa_arena_large_alloc(a, XA_LARGE_MAX, false);
    uint64_t chunks = a->nchunks;
    ck_assert_uint_ge(chunks, 8);
    uint64_t before = a->purged_bytes;
    for (int i = 0; i < 8; i++)
        xa_arena_large_free(xa_chunkmap_lookup(p[i]), slab_of(p[i]));
    /* Frees purge above the allowance themselves; the rest goes now. */
    xa_arena_purge_all(a);
    ck_assert_uint_ge(a->purged_bytes - before, 8 * XA_LARGE_MAX);
    ck_assert_uint_eq(a->dirty_units, 0);
    ck_assert_uint_lt(a->nchunks, chunks);
}
END_TEST

/* A mass free does not wait for decay_ms: above the dirty allowance the
 * oldest dirty runs are purged by the frees themselves. */
START_TEST(free_purges_above_allowance)
{
    xa_arena *a = arena();
    enum { N = 24 };
    void *p[N];
    for (int i = 0; i < N; i++)
        p[i] = xa_arena_large_alloc(a, XA_LARGE_MAX, false);
    for (int i = 0; i < N; i++)
        memset(p[i], 1, XA_LARGE_MAX);
    uint64_t at_free = a->purged_by[XA_PURGE_AT_FREE];
    for (int i = 0; i < N; i++)
        xa_arena_large_free(xa_chunkmap_lookup(p[i]), slab_of(p[i]));
    ck_assert_uint_le(a->dirty_units, XA_DIRTY_FLOOR_UNITS + a->used_units / 8);
    ck_assert_uint_ge(a->purged_by[XA_PURGE_AT_FREE] - at_free,
                      (uint64_t)(N * XA_LARGE_MAX) - ((uint64_t)XA_DIRTY_FLOOR_UNITS << XA_UNIT_SHIFT));
}
END_TEST

/* A pool of free runs that grows while the program takes as much memory as
 * it frees (a server whose working set changes shape: its new blocks do
 * not fit the holes its old ones leave) is not purged at free, whatever
 * its height: those pages would be faulted in again. The same frees with
 * no allocation between them (a mass free) are. */
START_TEST(pool_grown_while_allocations_keep_pace_is_not_purged_at_free)
{
    xa_arena *a = arena();
    enum { CHUNKS = 16, OLD = 8, NEW = 12 }; /* units: three OLD blocks a chunk */
    ck_assert_uint_eq(XA_LARGE_MAX_UNITS / OLD, 3);
    ck_assert_uint_gt(NEW, XA_LARGE_MAX_UNITS - 3 * OLD); /* NEW fits no tail */
    void *old[CHUNKS][3], *fresh[CHUNKS];
    for (int c = 0; c < CHUNKS; c++)
        for (int i = 0; i < 3; i++) {
            ck_assert_ptr_nonnull(old[c][i] = xa_arena_large_alloc(a, (size_t)OLD * XA_UNIT_SIZE,
                                                                     false));
            memset(old[c][i], 1, (size_t)OLD * XA_UNIT_SIZE);
        }
    uint64_t before = a->purged_by[XA_PURGE_AT_FREE];
    /* Each middle block freed is a hole between two live ones, too small
     * for the NEW block allocated next, which comes from fresh pages. */
    for (int c = 0; c < CHUNKS; c++) {
        xa_arena_large_free(xa_chunkmap_lookup(old[c][1]), slab_of(old[c][1]));
        ck_assert_ptr_nonnull(fresh[c] = xa_arena_large_alloc(a, (size_t)NEW * XA_UNIT_SIZE, false));
        memset(fresh[c], 2, (size_t)NEW * XA_UNIT_SIZE);
    }
    /* The frees never outran the allocations: no purge, though the pool
     * grew past the allowance by more than half of it (which alone once
     * triggered one). */
    ck_assert_uint_eq(a->purged_by[XA_PURGE_AT_FREE], before);
    ck_assert_uint_gt(a->dirty_units, xa_arena_dirty_allowance_units(a) + XA_DIRTY_FLOOR_UNITS / 2);
    for (int c = 0; c < CHUNKS; c++) {
        xa_arena_large_free(xa_chunkmap_lookup(old[c][0]), slab_of(old[c][0]));
        xa_arena_large_free(xa_chunkmap_lookup(old[c][2]), slab_of(old[c][2]));
        xa_arena_large_free(xa_chunkmap_lookup(fresh[c]), slab_of(fresh[c]));
    }
    ck_assert_uint_gt(a->purged_by[XA_PURGE_AT_FREE], before);
    ck_assert_uint_le(a->dirty_units, XA_DIRTY_FLOOR_UNITS + a->used_units / 8);
}
END_TEST

/* The learnt floor's ceiling: twice the most units in use since the floor
 * last halved, at least twice the base floor. */
static uint64_t floor_ceiling(const xa_arena *a)
{
    uint64_t c = 2 * a->peak_used_units;
    return c > 2 * XA_DIRTY_FLOOR_UNITS ? c : 2 * XA_DIRTY_FLOOR_UNITS;
}

/* Eight rounds of swing large blocks allocated, written and freed again,
 * then what every churn must show: the first round purged at free, the
 * floor rose above the base allowance (not above its ceiling), and from
 * the third round on nothing was purged: the second round's refaults
 * teach the floor, and its purge takes only what lies above the floor
 * learnt (halving it would have the next round fault in again). */
static void swing_rounds(xa_arena *a, int swing)
{
    enum { ROUNDS = 8, SWING_MAX = 8 };
    ck_assert_int_le(swing, SWING_MAX);
    void *p[SWING_MAX];
    uint64_t purged_in_round[ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
        for (int i = 0; i < swing; i++) {
            ck_assert_ptr_nonnull(p[i] = xa_arena_large_alloc(a, XA_LARGE_MAX, false));
            memset(p[i], r, XA_LARGE_MAX);
        }
        uint64_t before = a->purged_by[XA_PURGE_AT_FREE];
        for (int i = 0; i < swing; i++)
            xa_arena_large_free(xa_chunkmap_lookup(p[i]), slab_of(p[i]));
        purged_in_round[r] = a->purged_by[XA_PURGE_AT_FREE] - before;
    }
    ck_assert_uint_gt(purged_in_round[0], 0);
    ck_assert_uint_gt(a->churn_floor_units, XA_DIRTY_FLOOR_UNITS);
    ck_assert_uint_le(a->churn_floor_units, floor_ceiling(a));
    for (int r = 2; r < ROUNDS; r++)
        ck_assert_msg(purged_in_round[r] == 0, "round %d purged %llu bytes at free", r,
                      (unsigned long long)purged_in_round[r]);
}

/* A program whose free pool swings wider than the allowance, taking its
 * runs again after each swing: the first purges are faulted back in, so
 * the free-time purge raises its floor and stops purging what the next
 * round takes again (decay still returns what stays unused). */
START_TEST(churn_wider_than_the_allowance_stops_free_time_purges)
{
    xa_arena *a = arena();
    enum { BASE = 16, SWING = 4 };
    void *base[BASE];
    for (int i = 0; i < BASE; i++)
        ck_assert_ptr_nonnull(base[i] = xa_arena_large_alloc(a, XA_LARGE_MAX, false));
    swing_rounds(a, SWING);
    /* The swing (4 x 31 units) is above the base allowance: it purged. */
    ck_assert_uint_gt(SWING * XA_LARGE_MAX_UNITS, XA_DIRTY_FLOOR_UNITS);
    /* A mass free with no allocation between its purges still purges at
     * once, down to the floor learnt. */
    uint64_t before = a->purged_by[XA_PURGE_AT_FREE];
    uint64_t learnt = a->churn_floor_units;
    for (int i = 0; i < BASE; i++)
        xa_arena_large_free(xa_chunkmap_lookup(base[i]), slab_of(base[i]));
    ck_assert_uint_gt(a->purged_by[XA_PURGE_AT_FREE], before);
    ck_assert_uint_le(a->dirty_units, a->churn_floor_units + XA_LARGE_MAX_UNITS);
    /* The purges of one shrinking phase, milliseconds apart, do not
     * unlearn the floor: only a purge that stays purged for decay_ms
     * halves it (a program that shrinks and grows again in cycles). */
    ck_assert_uint_ge(xa_opt.decay_ms, 100);
    ck_assert_uint_eq(a->churn_floor_units, learnt);
}
END_TEST

/* Once a floor is learnt, a free-time purge takes only what lies above
 * it: halving it, as a purge with nothing learnt does (one purge for many
 * frees), would have the next round fault in again what the floor was
 * learnt for. */
START_TEST(purge_stops_at_the_learnt_floor)
{
    xa_arena *a = arena();
    enum { N = 10, FLOOR_BLOCKS = 5 };
    void *p[N];
    for (int i = 0; i < N; i++) {
        ck_assert_ptr_nonnull(p[i] = xa_arena_large_alloc(a, XA_LARGE_MAX, false));
        memset(p[i], 1, XA_LARGE_MAX);
    }
    uint64_t floor = FLOOR_BLOCKS * XA_LARGE_MAX_UNITS;
    ck_assert_uint_gt(floor, 2 * XA_DIRTY_FLOOR_UNITS);
    xa_lock_acquire(&a->lock);
    a->churn_floor_units = floor;
    xa_lock_release(&a->lock);
    uint64_t before = a->purged_by[XA_PURGE_AT_FREE];
    for (int i = 0; i < N; i++)
        xa_arena_large_free(xa_chunkmap_lookup(p[i]), slab_of(p[i]));
    ck_assert_uint_gt(a->purged_by[XA_PURGE_AT_FREE], before); /* above the floor: purged */
    ck_assert_uint_ge(a->dirty_units, floor - XA_LARGE_MAX_UNITS);
    /* (frees purge again once the pool grew by half the allowance) */
    ck_assert_uint_le(a->dirty_units, floor + floor / 2 + XA_LARGE_MAX_UNITS);
}
END_TEST

/* A small heap that is dumped whole and taken again: a thread that
 * exits with all its memory free, and the next one that builds the same
 * heap again. Little is in use between rounds (one large block), so an
 * allowance learnt as a share of the units in use alone could never rise
 * above the base floor; its ceiling is at least twice the base floor, and
 * the purges stop. */
START_TEST(small_heap_dumped_and_retaken_stops_free_time_purges)
{
    xa_arena *a = arena();
    enum { SWING = 3 };
    void *keep = xa_arena_large_alloc(a, XA_LARGE_MAX, false);
    ck_assert_ptr_nonnull(keep);
    swing_rounds(a, SWING);
    /* The dump (3 x 31 units) is above the base floor, the heap in use
     * between rounds (31 units) far below it. */
    ck_assert_uint_gt(SWING * XA_LARGE_MAX_UNITS, XA_DIRTY_FLOOR_UNITS);
    ck_assert_uint_lt(2 * XA_LARGE_MAX_UNITS, XA_DIRTY_FLOOR_UNITS);
    xa_arena_large_free(xa_chunkmap_lookup(keep), slab_of(keep));
}
END_TEST

/* A big heap dumped whole and taken again: threads that each build a heap
 * larger than twice the base floor and free all of it before they exit.
 * At each purge almost nothing is in use, so a ceiling taken from the
 * units in use then (or a fixed one) keeps the floor below the dump, and
 * every round purges part of it for the next to fault in again; the
 * ceiling follows the peak, and the floor rises by what was faulted in
 * again, so the purges stop within a few rounds. */
START_TEST(big_heap_dumped_and_retaken_stops_free_time_purges)
{
    xa_arena *a = arena();
    enum { SWING = 8 };
    swing_rounds(a, SWING);
    /* The dump (8 x 31 units) is above the old fixed ceiling. */
    ck_assert_uint_gt(SWING * XA_LARGE_MAX_UNITS, 2 * XA_DIRTY_FLOOR_UNITS);
    ck_assert_uint_ge(a->churn_floor_units, SWING * XA_LARGE_MAX_UNITS);
    ck_assert_uint_eq(a->used_units, 0);
}
END_TEST

/* What the floor keeps is for the churn it learnt: when the program maps
 * fresh memory for a huge block instead (a buffer that outgrew its runs),
 * the arena forgets the floor and keeps no more than the base allowance. */
START_TEST(fresh_huge_mapping_forgets_the_learnt_floor)
{
    xa_arena *a = arena();
    swing_rounds(a, 8);
    void *p[6];
    for (int i = 0; i < 6; i++)
        ck_assert_ptr_nonnull(p[i] = xa_arena_large_alloc(a, XA_LARGE_MAX, false));
    for (int i = 0; i < 6; i++)
        xa_arena_large_free(xa_chunkmap_lookup(p[i]), slab_of(p[i]));
    ck_assert_uint_gt(a->dirty_units, xa_arena_dirty_allowance_units(a));
    char *h = xa_huge_alloc(a, 8u << 20, 0, false);
    ck_assert_ptr_nonnull(h);
    ck_assert_uint_eq(a->churn_floor_units, 0);
    ck_assert_uint_le(a->dirty_units, xa_arena_dirty_allowance_units(a));
    xa_huge_free(xa_chunkmap_lookup(h));
}
END_TEST

/* A huge buffer a program builds again each round (a JSON text) is no
 * sign that the runs' churn is over: mapped again at the size the cache
 * gave up within decay_ms, it leaves the learnt floor alone, while the
 * program's live runs are as big as the dirty ones. */
static void huge_round_after_swings(bool keep_live)
{
    xa_arena *a = arena();
    enum { LIVE = 16 };
    void *live[LIVE];
    for (int i = 0; keep_live && i < LIVE; i++)
        ck_assert_ptr_nonnull(live[i] = xa_arena_large_alloc(a, XA_LARGE_MAX, false));
    size_t size = 6u << 20;
    char *h = xa_huge_alloc(a, size, 0, false);
    ck_assert_ptr_nonnull(h);
    xa_huge_free(xa_chunkmap_lookup(h));
    ck_assert_uint_eq(a->huge_cache_count, 0); /* above the allowance: unmapped */
    swing_rounds(a, 8);
    uint64_t learnt = a->churn_floor_units;
    ck_assert_uint_gt(learnt, XA_DIRTY_FLOOR_UNITS);
    ck_assert_ptr_nonnull(h = xa_huge_alloc(a, size, 0, false));
    if (keep_live) {
        ck_assert_uint_eq(a->churn_floor_units, learnt);
    } else {
        /* Every run freed and the dirty ones far bigger than the buffer:
         * the program moved from runs to mappings (limitprobe's churn in a
         * memory cgroup). Kept, the runs' pages would add to the fresh
         * mapping's; the floor goes, and the excess with it. */
        ck_assert_uint_eq(a->used_units, 0);
        ck_assert_uint_eq(a->churn_floor_units, 0);
        ck_assert_uint_le(a->dirty_units, xa_arena_dirty_allowance_units(a));
    }
    xa_huge_free(xa_chunkmap_lookup(h));
    for (int i = 0; keep_live && i < LIVE; i++)
        xa_arena_large_free(xa_chunkmap_lookup(live[i]), slab_of(live[i]));
}

START_TEST(huge_buffer_of_a_round_keeps_the_learnt_floor)
{
    huge_round_after_swings(true);
}
END_TEST

START_TEST(huge_buffer_after_all_runs_freed_forgets_the_floor)
{
    huge_round_after_swings(false);
}
END_TEST

/* A huge buffer the cache gave up at free and the program mapped again
 * soon after: the cache learns to keep two of its size beyond the dirty
 * allowance, reuses a kept mapping a little too small by growing it (its
 * pages come along), and forgets the keep once one goes unused. */
START_TEST(huge_buffer_mapped_again_is_kept_next_time)
{
    xa_arena *a = arena();
    size_t size = 6u << 20;
    ck_assert_uint_gt(size, xa_arena_dirty_allowance_units(a) << XA_UNIT_SHIFT);
    char *p = xa_huge_alloc(a, size, 0, false);
    ck_assert_ptr_nonnull(p);
    xa_huge_free(xa_chunkmap_lookup(p));
    ck_assert_uint_eq(a->huge_cache_count, 0); /* above the allowance: unmapped */
    ck_assert_uint_eq(a->huge_keep_bytes, 0);
    /* Mapped again, a little bigger: the keep is learnt. */
    p = xa_huge_alloc(a, size + (100u << 10), 0, false);
    ck_assert_ptr_nonnull(p);
    ck_assert_uint_ge(a->huge_keep_bytes, 2 * (size + (100u << 10)));
    memset(p, 0x5a, size);
    xa_huge_free(xa_chunkmap_lookup(p));
    ck_assert_uint_eq(a->huge_cache_count, 1);
    uint64_t mapped = a->huge_mapped, cached_map = a->huge_cache->map_size;
    /* Bigger again, by less than a quarter: the kept mapping grows. */
    size_t big = size + (size / 8);
    char *q = xa_huge_alloc(a, big, 0, false);
    ck_assert_ptr_nonnull(q);
    ck_assert_uint_eq(a->huge_cache_count, 0);
    for (size_t k = 0; k < size; k += 4096)
        ck_assert_int_eq(q[k], 0x5a); /* the same pages, not fresh ones */
    memset(q, 1, big);
    xa_chunk *c = xa_chunkmap_lookup(q);
    ck_assert_ptr_nonnull(c);
    ck_assert_ptr_eq(xa_chunkmap_lookup(q + big - 1), c);
    ck_assert_uint_ge(c->huge_size, big);
    ck_assert_uint_eq(a->huge_mapped, mapped - cached_map + c->map_size);
    xa_huge_free(c);
    ck_assert_uint_eq(a->huge_cache_count, 1);
    /* Unused for decay_ms: returned, and the keep fades. */
    uint64_t keep = a->huge_keep_bytes;
    xa_lock_acquire(&a->lock);
    xa_huge_cache_purge(a, xa_os_now_ns() + (uint64_t)xa_opt.decay_ms * 1000000u + 1, false);
    xa_lock_release(&a->lock);
    ck_assert_uint_eq(a->huge_cache_count, 0);
    ck_assert_uint_lt(a->huge_keep_bytes, keep);
}
END_TEST

/* A program cycling huge buffers of varied sizes while others stay live: a
 * freed mapping is kept within an eighth of the live heap, huge blocks
 * included, and a kept mapping serves the next request of any size, cut
 * to size when much too big, grown when too small, its pages reused
 * either way. Once the live blocks go, the frees that keep nothing cut
 * the cache back to the allowance of what stays. */
START_TEST(huge_mappings_of_varied_sizes_are_reused)
{
    xa_arena *a = arena();
    enum { LIVE = 16 };
    void *live[LIVE];
    for (int i = 0; i < LIVE; i++) /* 160 MiB, never touched */
        ck_assert_ptr_nonnull(live[i] = xa_huge_alloc(a, 10u << 20, 0, false));
    size_t size = 12u << 20;
    char *p = xa_huge_alloc(a, size, 0, false);
    ck_assert_ptr_nonnull(p);
    memset(p, 0x5a, size);
    xa_huge_free(xa_chunkmap_lookup(p));
    ck_assert_uint_eq(a->huge_cache_count, 1); /* 12 MiB of an allowance of 20 */
    /* A third of the size: the same mapping, cut in place. */
    char *q = xa_huge_alloc(a, 4u << 20, 0, false);
    ck_assert_ptr_eq(q, p);
    ck_assert_uint_eq(a->huge_cache_count, 0);
    for (size_t k = 0; k < (4u << 20); k += 4096)
        ck_assert_int_eq(q[k], 0x5a);
    xa_chunk *c = xa_chunkmap_lookup(q);
    ck_assert_ptr_nonnull(c);
    ck_assert_uint_lt(c->map_size, 5u << 20);
    ck_assert_ptr_null(xa_chunkmap_lookup(q + (8u << 20))); /* the tail went back */
    xa_huge_free(c);
    ck_assert_uint_eq(a->huge_cache_count, 1);
    /* Twice the size: grown, the old pages along. */
    char *r = xa_huge_alloc(a, 8u << 20, 0, false);
    ck_assert_ptr_nonnull(r);
    ck_assert_uint_eq(a->huge_cache_count, 0);
    for (size_t k = 0; k < (4u << 20); k += 4096)
        ck_assert_int_eq(r[k], 0x5a);
    c = xa_chunkmap_lookup(r);
    ck_assert_ptr_eq(xa_chunkmap_lookup(r + (8u << 20) - 1), c);
    /* calloc's block from a kept mapping reads as zero. */
    memset(r, 0x33, 8u << 20);
    xa_huge_free(c);
    char *z = xa_huge_alloc(a, 7u << 20, 0, true);
    ck_assert_ptr_eq(z, r);
    for (size_t k = 0; k < (7u << 20); k += 512)
        ck_assert_int_eq(z[k], 0);
    xa_huge_free(xa_chunkmap_lookup(z));
    for (int i = 0; i < LIVE; i++)
        xa_huge_free(xa_chunkmap_lookup(live[i]));
    ck_assert_uint_eq(a->huge_bytes, 0);
    ck_assert_uint_le(a->huge_cache_bytes, xa_arena_dirty_allowance_units(a) << XA_UNIT_SHIFT);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("arena");
    TCase *t = tcase_create("extents");
    tcase_add_test(t, large_blocks_are_unit_aligned_and_disjoint);
    tcase_add_test(t, free_runs_coalesce_into_whole_chunks);
    tcase_add_test(t, best_fit_prefers_the_smallest_run);
    tcase_add_test(t, slab_merged_into_left_run_leaves_no_descriptor);
    tcase_add_test(t, large_resize_in_place);
    tcase_add_test(t, huge_blocks_map_grow_and_unmap);
    tcase_add_test(t, purge_returns_free_chunks);
    tcase_add_test(t, free_purges_above_allowance);
    tcase_add_test(t, pool_grown_while_allocations_keep_pace_is_not_purged_at_free);
    tcase_add_test(t, churn_wider_than_the_allowance_stops_free_time_purges);
    tcase_add_test(t, purge_stops_at_the_learnt_floor);
    tcase_add_test(t, small_heap_dumped_and_retaken_stops_free_time_purges);
    tcase_add_test(t, big_heap_dumped_and_retaken_stops_free_time_purges);
    tcase_add_test(t, fresh_huge_mapping_forgets_the_learnt_floor);
    tcase_add_test(t, huge_buffer_mapped_again_is_kept_next_time);
    tcase_add_test(t, huge_buffer_of_a_round_keeps_the_learnt_floor);
    tcase_add_test(t, huge_buffer_after_all_runs_freed_forgets_the_floor);
    tcase_add_test(t, huge_mappings_of_varied_sizes_are_reused);
    suite_add_tcase(s, t);
    return s;
}

XA_UNIT_MAIN(make_suite)
