/* prof.h: heap profiling (the profiling build, libxalloc-prof.so.1, only).
 * Side module: sampling by bytes, the tables of sampled blocks and interned
 * stacks, dumps and the leak report. It calls down into meta, lock, config,
 * os and util, and into prof_unwind (libunwind) and prof_dump (files); never
 * up into heap or arena.
 *
 * The entry points in malloc.c pass every allocation through
 * xa_prof_on_alloc() and every free through xa_prof_on_free(); init.c calls
 * xa_prof_boot() and the fork handlers. In libxalloc.so.1 (XA_PROF == 0)
 * the hooks are empty inlines and no prof*.c file is compiled, so the plain
 * library contains no profiling code at all. */
#ifndef XA_PROF_H
#define XA_PROF_H

#include <stdbool.h>

#include "common.h"

/* ---- fast paths (prof build only) ---- */

/* Bytes this thread may still allocate before the next sample. Starts at
 * 0, so a thread's first allocation takes the slow path, which sets it up
 * (to "never" when prof is off). One decrement per allocation. */
extern __thread int64_t xa_prof_left __attribute__((tls_model("initial-exec")));
/* Set once at boot when prof:true; with prof:false the hooks cost one
 * load and branch each, on a byte that is never written. */
#if XA_PROF
extern bool xa_prof_on;
#else
#define xa_prof_on false
#endif

/* One byte per 4 KiB page of address space (modulo 4 GiB): non-zero when a
 * sampled block starts in a page of that index. A free reads one byte, and
 * takes the slow path only for blocks on such pages (about 1 free in 130 at
 * the default rate, whatever the heap size). Indexing by page keeps the
 * written bytes together: a heap touches one page of the filter per 16 MiB
 * of its address range. All zero when prof is off (untouched .bss). */
#define XA_PROF_FILTER_BITS 20
extern uint8_t xa_prof_filter[(size_t)1 << XA_PROF_FILTER_BITS];

static inline size_t xa_prof_filter_index(const void *p)
{
    return (size_t)((uintptr_t)p >> 12) & (((size_t)1 << XA_PROF_FILTER_BITS) - 1);
}

/* Records p (if not NULL) as a sample of size bytes; returns p. */
XA_SLOW_PATH void *xa_prof_alloc_slow(void *p, size_t size);
/* Removes p from the profile if it is a sampled block; returns p. */
XA_SLOW_PATH void *xa_prof_free_slow(void *p);

/* Counts size bytes against this thread's sample distance; true when the
 * allocation of those bytes is to be sampled: the caller then passes its
 * result through xa_prof_alloc_slow(). Deciding before the allocation
 * keeps the fast path free of live registers across it. */
XA_FAST_PATH bool xa_prof_sample_due(size_t size)
{
#if XA_PROF
    if (!xa_prof_on)
        return false;
    int64_t left = (int64_t)((uint64_t)xa_prof_left - size);
    xa_prof_left = left;
    return xa_unlikely(left < 0);
#else
    (void)size;
    return false;
#endif
}

/* The same for callers that have the result already: returns p. Pre: no
 * allocator lock held (a sample unwinds). */
XA_FAST_PATH void *xa_prof_on_alloc(void *p, size_t size)
{
#if XA_PROF
    if (xa_prof_sample_due(size))
        return xa_prof_alloc_slow(p, size);
#else
    (void)size;
#endif
    return p;
}

/* True when p may be a sampled block (its page's filter byte is set): the
 * caller then calls xa_prof_free_slow(p) before freeing it. p may be NULL
 * or any pointer the allocator would accept. */
XA_FAST_PATH bool xa_prof_maybe_sampled(const void *p)
{
#if XA_PROF
    return xa_unlikely(xa_prof_on && __atomic_load_n(&xa_prof_filter[xa_prof_filter_index(p)],
                                                     __ATOMIC_RELAXED) != 0);
#else
    (void)p;
    return false;
#endif
}

/* ---- realloc ----
 * A block that grows by realloc counts only its growth against the sample
 * distance: a block built up by small reallocs is then sampled with the
 * probability 1 - exp(-size / prof_sample) of its final size, as if
 * allocated at once, and a growing buffer costs no more samples than a
 * malloc of its final size. A sampled block stays sampled (same stack)
 * through realloc. Usage, p not NULL:
 *   void *t = xa_prof_realloc_take(p);  (before; NULL unless p is sampled)
 *   q = realloc(p, size);
 *   return xa_prof_realloc_done(p, q, usable(p) before, usable(q), size, t);
 * (only when xa_prof_on: with prof:false realloc pays nothing). */
XA_SLOW_PATH void *xa_prof_realloc_take_slow(void *p);
XA_SLOW_PATH void *xa_prof_realloc_keep(void *p, void *q, size_t size, void *taken);

XA_FAST_PATH void *xa_prof_realloc_take(void *p)
{
    return xa_prof_maybe_sampled(p) ? xa_prof_realloc_take_slow(p) : NULL;
}

XA_FAST_PATH void *xa_prof_realloc_done(void *p, void *q, size_t old, size_t usable,
                                        size_t size, void *taken)
{
    if (xa_unlikely(taken != NULL))
        return xa_prof_realloc_keep(p, q, size, taken);
    /* Usable sizes on both sides: growth inside a size class is free, a
     * move to the next class counts the whole step. */
    if (q && xa_prof_sample_due(usable > old ? usable - old : 0))
        return xa_prof_alloc_slow(q, size);
    return q;
}

/* ---- process hooks (init.c), prof build only ---- */

#if XA_PROF
/* Once, after the first thread heap exists (may allocate). Reads the prof
 * options; with prof:true makes the tables and sets xa_stats_dump_hook. */
void xa_prof_boot(void);
/* Fork handlers: take the profiler's locks before the allocator's (rank
 * order), release them after. The child never unwinds again (it may be
 * between fork and exec, where the loader's locks can be held by threads
 * that no longer exist), but it keeps its profile and can dump it. */
void xa_prof_fork_prepare(void);
void xa_prof_fork_parent(void);
void xa_prof_fork_child(void);
#else
/* The plain library: nothing to call, at any optimisation level. */
static inline void xa_prof_boot(void) {}
static inline void xa_prof_fork_prepare(void) {}
static inline void xa_prof_fork_parent(void) {}
static inline void xa_prof_fork_child(void) {}
#endif

/* ---- inside the prof module ---- */

#define XA_PROF_MAX_DEPTH 64

/* An interned stack. Never freed; its counters are updated under the prof
 * lock and read racily by the collapsed-stack writer and the leak report. */
typedef struct xa_prof_stack {
    struct xa_prof_stack *next;     /* hash chain */
    struct xa_prof_stack *next_all; /* list of every stack, newest first */
    uint64_t hash;
    uint64_t live_count, live_bytes; /* sampled blocks still allocated */
    uint64_t live_est;               /* unbiased estimate of live bytes */
    uint64_t alloc_count, alloc_bytes; /* every sample ever taken */
    uint32_t depth;
    uintptr_t pcs[];
} xa_prof_stack;

/* Newest interned stack (then next_all); acquire-loaded by readers. */
xa_prof_stack *xa_prof_stacks_head(void);
/* Number of interned stacks. */
size_t xa_prof_stack_count(void);
/* Holds the table lock around a consistent read of every counter. */
void xa_prof_tables_lock(void);
void xa_prof_tables_unlock(void);
/* Sets/clears this thread's re-entrancy guard: while set, allocations are
 * served unsampled. Returns the previous value. */
bool xa_prof_guard(bool on);
/* Mean sample distance in bytes (prof_sample at boot). */
uint64_t xa_prof_rate(void);

/* prof:true at boot and the tables exist. */
bool xa_prof_enabled(void);

#endif /* XA_PROF_H */
