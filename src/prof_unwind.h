/* prof_unwind.h: backtraces and symbol names for the profiler (profiling
 * build only). prof_unwind.c is the only file that includes libunwind.h or
 * asks the dynamic loader anything. Layer: beside prof, below it. */
#ifndef XA_PROF_UNWIND_H
#define XA_PROF_UNWIND_H

#include <stdbool.h>

#include "common.h"
#include "prof.h"

/* Records the address range of this library's code (found at boot), so
 * that its own frames are dropped from every stack. */
void xa_prof_unwind_boot(uintptr_t text_lo, uintptr_t text_hi);
/* Return addresses that one walk gives at most: the depth limit plus a
 * few frames of this library (the recorder's, the entry point's). */
#define XA_PROF_RAW_MAX (XA_PROF_MAX_DEPTH + 8)
/* Fills out with at most max (XA_PROF_RAW_MAX) return addresses of the
 * calling thread, innermost first, from the caller of this function
 * outwards, as the walk gives them (step by step at first, through
 * libunwind's cache once the thread has sampled enough to pay for it: see
 * the .c). Returns how many. Pre: the prof guard is set (libunwind may
 * allocate on first use); no allocator or prof lock held (libunwind takes
 * the loader's lock). */
unsigned xa_prof_backtrace_raw(uintptr_t *out, unsigned max);
/* The stack a sample keeps from raw[0..n): at most max (the depth limit)
 * return addresses into pcs, without the frames inside this library and
 * without any frame beyond an inner one of this library (see the .c).
 * Returns the depth; *used: how many of raw[] decided it (a lookup of the
 * stack cache compares that many). Pure. */
unsigned xa_prof_backtrace_filter(const uintptr_t *raw, unsigned n, uintptr_t *pcs, unsigned max,
                                  unsigned *used);
/* The top of the calling thread's stack when anchor (a frame of the
 * caller) lies on it and the stack cache may read [anchor, top); 0
 * otherwise (see the .c). */
uintptr_t xa_prof_stack_top(uintptr_t anchor);
/* True when pc is the signal return trampoline of a handler (a chain that
 * goes on on another stack, maybe). */
bool xa_prof_is_sigreturn(uintptr_t pc);
/* An address in libc's text, and (at boot) libc's text mapping: the one
 * place xa_prof_is_sigreturn() may read code. */
uintptr_t xa_prof_unwind_libc_probe(void);
void xa_prof_unwind_boot_libc(uintptr_t lo, uintptr_t hi);
/* Writes a name for the return address pc ("function" or
 * "object+0xoffset") into buf. Pre: guard set, no prof lock held. */
void xa_prof_symbolize(uintptr_t pc, char *buf, size_t cap);

#endif /* XA_PROF_UNWIND_H */
