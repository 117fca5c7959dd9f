/* os_mem.c: os layer, the memory half: the only file that calls mmap,
 * munmap, mremap, madvise, mbind and prctl. Mechanism only; the policy
 * (when to purge, THP mode, which node) lives in the arena layer and pages.c.
 * Memory is never mapped writable and executable (units with
 * MemoryDenyWriteExecute=yes must keep working). errno is preserved. */
#define _GNU_SOURCE
#include "os.h"

#include <errno.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common.h"
#include "os_fault.h"

#ifndef PR_SET_VMA
#define PR_SET_VMA 0x53564d41
#define PR_SET_VMA_ANON_NAME 0
#endif

static void *raw_mmap(void *hint, size_t size, int prot, int flags)
{
    void *p = (void *)syscall(SYS_mmap, hint, size, prot, flags, -1, (long)0);
    return p == MAP_FAILED ? NULL : p;
}

void *xa_os_map_aligned(size_t size, size_t align)
{
    if (XA_FAULT_POINT(MMAP))
        return NULL;
    int saved = errno;
    void *result = NULL;
    /* Try the plain mapping first: the kernel often hands out aligned
     * addresses for large requests, and that costs one call. */
    void *p = raw_mmap(NULL, size, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE);
    if (p && ((uintptr_t)p & (align - 1)) == 0) {
        result = p;
    } else {
        if (p)
            syscall(SYS_munmap, p, size);
        size_t over = size + align - XA_OS_PAGE;
        if (over < size)
            goto out;
        char *q = raw_mmap(NULL, over, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE);
        if (!q)
            goto out;
        char *aligned = (char *)XA_ALIGN_UP((uintptr_t)q, align);
        size_t head = (size_t)(aligned - q);
        size_t tail = over - head - size;
        if (head)
            syscall(SYS_munmap, q, head);
        if (tail)
            syscall(SYS_munmap, aligned + size, tail);
        result = aligned;
    }
out:
    errno = saved;
    return result;
}

/* ThreadSanitizer builds (make check-sanitize) unmap through libc, which
 * TSan intercepts: it then forgets the range, and a later mapping at the
 * same address is not reported as racing with the old one. */
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define XA_OS_TSAN 1
#endif
#endif

void xa_os_unmap(void *p, size_t size)
{
    int saved = errno;
#ifdef XA_OS_TSAN
    munmap(p, size);
#else
    syscall(SYS_munmap, p, size);
#endif
    errno = saved;
}

/* madvise without touching the caller's errno; returns 0 or the errno. */
static int advise(void *p, size_t size, int advice)
{
    if (XA_FAULT_POINT(MADVISE))
        return ENOMEM;
    int saved = errno;
    long rc = syscall(SYS_madvise, p, size, advice);
    int err = errno;
    errno = saved;
    return rc ? err : 0;
}

int xa_os_purge_dontneed(void *p, size_t size)
{
    return advise(p, size, MADV_DONTNEED);
}

int xa_os_purge_free(void *p, size_t size)
{
    int err = advise(p, size, MADV_FREE);
    /* Kernels without MADV_FREE: fall back to the eager kind. */
    if (err == EINVAL)
        return xa_os_purge_dontneed(p, size);
    return err;
}

bool xa_os_page_resident(const void *p)
{
    unsigned char v = 1;
    if (mincore((void *)p, XA_OS_PAGE, &v) != 0)
        return true;
    return (v & 1) != 0;
}

int xa_os_advise_hugepage(void *p, size_t size, bool huge)
{
    return advise(p, size, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
}

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif

int xa_os_collapse_hugepage(void *p, size_t size)
{
    return advise(p, size, MADV_COLLAPSE);
}

int xa_os_remap_inplace(void *p, size_t old_size, size_t new_size)
{
    if (XA_FAULT_POINT(MREMAP))
        return ENOMEM;
    int saved = errno;
    void *q = (void *)syscall(SYS_mremap, p, old_size, new_size, (unsigned long)0);
    int err = errno;
    errno = saved;
    if (q == MAP_FAILED)
        return err ? err : ENOMEM;
    return q == p ? 0 : EFAULT;
}

int xa_os_remap_onto(void *p, size_t old_size, size_t new_size, void *dst)
{
    if (XA_FAULT_POINT(MREMAP))
        return ENOMEM;
    int saved = errno;
    void *q = (void *)syscall(SYS_mremap, p, old_size, new_size,
                              (unsigned long)(MREMAP_MAYMOVE | MREMAP_FIXED), dst);
    int err = q == MAP_FAILED ? errno : 0;
    errno = saved;
    return err;
}

void xa_os_name_range(void *p, size_t size, const char *name)
{
    /* Kernels built without CONFIG_ANON_VMA_NAME say EINVAL every time:
     * stop asking, one system call saved on every mapping. */
    static bool unsupported;
    if (__atomic_load_n(&unsupported, __ATOMIC_RELAXED))
        return;
    int saved = errno;
    if (syscall(SYS_prctl, PR_SET_VMA, (unsigned long)PR_SET_VMA_ANON_NAME, p, size, name) != 0 &&
        errno == EINVAL)
        __atomic_store_n(&unsupported, true, __ATOMIC_RELAXED);
    errno = saved;
}
