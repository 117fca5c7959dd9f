/* stats_collect.h: fills the statistics ABI struct from the core's
 * counters. The stats module (stats.c) publishes what this returns.
 * Layer: core (reads heaps and arenas under their locks). */
#ifndef XA_STATS_COLLECT_H
#define XA_STATS_COLLECT_H

#include "xalloc_stats.h"

/* Fills *out with the current process's statistics. Arena entries past
 * arenas_count are not written: a buffer of unknown contents is zeroed by
 * the caller. Takes the heap-list lock and each arena lock in turn; never
 * call it holding one. */
void xa_stats_collect(struct xalloc_stats *out);
void xa_stats_collect_fork_prepare(void);
void xa_stats_collect_fork_parent(void);
void xa_stats_collect_fork_child(void);

#endif /* XA_STATS_COLLECT_H */
