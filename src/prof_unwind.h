/* prof_unwind.h: backtraces and symbol names for the profiler (profiling
 * build only). prof_unwind.c is the only file that includes libunwind.h or
 * asks the dynamic loader anything. Layer: beside prof, below it. */
#ifndef XA_PROF_UNWIND_H
#define XA_PROF_UNWIND_H

#include "common.h"

/* Records the address range of this library's code (found at boot), so
 * that its own frames are dropped from every stack. */
void xa_prof_unwind_boot(uintptr_t text_lo, uintptr_t text_hi);
/* Fills pcs with at most max return addresses of the calling thread,
 * innermost first (step by step at first, through libunwind's cache once
 * the thread has sampled enough to pay for it: see the .c), without the
 * frames inside this library (and without any frame beyond an inner one of
 * this library: see the .c). Returns the depth. Pre: the prof guard is set
 * (libunwind may allocate on first use); no allocator or prof lock held
 * (libunwind takes the loader's lock). */
unsigned xa_prof_backtrace(uintptr_t *pcs, unsigned max);
/* Writes a name for the return address pc ("function" or
 * "object+0xoffset") into buf. Pre: guard set, no prof lock held. */
void xa_prof_symbolize(uintptr_t pc, char *buf, size_t cap);

#endif /* XA_PROF_UNWIND_H */
