/* os_numa.c: os layer, the NUMA system calls (see os_numa.h). Raw
 * syscalls: libnuma's wrappers allocate bitmasks with malloc, and this code
 * runs inside malloc's slow paths with arena locks held. */
#define _GNU_SOURCE
#include "os_numa.h"

#include <errno.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common.h"
#include "os_fault.h"

int xa_os_mbind(void *p, size_t size, int mode, const unsigned long *mask,
                unsigned long maxnode)
{
    if (XA_FAULT_POINT(MBIND))
        return EIO;
    int saved = errno;
    long rc = syscall(SYS_mbind, p, size, (unsigned long)mode, mask, maxnode, 0UL);
    int err = rc ? errno : 0;
    errno = saved;
    return err;
}

int xa_os_get_mempolicy(int *mode, unsigned long *mask, unsigned long maxnode)
{
    if (XA_FAULT_POINT(MBIND))
        return EIO; /* a NUMA policy call, counted with mbind */
    for (unsigned long i = 0; i < (maxnode + 8 * sizeof(long) - 1) / (8 * sizeof(long)); i++)
        mask[i] = 0;
    int saved = errno;
    long rc = syscall(SYS_get_mempolicy, mode, mask, maxnode, NULL, 0UL);
    int err = rc ? errno : 0;
    errno = saved;
    return err;
}

int xa_os_move_pages_query(unsigned long count, void **pages, int *status)
{
    if (XA_FAULT_POINT(MBIND))
        return EIO;
    int saved = errno;
    /* nodes == NULL: query only, nothing moves. */
    long rc = syscall(SYS_move_pages, 0L, count, pages, NULL, status, 0L);
    int err = rc < 0 ? errno : 0;
    errno = saved;
    return err;
}

int xa_os_affinity(unsigned long *mask, size_t bytes)
{
    int saved = errno;
    long n = syscall(SYS_sched_getaffinity, 0L, bytes, mask);
    int err = errno;
    errno = saved;
    if (n < 0)
        return -err;
    int count = 0;
    for (size_t i = 0; i < (size_t)n / sizeof(unsigned long); i++)
        count += __builtin_popcountl(mask[i]);
    /* The kernel wrote n bytes; clear the rest so callers can scan all. */
    for (size_t i = (size_t)n / sizeof(unsigned long); i < bytes / sizeof(unsigned long); i++)
        mask[i] = 0;
    return count;
}

/* glibc >= 2.35 registers an rseq area per thread and exports where it is;
 * weak so that the library still loads on an older glibc. */
extern const ptrdiff_t __rseq_offset __attribute__((weak));
extern const unsigned int __rseq_size __attribute__((weak));

static inline const volatile uint32_t *rseq_cpu_id(void)
{
    if (!&__rseq_size || !&__rseq_offset || __rseq_size == 0)
        return NULL;
    /* struct rseq { u32 cpu_id_start; u32 cpu_id; ... } at tp + offset. */
    char *tp = __builtin_thread_pointer();
    return (const volatile uint32_t *)(tp + __rseq_offset + 4);
}

bool xa_os_cpu_now_is_cheap(void)
{
    const volatile uint32_t *id = rseq_cpu_id();
    return id && (int32_t)*id >= 0;
}

int xa_os_cpu_now(void)
{
    const volatile uint32_t *id = rseq_cpu_id();
    if (id) {
        int32_t cpu = (int32_t)*id;
        if (cpu >= 0)
            return cpu;
    }
    unsigned cpu = 0;
    int saved = errno;
    long rc = syscall(SYS_getcpu, &cpu, NULL, NULL);
    errno = saved;
    return rc ? -1 : (int)cpu;
}
