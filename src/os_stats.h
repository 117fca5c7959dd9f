/* os_stats.h: the few system calls the statistics module needs beyond
 * os.h: its serving thread, shared futexes on the stats file, and facts
 * about the process for the file header. Layer: os (calls nothing above).
 * Contract as in os.h: 0 or a positive errno value unless stated. */
#ifndef XA_OS_STATS_H
#define XA_OS_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Starts a detached thread running fn(arg) with every signal blocked (so
 * it never runs a signal handler of the program). The thread names itself
 * (xa_os_set_thread_name): naming it from outside goes through libc's
 * printf engine, and that costs every process some 100 KiB of libc pages. */
int xa_os_stats_thread_start(void *(*fn)(void *), void *arg);

/* Sleeps while *word == expected, for at most timeout_ns, on a futex that
 * works across processes (the word lies in a MAP_SHARED file mapping).
 * Returns 0 when woken, ETIMEDOUT, EAGAIN (word differed) or EINTR. */
int xa_os_stats_futex_wait(uint32_t *word, uint32_t expected, uint64_t timeout_ns);
/* Wakes every waiter on word (shared futex). */
void xa_os_stats_futex_wake(uint32_t *word);

/* Inode of the calling process's pid namespace (/proc/self/ns/pid), or 0. */
uint64_t xa_os_stats_pidns_ino(void);

/* Sets the permission bits of an open file, whatever the umask did. */
int xa_os_stats_fchmod(int fd, unsigned mode);

/* ---- the statistics memory file ---- */

/* Identity of an open file, to tell whether a descriptor number still
 * refers to it (a program may close or dup2 over any descriptor). */
struct xa_os_stats_fileid {
    uint64_t dev;
    uint64_t ino;
};

/* Creates the statistics memory file: an anonymous memfd called name
 * (shown as "/memfd:NAME (deleted)" in /proc/PID/fd and maps), close-on-exec,
 * not executable, size bytes of zeros, mode 0600, and sealed so that nobody
 * (the process included) can shrink or grow it: a client that truncated a
 * mapped file would otherwise kill the process with SIGBUS. The descriptor
 * is moved to min_fd or above when RLIMIT_NOFILE allows, and never lies in
 * 0..2 (a daemon that closed its standard streams expects to get them back
 * from its next open). Returns fd >= 0 and its identity in id, or -errno. */
int xa_os_stats_memfd(const char *name, size_t size, int min_fd, struct xa_os_stats_fileid *id);

/* True if fd is open and is the file id (same device and inode). */
bool xa_os_stats_fd_is(int fd, const struct xa_os_stats_fileid *id);

/* Maps size bytes of fd shared read-write, at fixed (MAP_FIXED: replacing
 * what is there, atomically) or anywhere when fixed is NULL. NULL on
 * failure. */
void *xa_os_stats_map(int fd, size_t size, void *fixed);

#endif /* XA_OS_STATS_H */
