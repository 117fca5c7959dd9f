/* os_stats.c: os layer, system calls of the statistics module (thread
 * creation with signals blocked, shared futexes, pid namespace, fchmod).
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
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int xa_os_stats_thread_start(void *(*fn)(void *), void *arg, const char *name)
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
    if (rc == 0 && name)
        (void)pthread_setname_np(tid, name);
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
