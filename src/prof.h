/* prof.h: heap profiling (the profiling build, libxalloc-prof.so.1, only).
 * Side module: sampling by bytes, the tables of sampled blocks and interned
 * stacks, dumps and the leak report. It calls down into meta, lock, config,
 * os and util, and into prof_unwind (libunwind) and prof_dump (files); never
 * up into heap or arena.
 *
 * The entry points in malloc.c count every allocation against the sample
 * distance (xa_prof_sample_due) and allocate a sampled one their own way
 * (see "sampled blocks" in malloc.c); init.c calls xa_prof_boot() and the
 * fork handlers. In libxalloc.so.1 (XA_PROF == 0) the hooks are empty
 * inlines and no prof*.c file is compiled, so the plain library contains
 * no profiling code at all. */
#ifndef XA_PROF_H
#define XA_PROF_H

#include <stdbool.h>

#include "common.h"

/* ---- fast paths (prof build only) ---- */

/* Bytes this thread may still allocate before the next sample. Starts at
 * 0, so a thread's first allocation takes the slow path, which sets it up:
 * to a distance that never runs out before boot is done (re-checked every
 * MiB) and with prof:false, so that the fast path is one decrement and a
 * sign test whatever the options. */
extern __thread int64_t xa_prof_left __attribute__((tls_model("initial-exec")));
/* Set once at boot when prof:true (sampled blocks may exist); tested only
 * on slow paths and by realloc. */
#if XA_PROF
extern bool xa_prof_on;
#else
#define xa_prof_on false
#endif

/* Counts size bytes against this thread's sample distance; true when the
 * distance ran out: the caller then asks xa_prof_sample_begin() whether
 * to allocate this request as a sampled block. Deciding before the
 * allocation keeps the fast path free of live registers across it. */
XA_FAST_PATH bool xa_prof_sample_due(size_t size)
{
#if XA_PROF
    int64_t left = (int64_t)((uint64_t)xa_prof_left - size);
    xa_prof_left = left;
    return xa_unlikely(left < 0);
#else
    (void)size;
    return false;
#endif
}

/* ---- sampled blocks (prof build only) ----
 * malloc.c places a sampled block so that its frees reach a slow path by
 * themselves: a small one (slab) is handed out past a header that holds
 * its record (tagged); a big one (large or huge) keeps its record in its
 * run descriptor (xa_slab.prof_rec), which the big blocks' free path,
 * never a fast path, reads. No table and no lock: a sample whose stack
 * the cache knows is recorded and dropped by its thread alone. */

/* The sample's own paths: not cold (XA_SLOW_PATH), which would have gcc
 * build them and all they inline for size; with blocks near the sample
 * distance one allocation in a few takes them (64 KiB blocks: 12%). */
#define XA_PROF_PATH __attribute__((noinline))

/* Re-arms the distance after xa_prof_sample_due() said it ran out; true
 * when this allocation is to be sampled (prof:true, booted, the thread's
 * counter armed, not inside an unwind, not in a fork child, prof_active). */
XA_PROF_PATH bool xa_prof_sample_begin(void);
/* Records block p (user pointer, size bytes requested): unwinds, interns
 * the stack, counts. slot: where the block keeps its record (its header,
 * or its run descriptor's prof_rec); NULL there when none could be made.
 * Returns p. Pre: xa_prof_sample_begin() returned true; no allocator lock
 * held; only this thread can reach p. */
XA_PROF_PATH void *xa_prof_sample_record(void *p, size_t size, void **slot);
/* A tagged block with record rec is freed: it leaves the profile. */
XA_PROF_PATH void xa_prof_sample_drop(void *rec);

/* The record in *slot (not NULL) when it is block p's; NULL when p is not
 * sampled. A descriptor's slot may hold a stale record (a huge chunk's
 * header reused from the huge cache, say): a record knows its block, and
 * a released one none. The caller clears *slot when it takes the record.
 * Pre: the caller frees, moves or resizes p (no other thread can). */
XA_PROF_PATH void *xa_prof_sample_of(void *const *slot, const void *p);
/* Big block p is freed: its record, if *slot holds p's, leaves the
 * profile and *slot is cleared. */
XA_PROF_PATH void xa_prof_sample_free(void **slot, const void *p);

/* ---- realloc ----
 * A block that grows by realloc counts only its growth against the sample
 * distance: a block built up by small reallocs is then sampled with the
 * probability 1 - exp(-size / prof_sample) of its final size, as if
 * allocated at once, and a growing buffer costs no more samples than a
 * malloc of its final size. A sampled block stays sampled (same stack)
 * through realloc: its record is taken out of the profile (and the table)
 * before, and put back for the block realloc returns after. */
/* Takes record rec (claimed, or a tagged block's) out of the profile;
 * returns it. */
XA_SLOW_PATH void *xa_prof_sample_take(void *rec);
/* Puts a taken record back for block p of size bytes (growth counts as
 * allocated bytes of its stack; SIZE_MAX: the size it had, a realloc that
 * failed), stored in *slot; p NULL: the block was freed, the record is
 * released. */
XA_SLOW_PATH void xa_prof_sample_put(void *rec, void *p, size_t size, void **slot);

/* The sampled big block of record rec (in its slot) now has size bytes,
 * where it was: the record stays, its counts follow. */
XA_SLOW_PATH void xa_prof_sample_resize(void *rec, size_t size);

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
 * lock (directly, or by folding a thread's tally into them) and read
 * racily, through xa_prof_counter(), by the collapsed-stack writer and
 * the leak report after a fold. */
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

/* A stack's counter as a reader shows it: the counters may dip below 0
 * between folds of the threads' tallies (see prof.c), which a reader
 * that did not just call xa_prof_tables_lock() may see: 0 then. */
static inline uint64_t xa_prof_counter(const uint64_t *c)
{
    uint64_t v = __atomic_load_n(c, __ATOMIC_RELAXED);
    return (int64_t)v < 0 ? 0 : v;
}

/* Newest interned stack (then next_all); acquire-loaded by readers. */
xa_prof_stack *xa_prof_stacks_head(void);
/* Number of interned stacks. */
size_t xa_prof_stack_count(void);
/* Holds the table lock around a consistent read of every counter (taking
 * it folds every thread's tally into the stacks' counters). */
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
