/* os_fault.h: fault injection in the os layer, for the fault-injection
 * test build only (-DXA_FAULT=1, build/libxalloc-fault.so and the fuzzer).
 * Every os function that can fail starts with XA_FAULT_POINT(kind); in any
 * other build the macro is the constant false and the line compiles away,
 * so the shipped libxalloc.so.1 carries no trace of it.
 * Control: XALLOC_FAULT="rule;rule;..." read once, at the first fault
 * point, with rules
 *   KIND:nth=N[:count=C]   fail calls N .. N+C-1 of KIND (C=0: from N on)
 *   KIND:ppm=P[:seed=S]    fail each call of KIND with probability P/10^6
 * KIND is mmap, mremap, madvise, mbind, file, thread or all. The fault
 * build also exports xalloc_fault_set(spec) (same syntax; "" turns every
 * rule off and resets the call counts) and xalloc_fault_count(kind) for
 * test drivers. Layer: os (calls nothing above). */
#ifndef XA_OS_FAULT_H
#define XA_OS_FAULT_H

#include <stdbool.h>

#ifndef XA_FAULT
#define XA_FAULT 0
#endif

enum xa_fault_kind {
    XA_FAULT_KIND_MMAP,    /* anonymous and file mappings */
    XA_FAULT_KIND_MREMAP,
    XA_FAULT_KIND_MADVISE, /* purge and THP advice */
    XA_FAULT_KIND_MBIND,
    XA_FAULT_KIND_FILE,    /* open, read, write, ftruncate, fchmod */
    XA_FAULT_KIND_THREAD,  /* helper thread creation */
    XA_FAULT_NKINDS
};

#if XA_FAULT
/* True when this call of the kind must fail (counts the call). */
bool xa_fault_hit(enum xa_fault_kind kind);
#define XA_FAULT_POINT(kind) __builtin_expect(xa_fault_hit(XA_FAULT_KIND_##kind), 0)
#else
#define XA_FAULT_POINT(kind) false
#endif

#endif /* XA_OS_FAULT_H */
