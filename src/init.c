/* init.c: process init state machine, thread set-up and exit, fork.
 * Calls the boot and fork hooks of every module in layer order. */
#include "init.h"

#include <pthread.h>
#include <sys/auxv.h>

#include "arena.h"
#include "chunkmap.h"
#include "config.h"
#include "lock.h"
#include "meta.h"
#include "numa.h"
#include "os.h"
#include "pages.h"
#include "prof.h"
#include "stats.h"
#include "stats_collect.h"
#include "xalloc.h"
#include "background.h"

bool xa_ready;
static int init_state; /* 0 none, 1 running, 2 done */
static xa_lock init_lock = XA_LOCK_INIT(XA_RANK_INIT);
static __thread bool in_init;
static pthread_key_t exit_key;
static int post_init_done;

void xa_malloc_boot(void); /* malloc.c: entry-point switches from options */

static void thread_exit(void *arg)
{
    xa_heap *h = arg;
    if (!h || h == &xa_heap_empty)
        return;
    xa_tls_heap = &xa_heap_empty;
    xa_heap_thread_exit(h);
}

static void heap_tick(uint64_t now)
{
    xa_stats_tick(now);
}

static uintptr_t random_secret(void)
{
    /* The kernel's 16 random bytes for this process (AT_RANDOM). */
    const uint8_t *r = (const uint8_t *)getauxval(AT_RANDOM);
    uintptr_t v = (uintptr_t)xa_os_now_ns() * 0x9e3779b97f4a7c15ULL;
    if (r)
        for (unsigned i = 0; i < 8; i++)
            v ^= (uintptr_t)r[i + 8] << (8 * i);
    /* Never 0, and low bits clear so that encoded links stay 16-aligned
     * like real pointers and the thread-free state bits stay free. */
    v &= ~(uintptr_t)15;
    return v ? v : (uintptr_t)0x5bd1e99500000000ULL;
}

/* The free mark: the other 8 random bytes, so that reading a freed block
 * tells nothing of the secret. Never 0 (the mark of a live block). */
static uintptr_t random_free_mark(void)
{
    const uint8_t *r = (const uint8_t *)getauxval(AT_RANDOM);
    uintptr_t v = ((uintptr_t)xa_os_now_ns() + 0x632be59bd9b4e019ULL) * 0xbf58476d1ce4e5b9ULL;
    if (r)
        for (unsigned i = 0; i < 8; i++)
            v ^= (uintptr_t)r[i] << (8 * i);
    return v ? v : (uintptr_t)0x46726565644d726bULL;
}

bool xa_init_process(void)
{
    if (xa_likely(__atomic_load_n(&init_state, __ATOMIC_ACQUIRE) == 2))
        return true;
    if (in_init)
        return false;
    in_init = true;
    xa_lock_acquire(&init_lock);
    if (init_state == 0) {
        init_state = 1;
        xa_heap_secret = random_secret();
        xa_heap_free_mark = random_free_mark();
        xa_config_init();
        xa_malloc_boot();
        xa_numa_boot();
        xa_pages_boot();
        xa_pages_sparse(xa_region_kind, sizeof xa_region_kind);
        xa_arena_boot((unsigned)xa_opt.arenas);
        xa_heap_hooks.tick = heap_tick;
        xa_heap_hooks.dirty = xa_background_notice;
        pthread_key_create(&exit_key, thread_exit);
        xa_ready = true;
        __atomic_store_n(&init_state, 2, __ATOMIC_RELEASE);
    }
    xa_lock_release(&init_lock);
    in_init = false;
    return true;
}

/* ---- fork ---- */

static void fork_prepare(void)
{
    if (!xa_ready)
        return;
    xa_lock_acquire(&init_lock);
    xa_stats_collect_fork_prepare();
    xa_heaps_fork_prepare();
    xa_arenas_fork_prepare();
    xa_chunkmap_fork_prepare();
    if (xa_config_prof) /* prof hook: its locks rank between chunkmap and meta */
        xa_prof_fork_prepare();
    xa_meta_fork_prepare();
}

static void fork_parent(void)
{
    if (!xa_ready)
        return;
    xa_meta_fork_parent();
    if (xa_config_prof) /* prof hook */
        xa_prof_fork_parent();
    xa_chunkmap_fork_parent();
    xa_arenas_fork_parent();
    xa_heaps_fork_parent();
    xa_stats_collect_fork_parent();
    xa_lock_release(&init_lock);
}

static void fork_child(void)
{
    if (!xa_ready)
        return;
    xa_meta_fork_child();
    if (xa_config_prof) /* prof hook */
        xa_prof_fork_child();
    xa_chunkmap_fork_child();
    xa_arenas_fork_child();
    xa_heaps_fork_child();
    xa_stats_collect_fork_child();
    xa_lock_reset(&init_lock);
    xa_background_fork_child();
    xa_stats_fork_child();
}

/* Work that may itself allocate: done once the first heap is in place. */
static void post_init(void)
{
    pthread_atfork(fork_prepare, fork_parent, fork_child);
    __atomic_store_n(&xa_config_on_change, xa_background_update, __ATOMIC_RELEASE);
    xa_background_update();
    xa_stats_purge_hook = xalloc_purge;
    xa_stats_boot();
    if (xa_config_prof) /* prof hook: tables, dump hook (may allocate) */
        xa_prof_boot();
}

xa_heap *xa_init_thread(void)
{
    if (!xa_init_process())
        return NULL;
    xa_heap *h = xa_tls_heap;
    if (h != &xa_heap_empty)
        return h;
    xa_arena *a = xa_arena_choose();
    if (!a)
        return NULL;
    h = xa_heap_create(a);
    if (!h) {
        __atomic_fetch_sub(&a->nthreads, 1, __ATOMIC_RELAXED);
        return NULL;
    }
    /* Set before pthread_setspecific, which may allocate. */
    xa_tls_heap = h;
    pthread_setspecific(exit_key, h);
    int expected = 0;
    if (__atomic_compare_exchange_n(&post_init_done, &expected, 1, false, __ATOMIC_ACQ_REL,
                                    __ATOMIC_RELAXED))
        post_init();
    return h;
}

xa_heap *xa_heap_boot_thread(void)
{
    return xa_init_thread();
}

