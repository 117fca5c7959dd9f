/* background.h: the purger thread (background_thread option). It wakes
 * when dirty memory comes due, purges every arena and the idle threads'
 * caches, and sleeps on a futex while there is nothing to purge, so a
 * process that stops calling the allocator still returns its memory
 * within about decay_ms.
 * background_thread:auto (the default) starts it lazily, the first time
 * the process holds more than XA_BACKGROUND_AUTO_BYTES of dirty memory or
 * has XA_HEAPS_MANY thread heaps (whose idle slabs it reclaims, heap.c):
 * short-lived single-threaded commands never get a thread. In a fork child it is started
 * again the same way. If it cannot be created (seccomp, TasksMax), purging
 * stays on the allocation slow paths and creation is retried after
 * XA_BACKGROUND_RETRY_NS.
 * Layer: above heap and arena (it drives their decay); reached from below
 * only through the heap's dirty hook, which init.c points here. */
#ifndef XA_BACKGROUND_H
#define XA_BACKGROUND_H

#include "common.h"

#define XA_BACKGROUND_AUTO_BYTES ((uint64_t)4 << 20)
#define XA_BACKGROUND_RETRY_NS ((uint64_t)10 * 1000000000u)

enum xa_background_state {
    XA_BG_STOPPED = 0,
    XA_BG_RUNNING = 1,
    XA_BG_FAILED = 2, /* pthread_create refused; retried later */
};

/* Starts or stops the thread to match the option; no lock may be held
 * (it creates a thread, which allocates). */
void xa_background_update(void);
/* Dirty memory appeared (xa_arena_dirty_pending): starts the thread under
 * auto once past the threshold, or wakes it. No allocator lock held. */
void xa_background_notice(void);
/* In the fork child: the thread did not survive. */
void xa_background_fork_child(void);
/* One pass of what the thread does: decay every arena and every heap's
 * large-block cache. Returns the nanoseconds until something comes due
 * (UINT64_MAX when nothing is dirty). */
uint64_t xa_background_pass(uint64_t now);

#endif /* XA_BACKGROUND_H */
