/* prof_stack_cache.h: a thread's cache of recently sampled call stacks
 * (profiling build only). Layer: bottom of prof; pure functions over
 * caller-supplied memory, no state, no system call, no libc; the Check
 * suite tests/prof/check_prof_stack_cache.c drives them over made-up
 * stacks.
 *
 * A sample whose call stack repeats (a loop allocating through the same
 * path, the common case) skips the unwind: an entry remembers, for one key
 * (the recorder's return address and frame address), the stack it found
 * and where in stack memory each return address of the chain was saved.
 * A lookup compares those words with the values recorded: all equal, the
 * chain is the one unwound before and the interned stack is reused; one
 * differs (another caller at the same depth, an alloca of another size, a
 * longjmp), the lookup misses and the caller unwinds.
 *
 * Memory safety, the one thing a wrong guess must never cost. The words
 * read lie in [anchor, top), where top is the top of the thread stack that
 * holds anchor (prof_unwind.c finds it, or refuses: then nothing is
 * cached), and anchor is the caller's own frame: the live part of the
 * stack the thread runs on. A fill scans upwards from anchor for each
 * return address in turn, never past top nor more than XA_SC_GAP_MAX
 * bytes past the previous one; a lookup reads only offsets a fill found
 * below top for the same anchor on the same thread. What a hit cannot
 * prove is that every word it did not read is unchanged: a chain that
 * differs only beyond the words compared, or a stale copy of a return
 * address found by the scan before the real one, can charge a sample to
 * the stack remembered. That misattributes one statistical sample; it
 * never reads outside the thread's stack. */
#ifndef XA_PROF_STACK_CACHE_H
#define XA_PROF_STACK_CACHE_H

#include <stdbool.h>
#include <stdint.h>

/* Entries per thread (direct-mapped by key). */
#define XA_SC_ENTRIES 8
/* Most return addresses one entry checks: the recorder's own frames, the
 * depth limit and one frame past it. */
#define XA_SC_FRAMES 80
/* A frame bigger than this (a large alloca or array) is not cached: the
 * scan gives up rather than read that far. */
#define XA_SC_GAP_MAX ((uintptr_t)64 << 10)

/* A word of stack memory, read whatever type the frame stored there. */
typedef uintptr_t __attribute__((may_alias)) xa_sc_word;

typedef struct xa_sc_entry {
    uintptr_t ra, anchor; /* the key; stack NULL: empty */
    void *stack;          /* the interned stack found for it */
    uint32_t n;           /* words compared */
    uint8_t strikes;      /* refills of this key (its chain changed) */
    uint8_t wait;         /* misses since the last (re)fill */
    /* A key that missed once: a second miss of it fills the entry (a
     * stack seen once is not worth a scan). */
    uintptr_t seen_ra, seen_anchor;
    uint16_t step[XA_SC_FRAMES]; /* word i is step[i] words above word i-1 (anchor) */
    uintptr_t val[XA_SC_FRAMES];
} xa_sc_entry;

typedef struct xa_sc_cache {
    struct xa_sc_cache *next; /* free list */
    xa_sc_entry e[XA_SC_ENTRIES];
} xa_sc_cache;

static inline xa_sc_entry *xa_sc_slot(xa_sc_cache *c, uintptr_t ra, uintptr_t anchor)
{
    uint64_t h = ((uint64_t)ra ^ ((uint64_t)anchor << 7)) * 0x9e3779b97f4a7c15ULL;
    return &c->e[h >> 61];
}

/* The stack remembered for (ra, anchor) when every word recorded still
 * holds its value; NULL otherwise. Pre: anchor is the caller's frame on
 * the thread that filled the entry (see the safety note above). */
__attribute__((no_sanitize_address)) static inline void *
xa_sc_lookup(const xa_sc_entry *e, uintptr_t ra, uintptr_t anchor)
{
    if (e->ra != ra || e->anchor != anchor || !e->stack)
        return 0;
    const xa_sc_word *w = (const xa_sc_word *)anchor;
    for (uint32_t i = 0; i < e->n; i++) {
        w += e->step[i];
        if (*w != e->val[i])
            return 0;
    }
    return e->stack;
}

/* Fills e for key (ra, anchor) with stack and the n return addresses
 * chain[0..n) that decide it, chain[0] being the one saved nearest to
 * anchor, by finding each in stack memory above the previous one. Reads
 * only words in [anchor, top), at most XA_SC_GAP_MAX bytes above the last
 * one found. False (e left empty) when one is not found, n is too big or
 * a value is 0. Pre: anchor and top are 8-aligned, anchor <= top, and
 * [anchor, top) is mapped (the live part of the thread's stack). */
__attribute__((no_sanitize_address)) static inline bool
xa_sc_fill(xa_sc_entry *e, uintptr_t ra, uintptr_t anchor, uintptr_t top, const uintptr_t *chain,
           uint32_t n, void *stack)
{
    e->stack = 0;
    if (n == 0 || n > XA_SC_FRAMES || anchor > top)
        return false;
    const xa_sc_word *w = (const xa_sc_word *)anchor;
    const xa_sc_word *end = (const xa_sc_word *)top;
    for (uint32_t i = 0; i < n; i++) {
        uintptr_t v = chain[i];
        if (v == 0)
            return false;
        /* The first word above the previous one (anchor itself for the
         * first) holding v, within the gap and below top. */
        const xa_sc_word *from = i ? w + 1 : w;
        const xa_sc_word *lim = end;
        if ((uintptr_t)end - (uintptr_t)from > XA_SC_GAP_MAX)
            lim = from + XA_SC_GAP_MAX / sizeof(xa_sc_word);
        const xa_sc_word *at = from;
        while (at < lim && *at != v)
            at++;
        if (at >= lim)
            return false;
        uintptr_t step = (uintptr_t)(at - w);
        if (step > UINT16_MAX)
            return false;
        e->step[i] = (uint16_t)step;
        e->val[i] = v;
        w = at;
    }
    e->ra = ra;
    e->anchor = anchor;
    e->n = n;
    e->stack = stack;
    return true;
}

/* What to do after a lookup of key (ra, anchor) in e missed: true when
 * this miss should fill e (its unwind is then scanned), false when the
 * stack is used once and e kept. A key fills on its second miss in a row
 * of its slot; a filled key whose lookups miss (its chain changed under
 * the same key) refills after 2 misses, then 4, 8, ... up to 128, so that
 * a key whose chain keeps changing costs few scans. */
static inline bool xa_sc_should_fill(xa_sc_entry *e, uintptr_t ra, uintptr_t anchor)
{
    if (e->stack && e->ra == ra && e->anchor == anchor) {
        if (++e->wait < (2u << e->strikes))
            return false;
        e->wait = 0;
        if (e->strikes < 6)
            e->strikes++;
        return true;
    }
    if (e->seen_ra == ra && e->seen_anchor == anchor) {
        e->seen_ra = e->seen_anchor = 0;
        e->strikes = 0;
        e->wait = 0;
        return true;
    }
    e->seen_ra = ra;
    e->seen_anchor = anchor;
    return false;
}

#endif /* XA_PROF_STACK_CACHE_H */
