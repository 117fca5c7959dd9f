/* os_stats.c: os layer, system calls of the statistics module (thread
 * creation with signals blocked, shared futexes, pid namespace, fchmod,
 * the sealed memfd the statistics live in).
 * Raw syscalls where another preloaded library could wrap libc; errno is
 * preserved so a statistics refresh never changes the program's errno. */
#define _GNU_SOURCE
#include "os_stats.h"
#include "os_fault.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int xa_os_stats_thread_start(void *(*fn)(void *), void *arg)
{
    if (XA_FAULT_POINT(THREAD))
        return EAGAIN;
    int saved = errno;
    pthread_attr_t attr;
    pthread_t tid;
    sigset_t all;
    int rc = pthread_attr_init(&attr);
    if (rc != 0)
        return rc;
    sigfillset(&all);
    /* The mask is set before the thread runs a single instruction, so no
     * signal aimed at the process can be delivered to it. */
    rc = pthread_attr_setsigmask_np(&attr, &all);
    if (rc == 0)
        rc = pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    /* A small stack: the loop needs a few KiB (the report buffers are
     * mapped, not on the stack). */
    if (rc == 0)
        rc = pthread_attr_setstacksize(&attr, 256 * 1024);
    if (rc == 0)
        rc = pthread_create(&tid, &attr, fn, arg);
    pthread_attr_destroy(&attr);
    errno = saved;
    return rc;
}

int xa_os_stats_futex_wait(uint32_t *word, uint32_t expected, uint64_t timeout_ns)
{
    int saved = errno;
    struct timespec ts = {(time_t)(timeout_ns / 1000000000u),
                          (long)(timeout_ns % 1000000000u)};
    long rc = syscall(SYS_futex, word, FUTEX_WAIT, expected, &ts, NULL, 0);
    int err = errno;
    errno = saved;
    return rc == 0 ? 0 : err;
}

void xa_os_stats_futex_wake(uint32_t *word)
{
    int saved = errno;
    syscall(SYS_futex, word, FUTEX_WAKE, 0x7fffffff, NULL, NULL, 0);
    errno = saved;
}

uint64_t xa_os_stats_pidns_ino(void)
{
    int saved = errno;
    struct stat st;
    long rc = syscall(SYS_newfstatat, AT_FDCWD, "/proc/self/ns/pid", &st, 0);
    errno = saved;
    return rc == 0 ? (uint64_t)st.st_ino : 0;
}

int xa_os_stats_fchmod(int fd, unsigned mode)
{
    if (XA_FAULT_POINT(FILE))
        return EPERM;
    int saved = errno;
    long rc = syscall(SYS_fchmod, fd, (mode_t)mode);
    int err = errno;
    errno = saved;
    return rc < 0 ? err : 0;
}

/* memfd flags and seals, spelled out for older headers. */
#ifndef MFD_CLOEXEC
#define MFD_CLOEXEC 0x0001U
#endif
#ifndef MFD_ALLOW_SEALING
#define MFD_ALLOW_SEALING 0x0002U
#endif
#ifndef MFD_NOEXEC_SEAL
#define MFD_NOEXEC_SEAL 0x0008U
#endif
#ifndef F_ADD_SEALS
#define F_ADD_SEALS 1033
#endif
#ifndef F_SEAL_SEAL
#define F_SEAL_SEAL 0x0001
#endif
#ifndef F_SEAL_SHRINK
#define F_SEAL_SHRINK 0x0002
#endif
#ifndef F_SEAL_GROW
#define F_SEAL_GROW 0x0004
#endif

/* Moves fd to the lowest free number >= min (close-on-exec kept); returns
 * the new fd, or fd itself when it cannot move. */
static long move_fd(long fd, int min)
{
    long nfd = syscall(SYS_fcntl, (int)fd, F_DUPFD_CLOEXEC, (unsigned long)min);
    if (nfd < 0)
        return fd;
    syscall(SYS_close, (int)fd);
    return nfd;
}

int xa_os_stats_memfd(const char *name, size_t size, int min_fd, struct xa_os_stats_fileid *id)
{
    if (XA_FAULT_POINT(FILE))
        return -ENOSPC;
    int saved = errno;
    /* MFD_NOEXEC_SEAL (Linux 6.3) is required where vm.memfd_noexec=2;
     * older kernels reject the unknown flag with EINVAL. */
    long fd = syscall(SYS_memfd_create, name, MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_NOEXEC_SEAL);
    if (fd < 0 && errno == EINVAL)
        fd = syscall(SYS_memfd_create, name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) {
        int err = errno;
        errno = saved;
        return -err;
    }
    if (min_fd > 2)
        fd = move_fd(fd, min_fd);
    if (fd <= 2)
        fd = move_fd(fd, 3);
    struct stat sb;
    long rc = fd <= 2 ? (errno = EMFILE, -1) : 0;
    if (rc == 0)
        rc = syscall(SYS_ftruncate, (int)fd, (off_t)size);
    if (rc == 0)
        rc = syscall(SYS_fchmod, (int)fd, (mode_t)0600);
    if (rc == 0)
        rc = syscall(SYS_fcntl, (int)fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
    if (rc == 0)
        rc = syscall(SYS_fstat, (int)fd, &sb);
    if (rc != 0) {
        int err = errno;
        syscall(SYS_close, (int)fd);
        errno = saved;
        return -err;
    }
    id->dev = (uint64_t)sb.st_dev;
    id->ino = (uint64_t)sb.st_ino;
    errno = saved;
    return (int)fd;
}

bool xa_os_stats_fd_is(int fd, const struct xa_os_stats_fileid *id)
{
    int saved = errno;
    struct stat sb;
    long rc = syscall(SYS_fstat, fd, &sb);
    errno = saved;
    return rc == 0 && (uint64_t)sb.st_dev == id->dev && (uint64_t)sb.st_ino == id->ino;
}

void *xa_os_stats_map(int fd, size_t size, void *fixed)
{
    int saved = errno;
    void *p = (void *)syscall(SYS_mmap, fixed, size, PROT_READ | PROT_WRITE,
                              MAP_SHARED | (fixed ? MAP_FIXED : 0), fd, (long)0);
    errno = saved;
    return p == MAP_FAILED ? NULL : p;
}
