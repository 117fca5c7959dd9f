/* os_numa.h: os layer, the NUMA half: mbind, get_mempolicy, move_pages,
 * sched_getaffinity and the cheap "which CPU am I on" read. Mechanism only;
 * the policy (which node, which mode) lives in numa.c. Raw system calls,
 * no allocation, errno preserved. Contract: returns 0 or a positive errno
 * unless stated. */
#ifndef XA_OS_NUMA_H
#define XA_OS_NUMA_H

#include <stdbool.h>
#include <stddef.h>

/* Kernel mempolicy modes (linux/mempolicy.h), named here so callers need
 * no kernel header. */
enum {
    XA_MPOL_DEFAULT = 0,
    XA_MPOL_PREFERRED = 1,
    XA_MPOL_BIND = 2,
    XA_MPOL_INTERLEAVE = 3,
    XA_MPOL_LOCAL = 4,
    XA_MPOL_PREFERRED_MANY = 5,
    XA_MPOL_WEIGHTED_INTERLEAVE = 6,
};

/* mbind(2) of [p, p+size) with mode and a node mask of maxnode bits. */
int xa_os_mbind(void *p, size_t size, int mode, const unsigned long *mask,
                unsigned long maxnode);
/* The calling thread's memory policy: *mode and its node mask (maxnode
 * bits, cleared first). */
int xa_os_get_mempolicy(int *mode, unsigned long *mask, unsigned long maxnode);
/* move_pages(2) in query mode for the calling process: status[i] gets the
 * node of pages[i], or a negative errno (-ENOENT: not present). */
int xa_os_move_pages_query(unsigned long count, void **pages, int *status);
/* CPU affinity of the calling thread into mask (bytes long). Returns the
 * number of CPUs in it, or -errno. */
int xa_os_affinity(unsigned long *mask, size_t bytes);
/* CPU the calling thread runs on: from the rseq area glibc registered
 * (no system call) when there is one, else getcpu(2). -1 if unknown. */
int xa_os_cpu_now(void);
/* True when xa_os_cpu_now() costs no system call (rseq registered). */
bool xa_os_cpu_now_is_cheap(void);

#endif /* XA_OS_NUMA_H */
