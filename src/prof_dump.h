/* prof_dump.h: heap-profile files, the collapsed-stack file and the leak
 * report (profiling build only). Layer: beside prof; reads its tables
 * through prof.h, writes through the os layer. */
#ifndef XA_PROF_DUMP_H
#define XA_PROF_DUMP_H

#include <stddef.h>
#include <stdint.h>

/* Writes prof_dir/xalloc.PID.SEQ.heap (gperftools heap_v2 text with
 * MAPPED_LIBRARIES) and xalloc.PID.SEQ.collapsed, each through a temporary
 * name and a rename that never replaces a file. why names the trigger
 * ("request", "interval", "final"). Puts the heap file's path, or why it
 * failed, into msg. Returns 0 or an errno value; the first failure is also
 * reported on stderr, later ones are not. Pre: guard set or settable. */
int xa_prof_dump(const char *why, char *msg, size_t cap);
/* Same, but returns EBUSY at once if another dump is running. */
int xa_prof_dump_try(const char *why, char *msg, size_t cap);
/* Prints the stacks still holding sampled memory to stderr, largest
 * estimate first (prof_leak at exit). */
void xa_prof_leak_report(void);
/* Finds the mapping of /proc/self/maps holding addr. Returns 0 or errno. */
int xa_prof_maps_range(uintptr_t addr, uintptr_t *lo, uintptr_t *hi);

/* In the fork child: resets the dump and symbol-cache locks (the fork
 * handlers do not take them; see prof_dump.c). */
void xa_prof_dump_fork_child(void);

#endif /* XA_PROF_DUMP_H */
