/* xalloc_stats.h: the statistics ABI, shared by the library, programs that
 * read their own statistics, and xalloc-stat (which never links src/).
 *
 * Fields are declared once, by X-macro, so the report, the JSON and the
 * Prometheus outputs all come from the same list. The struct starts with
 * size and version and carries reserved slots: new fields use the reserved
 * space and bump XALLOC_STATS_VERSION_MINOR; a layout change bumps MAJOR. */
#ifndef XALLOC_STATS_H
#define XALLOC_STATS_H

#include <stdint.h>

#define XALLOC_STATS_VERSION_MAJOR 1
#define XALLOC_STATS_VERSION_MINOR 2
#define XALLOC_STATS_MAX_ARENAS 256
#define XALLOC_STATS_MAX_CLASSES 64

/* X(field, unit, description): process totals. Units: "bytes" or "count". */
#define XALLOC_STATS_TOTALS(X)                                                  \
    X(allocated, bytes, "bytes in live blocks, counted at their class size")  \
    X(requested, bytes, "bytes requested for live blocks (small blocks at their class size)")     \
    X(active, bytes, "bytes of pages holding at least one live block")        \
    X(resident, bytes, "bytes of the heap resident in RAM (estimate)")        \
    X(mapped, bytes, "bytes of address space mapped by the allocator")        \
    X(retained, bytes, "bytes mapped but purged (not resident), kept for reuse") \
    X(dirty, bytes, "bytes free but still resident, waiting for decay")       \
    X(metadata, bytes, "bytes used by the allocator's own metadata")          \
    X(purged, bytes, "bytes returned to the OS since start (cumulative)")     \
    X(large_count, count, "live large blocks (one extent each)")              \
    X(large_bytes, bytes, "bytes in live large blocks")                       \
    X(huge_count, count, "live huge blocks (one mapping each)")               \
    X(huge_bytes, bytes, "bytes in live huge blocks")                         \
    X(nmalloc, count, "allocations since start (malloc, calloc, ...)")        \
    X(nfree, count, "frees since start")                                      \
    X(nrealloc, count, "realloc calls since start")                           \
    X(npurge, count, "purge operations (madvise or unmap calls)")             \
    X(threads, count, "threads with a heap")                                  \
    X(narenas, count, "arenas")                                               \
    X(nnodes, count, "NUMA nodes in use")                                      \
    X(purged_at_free, bytes, "bytes purged by frees, above the dirty allowance (cumulative)") \
    X(purged_slow_path, bytes, "bytes purged by decay on allocation slow paths (cumulative)") \
    X(purged_thread, bytes, "bytes purged by the purger thread (cumulative)")  \
    X(purged_trim, bytes, "bytes purged on request: malloc_trim, xalloc_purge, --purge (cumulative)") \
    X(purger_thread, count, "purger thread: 0 not started, 1 running, 2 could not be created") \
    X(huge_backed, bytes, "bytes of chunks backed by huge pages (promoted dense chunks, or all under thp:always)") \
    X(thp_promotions, count, "chunks promoted to huge pages because they became dense (cumulative)") \
    X(thp_demotions, count, "huge-page chunks demoted to small pages because they became sparse (cumulative)")

/* X(field, unit, description): per arena. */
#define XALLOC_STATS_ARENA(X)                                                   \
    X(node, count, "NUMA node the arena's memory is bound to")                \
    X(threads, count, "threads bound to the arena")                           \
    X(allocated, bytes, "bytes in live blocks")                               \
    X(active, bytes, "bytes of pages holding live blocks")                    \
    X(mapped, bytes, "bytes mapped in chunks")                                \
    X(dirty, bytes, "bytes free but resident")                                \
    X(retained, bytes, "bytes mapped but purged")                             \
    X(huge_backed, bytes, "bytes in chunks backed by huge pages")           \
    X(large_count, count, "live large blocks")                                \
    X(large_bytes, bytes, "bytes in live large blocks")                       \
    X(huge_count, count, "live huge blocks")                                  \
    X(huge_bytes, bytes, "bytes in live huge blocks")                         \
    X(chunks, count, "chunks owned")                                          \
    X(purged, bytes, "bytes purged since start")                              \
    X(resident, bytes, "bytes of the arena resident in RAM (estimate; 1.2)")  \
    X(pages_sampled, count, "resident pages of its chunks last sampled for their node (1.2)") \
    X(pages_off_node, count, "of those, pages the kernel placed on another node (1.2)")

/* X(field, unit, description): per size class. */
#define XALLOC_STATS_CLASS(X)                                                   \
    X(size, bytes, "block size of the class")                                 \
    X(live, count, "live blocks")                                             \
    X(slabs, count, "slabs (runs of pages) of this class")                    \
    X(capacity, count, "blocks the slabs can hold")                           \
    X(nmalloc, count, "allocations since start")                              \
    X(nfree, count, "frees since start")

#define XALLOC_STATS_FIELD_(name, unit, doc) uint64_t name;

struct xalloc_stats_arena {
    XALLOC_STATS_ARENA(XALLOC_STATS_FIELD_)
    uint64_t reserved[1];
};

struct xalloc_stats_class {
    XALLOC_STATS_CLASS(XALLOC_STATS_FIELD_)
    uint64_t reserved[2];
};

struct xalloc_stats {
    uint32_t size;          /* sizeof(struct xalloc_stats) of the writer */
    uint16_t version_major; /* XALLOC_STATS_VERSION_MAJOR */
    uint16_t version_minor;
    uint64_t timestamp_ns;  /* CLOCK_MONOTONIC of the snapshot */
    XALLOC_STATS_TOTALS(XALLOC_STATS_FIELD_)
    uint64_t reserved[8];
    uint32_t arenas_count;  /* entries used in arenas[] */
    uint32_t classes_count; /* entries used in classes[] */
    struct xalloc_stats_arena arenas[XALLOC_STATS_MAX_ARENAS];
    struct xalloc_stats_class classes[XALLOC_STATS_MAX_CLASSES];
};

#ifdef __cplusplus
extern "C" {
#endif
/* Fills *out with a consistent snapshot of the calling process's heap.
 * Returns 0, or -1 if out is NULL. mallinfo2() and malloc_stats() report
 * the same figures. */
int xalloc_stats_get(struct xalloc_stats *out);
#ifdef __cplusplus
}
#endif

#endif /* XALLOC_STATS_H */
