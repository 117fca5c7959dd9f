/* lock.c: mutex wrapper with a rank check in debug builds. Layer: bottom. */
#include "lock.h"

/* Highest rank held by this thread (debug builds only). */
static __thread int held_rank;

void xa_lock_acquire(xa_lock *l)
{
    if (xa_config_debug && l->rank <= held_rank && l->rank != XA_RANK_ARENA)
        xa_fatal("lock order violated: rank %d taken while holding %d",
                 l->rank, held_rank);
    pthread_mutex_lock(&l->m);
    if (xa_config_debug && l->rank > held_rank)
        held_rank = l->rank;
}

void xa_lock_release(xa_lock *l)
{
    pthread_mutex_unlock(&l->m);
    if (xa_config_debug && held_rank == l->rank)
        held_rank = 0;
}

bool xa_lock_held_any(void)
{
    return xa_config_debug && held_rank != 0;
}

void xa_lock_reset(xa_lock *l)
{
    pthread_mutex_t init = PTHREAD_MUTEX_INITIALIZER;
    l->m = init;
    held_rank = 0;
}
