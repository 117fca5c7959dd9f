/* stats.h: live statistics publication. Side module (stats): owns the
 * shared-memory statistics file (layout in include/xalloc_stats_file.h),
 * its serving thread, and the public xalloc_stats_get / xalloc_stats_print.
 * Calls down into the core only through xa_stats_collect(), sideways into
 * config (xalloc_config_set), and up into the API only through
 * xa_stats_purge_hook, which init sets; calls os, os_stats, util. */
#ifndef XA_STATS_H
#define XA_STATS_H

#include <stddef.h>
#include <stdint.h>

/* Called once by the core's init after the allocator is usable, outside
 * every allocator lock. Cheap: reads xa_opt and arms the first tick; the
 * file and the thread are made by that tick. */
void xa_stats_boot(void);

/* Called by the core on slow paths with the current xa_os_now_ns().
 * Pre: no allocator lock held (a due refresh calls xa_stats_collect()).
 * Costs one load, compare and branch unless a refresh is due; then
 * refreshes the snapshot, creates the file (first time, or first time in a
 * fork child) and starts the serving thread. Re-entry (the refresh
 * allocating) returns at once. */
void xa_stats_tick(uint64_t now_ns);

/* Called in the pthread_atfork child handler. Only resets flags: the
 * child's own file and thread are made at its next tick; the parent's file
 * is left alone. */
void xa_stats_fork_child(void);

/* Set by the profiling module at its boot (NULL in libxalloc.so.1): writes
 * a heap profile now and puts its path (or why not) in msg. Returns 0 on
 * success or an errno value. Called by the serving thread for
 * XALLOC_STATS_CMD_DUMP requests, with no allocator lock held. */
extern int (*xa_stats_dump_hook)(char *msg, unsigned long cap);

/* Set by init to xalloc_purge() (the layer above): what a
 * XALLOC_STATS_CMD_PURGE request runs. Returns the bytes purged. */
extern size_t (*xa_stats_purge_hook)(void);

#endif /* XA_STATS_H */
