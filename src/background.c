/* background.c: see background.h. */
#include "background.h"

#include <pthread.h>
#include <signal.h>

#include "arena.h"
#include "config.h"
#include "heap.h"
#include "os.h"

static unsigned state;        /* enum xa_background_state (mirrored for the statistics) */
static uint64_t failed_ns;    /* when pthread_create last failed */
static uint32_t wake_seq;     /* futex word: bumped to wake the thread */
static bool sleeping_idle;    /* the thread waits with nothing dirty */
/* background_thread:auto, before the thread runs: when the dirty bytes
 * were last summed, and whether that sum was below half the threshold. */
static uint64_t auto_looked_ns;
static bool auto_looked_low;
#define XA_BACKGROUND_AUTO_LOOK_NS 1000000u

uint64_t xa_background_pass(uint64_t now)
{
    uint64_t next = UINT64_MAX;
    for (unsigned i = 0; i < xa_narenas; i++) {
        xa_arena *a = __atomic_load_n(&xa_arenas[i], __ATOMIC_ACQUIRE);
        if (!a)
            continue;
        xa_arena_maybe_decay(a, now, XA_PURGE_THREAD);
        if (__atomic_load_n(&a->dirty_units, __ATOMIC_RELAXED) ||
            __atomic_load_n(&a->huge_cache_count, __ATOMIC_RELAXED) ||
            __atomic_load_n(&a->warm_bytes, __ATOMIC_RELAXED) ||
            __atomic_load_n(&a->trim_due_slabs, __ATOMIC_RELAXED)) {
            uint64_t due = __atomic_load_n(&a->next_decay_ns, __ATOMIC_RELAXED);
            uint64_t wait = due > now ? due - now : 0;
            if (wait < next)
                next = wait;
        }
    }
    if (xa_heaps_decay_caches(now))
        next = next > 100000000u ? 100000000u : next;
    uint64_t reclaim = xa_heaps_reclaim_idle(now, false);
    return reclaim < next ? reclaim : next;
}

/* background_thread:auto starts the thread for dirty memory past the
 * threshold, or for idle reclaim once the process has several threads. */
static bool auto_wanted(void)
{
    return xa_arenas_dirty_bytes() >= XA_BACKGROUND_AUTO_BYTES ||
           __atomic_load_n(&xa_heaps_many, __ATOMIC_RELAXED);
}

static bool mode_off(void)
{
    return __atomic_load_n(&xa_opt.background_thread, __ATOMIC_RELAXED) == XA_BG_OFF;
}

static void *thread_main(void *arg)
{
    (void)arg;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    xa_os_set_thread_name("xalloc-purger");
    while (!mode_off()) {
        uint32_t seq = __atomic_load_n(&wake_seq, __ATOMIC_ACQUIRE);
        uint64_t wait = xa_background_pass(xa_os_now_ns());
        if (wait == UINT64_MAX) {
            /* Nothing dirty: sleep until a free makes some (notice). The
             * dirty hint is re-armed first so that free is not missed. */
            __atomic_store_n(&sleeping_idle, true, __ATOMIC_SEQ_CST);
            __atomic_store_n(&xa_arena_dirty_pending, false, __ATOMIC_SEQ_CST);
            if (xa_arenas_dirty_bytes() == 0)
                xa_os_futex_wait(&wake_seq, seq, 0);
            __atomic_store_n(&sleeping_idle, false, __ATOMIC_RELAXED);
            continue;
        }
        /* Until the next purge is due: at least 10 ms, at most a second
         * so a changed decay_ms or mode is noticed. */
        if (wait < 10000000u)
            wait = 10000000u;
        if (wait > 1000000000u)
            wait = 1000000000u;
        xa_os_futex_wait(&wake_seq, seq, wait);
    }
    __atomic_store_n(&xa_heap_purger_active, false, __ATOMIC_RELEASE);
    __atomic_store_n(&state, XA_BG_STOPPED, __ATOMIC_RELEASE);
    __atomic_store_n(&xa_heap_purger_state, XA_BG_STOPPED, __ATOMIC_RELAXED);
    return NULL;
}

static void wake(void)
{
    __atomic_fetch_add(&wake_seq, 1, __ATOMIC_RELEASE);
    xa_os_futex_wake_all(&wake_seq);
}

static void start(void)
{
    unsigned expected = __atomic_load_n(&state, __ATOMIC_ACQUIRE);
    if (expected == XA_BG_RUNNING)
        return;
    if (expected == XA_BG_FAILED && xa_os_now_ns() - failed_ns < XA_BACKGROUND_RETRY_NS)
        return;
    if (!__atomic_compare_exchange_n(&state, &expected, XA_BG_RUNNING, false, __ATOMIC_ACQ_REL,
                                     __ATOMIC_RELAXED))
        return;
    pthread_t tid;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 64 * 1024);
    __atomic_store_n(&xa_heap_purger_active, true, __ATOMIC_RELEASE);
    __atomic_store_n(&xa_heap_purger_state, XA_BG_RUNNING, __ATOMIC_RELAXED);
    if (pthread_create(&tid, &attr, thread_main, NULL) != 0) {
        /* Purging stays on the slow paths; try again later. */
        failed_ns = xa_os_now_ns();
        __atomic_store_n(&xa_heap_purger_active, false, __ATOMIC_RELEASE);
        __atomic_store_n(&state, XA_BG_FAILED, __ATOMIC_RELEASE);
        __atomic_store_n(&xa_heap_purger_state, XA_BG_FAILED, __ATOMIC_RELAXED);
    }
    pthread_attr_destroy(&attr);
}

void xa_background_update(void)
{
    int mode = __atomic_load_n(&xa_opt.background_thread, __ATOMIC_RELAXED);
    if (mode == XA_BG_OFF) {
        wake(); /* a running thread sees the option and exits */
        return;
    }
    if (mode == XA_BG_ON || auto_wanted())
        start();
    else
        wake();
}

void xa_background_notice(void)
{
    __atomic_store_n(&xa_arena_dirty_pending, false, __ATOMIC_RELAXED);
    if (mode_off())
        return;
    if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) == XA_BG_RUNNING) {
        if (__atomic_load_n(&sleeping_idle, __ATOMIC_SEQ_CST))
            wake();
        return;
    }
    if (__atomic_load_n(&xa_opt.background_thread, __ATOMIC_RELAXED) == XA_BG_ON ||
        __atomic_load_n(&xa_heaps_many, __ATOMIC_RELAXED)) {
        start();
        return;
    }
    /* auto: the sum reads a line of every arena, which its threads write at
     * each run they take or free, and two threads that empty slabs in
     * rounds notice at each (3-8% of a size sweep's time). A sum well below
     * the threshold is taken again at most once a millisecond; the dirty
     * bytes a burst of frees adds meanwhile stay within the arenas' dirty
     * allowance, which frees enforce themselves. (Leaving the hint set
     * until the next sum saved 3% more there, but every free of a large
     * block then came here, and the purger started later: a producer and
     * consumer of 64 KiB-1 MiB buffers peaked 8% higher.) */
    uint64_t now = xa_os_now_ns();
    if (__atomic_load_n(&auto_looked_low, __ATOMIC_RELAXED) &&
        now - __atomic_load_n(&auto_looked_ns, __ATOMIC_RELAXED) < XA_BACKGROUND_AUTO_LOOK_NS)
        return;
    uint64_t dirty = xa_arenas_dirty_bytes();
    __atomic_store_n(&auto_looked_ns, now, __ATOMIC_RELAXED);
    __atomic_store_n(&auto_looked_low, dirty < XA_BACKGROUND_AUTO_BYTES / 2, __ATOMIC_RELAXED);
    if (dirty >= XA_BACKGROUND_AUTO_BYTES)
        start();
}

void xa_background_fork_child(void)
{
    xa_heap_purger_active = false;
    state = XA_BG_STOPPED;
    xa_heap_purger_state = XA_BG_STOPPED;
    sleeping_idle = false;
    wake_seq = 0;
    auto_looked_low = false;
}
