/* os_file.c: os layer, the process/time/file half. The only file besides
 * the other src/os_*.c allowed to make system calls. Calls are raw syscalls
 * (syscall(2)) where a libc wrapper could be interposed by another preloaded
 * library or could allocate; errno is preserved so that an allocator call
 * that succeeds never changes it. */
#define _GNU_SOURCE
#include "os.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/prctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "os_fault.h"

extern char **environ;

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE 1u /* linux/fs.h; stdio.h has it only with stdio */
#endif

/* Clock id in nanoseconds; 0 if it cannot be read. */
static uint64_t clock_ns(clockid_t id)
{
    struct timespec ts;
    if (clock_gettime(id, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t xa_os_now_ns(void)
{
    return clock_ns(CLOCK_MONOTONIC); /* vDSO: no syscall, no errno */
}

uint64_t xa_os_thread_cpu_ns(void)
{
    return clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

void xa_os_sleep_ns(uint64_t ns)
{
    int saved = errno;
    struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
    syscall(SYS_nanosleep, &ts, NULL);
    errno = saved;
}

void xa_os_futex_wait(uint32_t *word, uint32_t expected, uint64_t timeout_ns)
{
    int saved = errno;
    struct timespec ts = {(time_t)(timeout_ns / 1000000000u), (long)(timeout_ns % 1000000000u)};
    syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, expected, timeout_ns ? &ts : NULL, NULL, 0);
    errno = saved;
}

void xa_os_futex_wake_all(uint32_t *word)
{
    int saved = errno;
    syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 0x7fffffff, NULL, NULL, 0);
    errno = saved;
}

static int membarrier_cmd(int cmd)
{
    int saved = errno;
    int rc = syscall(SYS_membarrier, cmd, 0, 0) == 0 ? 0 : errno;
    errno = saved;
    return rc;
}

int xa_os_membarrier_register(void)
{
    return membarrier_cmd(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED);
}

int xa_os_membarrier(void)
{
    return membarrier_cmd(MEMBARRIER_CMD_PRIVATE_EXPEDITED);
}

void xa_os_set_thread_name(const char *name)
{
    int saved = errno;
    syscall(SYS_prctl, PR_SET_NAME, name, 0UL, 0UL, 0UL);
    errno = saved;
}

int xa_os_current_cpu(int *node)
{
    unsigned cpu = 0, nd = 0;
    int saved = errno;
    long rc = syscall(SYS_getcpu, &cpu, &nd, NULL);
    errno = saved;
    if (rc != 0) {
        if (node)
            *node = -1;
        return -1;
    }
    if (node)
        *node = (int)nd;
    return (int)cpu;
}

int xa_os_ncpus(void)
{
    unsigned long mask[64];
    int saved = errno;
    long n = syscall(SYS_sched_getaffinity, 0, sizeof mask, mask);
    errno = saved;
    if (n <= 0)
        return 1;
    int count = 0;
    for (long i = 0; i < n / (long)sizeof(unsigned long); i++)
        count += __builtin_popcountl(mask[i]);
    return count > 0 ? count : 1;
}

pid_t xa_os_getpid(void) { return (pid_t)syscall(SYS_getpid); }
pid_t xa_os_gettid(void) { return (pid_t)syscall(SYS_gettid); }
uid_t xa_os_geteuid(void) { return (uid_t)syscall(SYS_geteuid); }

bool xa_os_secure_mode(void)
{
    return getauxval(AT_SECURE) != 0;
}

const char *xa_os_getenv(const char *name)
{
    if (xa_os_secure_mode() || !environ || !name)
        return NULL;
    size_t n = strlen(name);
    for (char **e = environ; *e; e++) {
        if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
            return *e + n + 1;
    }
    return NULL;
}

const char *xa_os_exe_name(char *buf, size_t len)
{
    char path[4096];
    int saved = errno;
    long n = syscall(SYS_readlink, "/proc/self/exe", path, sizeof path - 1);
    errno = saved;
    if (len == 0)
        return buf;
    if (n <= 0) {
        buf[0] = 0;
        return buf;
    }
    path[n] = 0;
    /* A deleted executable reads "prog (deleted)": keep the real name. */
    static const char deleted[] = " (deleted)";
    size_t dl = sizeof deleted - 1;
    if ((size_t)n > dl && strcmp(path + n - dl, deleted) == 0)
        path[n - dl] = 0;
    const char *base = path;
    for (const char *p = path; *p; p++)
        if (*p == '/')
            base = p + 1;
    size_t i = 0;
    for (; base[i] && i + 1 < len; i++)
        buf[i] = base[i];
    buf[i] = 0;
    return buf;
}

static int open_flags(const char *path, int flags, unsigned mode)
{
    if (XA_FAULT_POINT(FILE))
        return -EMFILE;
    int saved = errno;
    long fd = syscall(SYS_openat, AT_FDCWD, path, flags | O_CLOEXEC, mode);
    int err = errno;
    errno = saved;
    return fd < 0 ? -err : (int)fd;
}

int xa_os_open_read(const char *path)
{
    /* O_NONBLOCK: a FIFO named as a config file must not hang start-up. */
    return open_flags(path, O_RDONLY | O_NONBLOCK | O_NOCTTY, 0);
}

int xa_os_open_create_excl(const char *path, unsigned mode)
{
    return open_flags(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW, mode);
}

int xa_os_open_rdwr(const char *path)
{
    return open_flags(path, O_RDWR | O_NOFOLLOW, 0);
}

ssize_t xa_os_read(int fd, void *buf, size_t len)
{
    if (XA_FAULT_POINT(FILE))
        return -EIO;
    int saved = errno;
    size_t done = 0;
    while (done < len) {
        long n = syscall(SYS_read, fd, (char *)buf + done, len - done);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            int err = errno;
            errno = saved;
            return -err;
        }
        if (n == 0)
            break;
        done += (size_t)n;
    }
    errno = saved;
    return (ssize_t)done;
}

int xa_os_write_all(int fd, const void *buf, size_t len)
{
    int saved = errno;
    size_t done = 0;
    while (done < len) {
        long n = syscall(SYS_write, fd, (const char *)buf + done, len - done);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            int err = errno;
            errno = saved;
            return -err;
        }
        done += (size_t)n;
    }
    errno = saved;
    return 0;
}

void xa_os_close(int fd)
{
    int saved = errno;
    syscall(SYS_close, fd);
    errno = saved;
}

int xa_os_ftruncate(int fd, size_t size)
{
    if (XA_FAULT_POINT(FILE))
        return ENOSPC;
    int saved = errno;
    long rc = syscall(SYS_ftruncate, fd, (off_t)size);
    int err = errno;
    errno = saved;
    return rc < 0 ? err : 0;
}

void *xa_os_map_file(int fd, size_t size, bool writable)
{
    if (XA_FAULT_POINT(MMAP))
        return NULL;
    int saved = errno;
    void *p = (void *)syscall(SYS_mmap, NULL, size,
                              PROT_READ | (writable ? PROT_WRITE : 0),
                              MAP_SHARED, fd, (long)0);
    errno = saved;
    return p == MAP_FAILED ? NULL : p;
}

int xa_os_unlink(const char *path)
{
    int saved = errno;
    long rc = syscall(SYS_unlinkat, AT_FDCWD, path, 0);
    int err = errno;
    errno = saved;
    return rc < 0 ? err : 0;
}

int xa_os_dir_writable(const char *path)
{
    if (XA_FAULT_POINT(FILE))
        return EACCES;
    int saved = errno;
    struct stat st;
    long rc = syscall(SYS_newfstatat, AT_FDCWD, path, &st, 0);
    if (rc == 0 && !S_ISDIR(st.st_mode)) {
        errno = saved;
        return ENOTDIR;
    }
    if (rc == 0)
        rc = syscall(SYS_faccessat, AT_FDCWD, path, W_OK | X_OK, 0);
    int err = errno;
    errno = saved;
    return rc < 0 ? err : 0;
}

int64_t xa_os_file_size(int fd)
{
    int saved = errno;
    struct stat st;
    long rc = syscall(SYS_fstat, fd, &st);
    int err = errno;
    errno = saved;
    return rc < 0 ? -err : (int64_t)st.st_size;
}

int xa_os_rename_noreplace(const char *from, const char *to)
{
    int saved = errno;
    long rc = syscall(SYS_renameat2, AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE);
    if (rc < 0 && (errno == EINVAL || errno == ENOSYS)) {
        rc = syscall(SYS_linkat, AT_FDCWD, from, AT_FDCWD, to, 0);
        if (rc == 0)
            syscall(SYS_unlinkat, AT_FDCWD, from, 0);
    }
    int err = errno;
    errno = saved;
    return rc < 0 ? err : 0;
}

int xa_os_getcwd(char *buf, size_t len)
{
    int saved = errno;
    long rc = syscall(SYS_getcwd, buf, len);
    int err = errno;
    errno = saved;
    return rc < 0 ? err : 0;
}

void xa_os_write_stderr(const char *buf, size_t len)
{
    (void)xa_os_write_all(2, buf, len);
}

void xa_os_abort(void)
{
    abort();
}
