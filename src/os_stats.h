/* os_stats.h: the few system calls the statistics module needs beyond
 * os.h: its serving thread, shared futexes on the stats file, and facts
 * about the process for the file header. Layer: os (calls nothing above).
 * Contract as in os.h: 0 or a positive errno value unless stated. */
#ifndef XA_OS_STATS_H
#define XA_OS_STATS_H

#include <stdint.h>

/* Starts a detached thread running fn(arg) with every signal blocked (so
 * it never runs a signal handler of the program) and named name (<= 15
 * characters) in /proc/PID/task/TID/comm. */
int xa_os_stats_thread_start(void *(*fn)(void *), void *arg, const char *name);

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

#endif /* XA_OS_STATS_H */
