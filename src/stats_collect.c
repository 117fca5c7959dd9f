/* stats_collect.c: the core's side of the statistics: sums per-thread
 * counters (each heap's, plus those of exited threads) and reads each
 * arena's byte counts under its lock. See stats_collect.h. */
#include "stats_collect.h"

#include "lock.h"

#include <string.h>

#include "arena.h"
#include "heap.h"
#include "meta.h"
#include "numa.h"
#include "os.h"
#include "pages.h"

static xa_lock collect_lock = XA_LOCK_INIT(XA_RANK_STATS);

/* Fork handlers (init.c): a child must not inherit the lock held by a
 * thread that does not exist there. */
void xa_stats_collect_fork_prepare(void) { xa_lock_acquire(&collect_lock); }
void xa_stats_collect_fork_parent(void) { xa_lock_release(&collect_lock); }
void xa_stats_collect_fork_child(void) { xa_lock_reset(&collect_lock); }

/* Resident pages of a's memory, sampled for the node the kernel put them
 * on (move_pages in query mode): at most NUMA_SAMPLE_CHUNKS chunks and huge
 * blocks per call, spread over the lists, eight pages of each. Only with
 * placement on, and only here (statistics), never on an allocation path.
 * Called under a's lock: the chunks cannot go away meanwhile. */
#define NUMA_SAMPLE_CHUNKS 32u
static void numa_sample(xa_arena *a, uint64_t *sampled, uint64_t *off)
{
    *sampled = *off = 0;
    if (!xa_numa_active || a->node < 0)
        return;
    uint64_t n = a->nchunks + a->huge_count;
    uint64_t step = n / NUMA_SAMPLE_CHUNKS + 1, k = 0;
    xa_chunk *lists[2] = {a->chunks, a->huge_live};
    for (int l = 0; l < 2; l++)
        for (xa_chunk *c = lists[l]; c; c = c->next, k++) {
            if (k % step)
                continue;
            size_t size = l ? c->map_size : XA_CHUNK_SIZE;
            xa_numa_query_result r;
            if (xa_numa_query(c, size, XA_ALIGN_UP(size / 8, XA_OS_PAGE), a->node, &r) != 0)
                return;
            *sampled += r.present;
            *off += r.off_node;
        }
}

void xa_stats_collect(struct xalloc_stats *out)
{
    static uint64_t nmalloc[XA_NCLASSES], nfree[XA_NCLASSES];
    static int64_t arena_small[XA_MAX_ARENAS], arena_carved[XA_MAX_ARENAS];
    /* Only the entries in use are written (and zeroed): the rest of the
     * arena table (256 entries, 37 KiB) stays untouched, so the
     * publisher's scratch and file keep no pages for arenas that do not
     * exist. Callers with a buffer of unknown contents zero it first. */
    memset(out, 0, offsetof(struct xalloc_stats, arenas));
    memset(out->classes, 0, sizeof out->classes);
    out->size = sizeof *out;
    out->version_major = XALLOC_STATS_VERSION_MAJOR;
    out->version_minor = XALLOC_STATS_VERSION_MINOR;
    out->timestamp_ns = xa_os_now_ns();

    xa_lock_acquire(&collect_lock); /* guards the static scratch arrays */
    struct xa_heaps_big big;
    xa_heaps_sum(nmalloc, nfree, arena_small, arena_carved, &big);
    uint64_t large_cached = big.large_cached;

    uint64_t class_slabs[XA_NCLASSES] = {0}, class_capacity[XA_NCLASSES] = {0};
    uint64_t resident = 0;
    unsigned narenas = xa_narenas;
    if (narenas > XALLOC_STATS_MAX_ARENAS)
        narenas = XALLOC_STATS_MAX_ARENAS;
    out->arenas_count = narenas;
    memset(out->arenas, 0, narenas * sizeof out->arenas[0]);
    for (unsigned i = 0; i < xa_narenas; i++) {
        xa_arena *a = __atomic_load_n(&xa_arenas[i], __ATOMIC_ACQUIRE);
        struct xalloc_stats_arena *sa = i < narenas ? &out->arenas[i] : NULL;
        if (!a) {
            if (sa) {
                int id = xa_numa_active ? xa_numa_node_of_slot(xa_numa_arena_slot(i)) : 0;
                sa->node = id < 0 ? 0 : (uint64_t)id;
            }
            continue;
        }
        xa_lock_acquire(&a->lock);
        uint64_t chunk_bytes = a->nchunks * XA_CHUNK_SIZE;
        uint64_t mapped = chunk_bytes + a->huge_mapped;
        uint64_t active = a->used_units * XA_UNIT_SIZE + a->huge_bytes;
        uint64_t dirty = a->dirty_units * XA_UNIT_SIZE + a->huge_cache_bytes;
        uint64_t retained = a->retained_units * XA_UNIT_SIZE;
        /* (Per-class counts may wrap below zero: the heaps count carving,
         * the arena uncarving; the sum is right modulo 2^64.) */
        uint64_t carved = (uint64_t)arena_carved[i];
        for (unsigned c = 0; c < XA_NCLASSES; c++) {
            class_slabs[c] += a->class_slabs[c];
            class_capacity[c] += a->class_capacity[c];
            carved += __atomic_load_n(&a->class_carved[c], __ATOMIC_RELAXED) * xa_classes[c].size;
        }
        uint64_t arena_allocated = a->large_bytes + a->huge_bytes;
        /* Resident: carved pages of slabs, live large runs and dirty runs
         * (all of a chunk under thp:always), live and cached huge
         * mappings, and the chunk headers. Metadata is the process's. */
        uint64_t arena_resident =
            (xa_pages_thp ? chunk_bytes : carved + a->large_bytes + a->dirty_units * XA_UNIT_SIZE) +
            a->huge_bytes + a->huge_cache_bytes + a->nchunks * XA_OS_PAGE;
        if (sa) {
            int id = a->node < 0 ? 0 : xa_numa_node_of_slot(a->node);
            sa->node = id < 0 ? 0 : (uint64_t)id;
            sa->resident = arena_resident;
            numa_sample(a, &sa->pages_sampled, &sa->pages_off_node);
            sa->threads = __atomic_load_n(&a->nthreads, __ATOMIC_RELAXED);
            sa->allocated = arena_allocated + (arena_small[i] > 0 ? (uint64_t)arena_small[i] : 0);
            sa->active = active;
            sa->mapped = mapped;
            sa->dirty = dirty;
            sa->retained = retained;
            sa->huge_backed = a->huge_chunks * XA_CHUNK_SIZE;
            sa->large_count = a->large_count;
            sa->large_bytes = a->large_bytes;
            sa->huge_count = a->huge_count;
            sa->huge_bytes = a->huge_bytes;
            sa->chunks = a->nchunks;
            sa->purged = __atomic_load_n(&a->purged_bytes, __ATOMIC_RELAXED);
        }
        out->mapped += mapped;
        out->active += active;
        out->dirty += dirty;
        out->retained += retained;
        out->purged += __atomic_load_n(&a->purged_bytes, __ATOMIC_RELAXED);
        out->purged_at_free += __atomic_load_n(&a->purged_by[XA_PURGE_AT_FREE], __ATOMIC_RELAXED);
        out->purged_slow_path += __atomic_load_n(&a->purged_by[XA_PURGE_SLOW_PATH], __ATOMIC_RELAXED);
        out->purged_thread += __atomic_load_n(&a->purged_by[XA_PURGE_THREAD], __ATOMIC_RELAXED);
        out->purged_trim += __atomic_load_n(&a->purged_by[XA_PURGE_TRIM], __ATOMIC_RELAXED);
        out->huge_backed += a->huge_chunks * XA_CHUNK_SIZE;
        out->thp_promotions += a->thp_promotions;
        out->thp_demotions += a->thp_demotions;
        out->npurge += __atomic_load_n(&a->npurge, __ATOMIC_RELAXED);
        out->large_count += a->large_count;
        out->large_bytes += a->large_bytes;
        out->huge_count += a->huge_count;
        out->huge_bytes += a->huge_bytes;
        out->requested += __atomic_load_n(&a->requested_big, __ATOMIC_RELAXED);
        resident += arena_resident;
        xa_lock_release(&a->lock);
    }

    out->classes_count = XA_NCLASSES;
    uint64_t small_allocated = 0, small_malloc = 0, small_free = 0;
    for (unsigned c = 0; c < XA_NCLASSES; c++) {
        struct xalloc_stats_class *sc = &out->classes[c];
        uint64_t live = nmalloc[c] >= nfree[c] ? nmalloc[c] - nfree[c] : 0;
        sc->size = xa_classes[c].size;
        sc->live = live;
        sc->slabs = class_slabs[c];
        sc->capacity = class_capacity[c];
        sc->nmalloc = nmalloc[c];
        sc->nfree = nfree[c];
        small_allocated += live * xa_classes[c].size;
        small_malloc += nmalloc[c];
        small_free += nfree[c];
    }
    xa_lock_release(&collect_lock);

    /* Large blocks parked in thread caches are free memory, still resident. */
    if (large_cached > out->large_bytes)
        large_cached = out->large_bytes;
    out->large_bytes -= large_cached;
    out->dirty += large_cached;
    out->allocated = small_allocated + out->large_bytes + out->huge_bytes;
    /* Requested sizes of small blocks are not kept (it would cost the fast
     * path): they count at their class size; large and huge blocks count
     * at the size asked for. */
    /* Plus the heaps' cache deltas (taken before the arenas' counters
     * were read: a snapshot can be off by blocks in flight, never below 0). */
    int64_t req = (int64_t)out->requested + big.requested_delta;
    out->requested = (req > 0 ? (uint64_t)req : 0) + small_allocated;
    if (out->requested > out->allocated) /* parked large blocks */
        out->requested = out->allocated;
    out->metadata = xa_meta_mapped();
    out->mapped += out->metadata;
    out->resident = resident + out->metadata;
    if (out->resident > out->mapped)
        out->resident = out->mapped;
    out->nmalloc = small_malloc + big.nmalloc;
    out->nfree = small_free + big.nfree;
    out->nrealloc = big.nrealloc;
    out->threads = big.threads;
    out->narenas = xa_narenas;
    out->nnodes = (uint64_t)xa_numa_nodes;
    out->purger_thread = __atomic_load_n(&xa_heap_purger_state, __ATOMIC_RELAXED);
}
