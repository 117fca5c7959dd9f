/* background.c: see background.h. */
#include "background.h"

#include <pthread.h>
#include <signal.h>

#include "arena.h"
#include "config.h"
#include "heap.h"
#include "os.h"

bool xa_background_running;
static int state; /* 0 stopped, 1 starting or running */

uint64_t xa_background_pass(uint64_t now)
{
    uint64_t next = UINT64_MAX;
    for (unsigned i = 0; i < xa_narenas; i++) {
        xa_arena *a = __atomic_load_n(&xa_arenas[i], __ATOMIC_ACQUIRE);
        if (!a)
            continue;
        xa_arena_maybe_decay(a, now);
        if (__atomic_load_n(&a->dirty_units, __ATOMIC_RELAXED) ||
            __atomic_load_n(&a->huge_cache_count, __ATOMIC_RELAXED)) {
            uint64_t due = __atomic_load_n(&a->next_decay_ns, __ATOMIC_RELAXED);
            uint64_t wait = due > now ? due - now : 0;
            if (wait < next)
                next = wait;
        }
    }
    if (xa_heaps_decay_caches(now))
        next = next > 100000000u ? 100000000u : next;
    return next;
}

static void *thread_main(void *arg)
{
    (void)arg;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    while (__atomic_load_n(&xa_opt.background_thread, __ATOMIC_RELAXED)) {
        uint64_t wait = xa_background_pass(xa_os_now_ns());
        /* Sleep until the next purge is due: at least 10 ms, and at most
         * one second so a changed decay_ms is noticed. */
        if (wait < 10000000u)
            wait = 10000000u;
        if (wait > 1000000000u)
            wait = 1000000000u;
        xa_os_sleep_ns(wait);
    }
    __atomic_store_n(&xa_background_running, false, __ATOMIC_RELEASE);
    __atomic_store_n(&state, 0, __ATOMIC_RELEASE);
    return NULL;
}

void xa_background_update(void)
{
    if (!__atomic_load_n(&xa_opt.background_thread, __ATOMIC_RELAXED))
        return; /* a running thread sees the option and exits */
    int expected = 0;
    if (!__atomic_compare_exchange_n(&state, &expected, 1, false, __ATOMIC_ACQ_REL,
                                     __ATOMIC_RELAXED))
        return;
    pthread_t tid;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 64 * 1024);
    __atomic_store_n(&xa_background_running, true, __ATOMIC_RELEASE);
    if (pthread_create(&tid, &attr, thread_main, NULL) != 0) {
        __atomic_store_n(&xa_background_running, false, __ATOMIC_RELEASE);
        __atomic_store_n(&state, 0, __ATOMIC_RELEASE);
    }
    pthread_attr_destroy(&attr);
}

void xa_background_fork_child(void)
{
    xa_background_running = false;
    state = 0;
}
