/* lock.h: the allocator's mutex and the lock-rank order. Layer: bottom.
 * Locks are taken only on slow paths. The ranks give the one order in which
 * locks may be nested; the fork handlers in init.c take every lock in rank
 * order and release them in reverse, so a child never inherits a lock held
 * by a thread that no longer exists. Debug builds check the order. */
#ifndef XA_LOCK_H
#define XA_LOCK_H

#include <pthread.h>

#include "common.h"

enum xa_lock_rank {
    XA_RANK_INIT = 1,   /* process init */
    XA_RANK_STATS,      /* statistics collection (scratch buffers) */
    XA_RANK_HEAPS,      /* list of heaps (thread create/exit, stats) */
    XA_RANK_ARENA_LIST, /* creation of arenas */
    XA_RANK_ARENA,      /* one per arena; never two at once */
    XA_RANK_CHUNKMAP,   /* radix leaf creation */
    XA_RANK_PROF_DUMP,  /* profiling build: one heap-profile dump at a time */
    XA_RANK_PROF,       /* profiling build: sampled blocks and stacks */
    XA_RANK_META,       /* internal metadata allocator */
};

typedef struct xa_lock {
    pthread_mutex_t m;
    int rank;
} xa_lock;

#define XA_LOCK_INIT(r) {PTHREAD_MUTEX_INITIALIZER, (r)}

static inline void xa_lock_init(xa_lock *l, int rank)
{
    pthread_mutex_t init = PTHREAD_MUTEX_INITIALIZER;
    l->m = init;
    l->rank = rank;
}

void xa_lock_acquire(xa_lock *l);
void xa_lock_release(xa_lock *l);
/* In the child after fork: the lock is reset to unlocked. */
void xa_lock_reset(xa_lock *l);
/* Debug builds: true while this thread holds an allocator lock (as far as
 * the rank check follows). Release builds: false. For asserting that a
 * call that may sleep long (an RCU grace period) holds up no other thread. */
bool xa_lock_held_any(void);

#endif /* XA_LOCK_H */
