/* os.h: the operating-system layer. The files src/os_*.c are the ONLY
 * place in src/ that makes system calls (mmap, munmap, madvise, mremap,
 * mbind, getcpu, prctl, open, read, write, ...). Everything above calls these
 * wrappers. Calls are raw syscalls where an interposable libc function could
 * be wrapped by another preloaded library or could allocate.
 * Contract: sizes and addresses page-aligned unless stated; functions return
 * 0 on success or a positive errno value, or NULL / -1 as documented. */
#ifndef XA_OS_H
#define XA_OS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* ---- memory (os_mem.c) ---- */

/* Maps size bytes of fresh, zeroed, read-write anonymous memory aligned to
 * align (a power of two >= 4096). Returns NULL on failure. */
void *xa_os_map_aligned(size_t size, size_t align);
/* Unmaps a range obtained from xa_os_map_aligned (or a part of one). */
void xa_os_unmap(void *p, size_t size);
/* Gives the pages back; they read as zero when next touched. */
int xa_os_purge_dontneed(void *p, size_t size);
/* Gives the pages back lazily (MADV_FREE); contents undefined on reuse. */
int xa_os_purge_free(void *p, size_t size);
/* True when the page at p (page-aligned) is resident; true as well when
 * the kernel cannot tell (the caller then acts as for a resident page). */
bool xa_os_page_resident(const void *p);
/* Transparent huge page advice for a range. */
int xa_os_advise_hugepage(void *p, size_t size, bool huge);
/* Asks the kernel to back a range with huge pages now (MADV_COLLAPSE,
 * Linux 6.1); returns errno (EINVAL on older kernels) and changes nothing
 * then. */
int xa_os_collapse_hugepage(void *p, size_t size);
/* Grows or shrinks a mapping in place; returns 0 or errno (ENOMEM if the
 * neighbouring range is taken). */
int xa_os_remap_inplace(void *p, size_t old_size, size_t new_size);
/* Moves a mapping of old_size bytes onto dst, a range of new_size bytes
 * the caller reserved with xa_os_map_aligned (so it could register the
 * destination first), which it replaces. Returns 0, or errno with p
 * untouched and dst still reserved. */
int xa_os_remap_onto(void *p, size_t old_size, size_t new_size, void *dst);
/* Names an anonymous range in /proc/PID/maps ("[anon:name]"); silently does
 * nothing on kernels without PR_SET_VMA_ANON_NAME. */
void xa_os_name_range(void *p, size_t size, const char *name);

/* ---- processes, time, files (os_file.c) ---- */

/* Monotonic clock in nanoseconds (vDSO, no allocation). */
uint64_t xa_os_now_ns(void);
/* CPU time of the calling thread in nanoseconds, user and system (a
 * system call: for measuring slow paths only); 0 if unavailable. */
uint64_t xa_os_thread_cpu_ns(void);
/* Sleeps (nanosleep); used by the background thread only. */
void xa_os_sleep_ns(uint64_t ns);
/* Futex on a private word: waits while *word == expected, at most
 * timeout_ns (0: no limit); wakes every waiter of word. */
void xa_os_futex_wait(uint32_t *word, uint32_t expected, uint64_t timeout_ns);
void xa_os_futex_wake_all(uint32_t *word);
/* Process-wide memory barrier (membarrier(2), private expedited): when it
 * returns, every other thread of the process has passed a full barrier, so
 * its stores before that point are visible and its loads after it see the
 * caller's earlier stores. Register once per process first; both return 0
 * or errno (ENOSYS, EINVAL on kernels before 4.14, EPERM under seccomp). */
int xa_os_membarrier_register(void);
int xa_os_membarrier(void);
/* Names the calling thread (PR_SET_NAME, 15 characters at most). */
void xa_os_set_thread_name(const char *name);
/* CPU and NUMA node the calling thread runs on (getcpu); -1 if unknown. */
int xa_os_current_cpu(int *node);
/* Number of CPUs the process may run on (at least 1). */
int xa_os_ncpus(void);
pid_t xa_os_getpid(void);
pid_t xa_os_gettid(void);
uid_t xa_os_geteuid(void);
/* True when the process runs in secure mode (AT_SECURE: set-uid etc.):
 * the environment must then be ignored. */
bool xa_os_secure_mode(void);
/* Like getenv, but reads environ directly (no interposable call) and
 * returns NULL in secure mode. */
const char *xa_os_getenv(const char *name);
/* Base name of the executable (from /proc/self/exe or argv[0] source);
 * writes at most len-1 bytes. Returns buf. */
const char *xa_os_exe_name(char *buf, size_t len);

/* Raw file access, no stdio. open returns fd >= 0 or -errno. */
int xa_os_open_read(const char *path);
/* Creates path exclusively (O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC) with mode. */
int xa_os_open_create_excl(const char *path, unsigned mode);
/* Opens an existing file read-write without following symlinks. */
int xa_os_open_rdwr(const char *path);
/* Reads up to len bytes; returns bytes read (short only at end of file) or
 * -errno. Retries on EINTR. */
ssize_t xa_os_read(int fd, void *buf, size_t len);
/* Writes all of buf; returns 0 or -errno. */
int xa_os_write_all(int fd, const void *buf, size_t len);
void xa_os_close(int fd);
int xa_os_ftruncate(int fd, size_t size);
/* Maps a file shared (read-write or read-only). Returns NULL on failure. */
void *xa_os_map_file(int fd, size_t size, bool writable);
int xa_os_unlink(const char *path);
/* 0 if path is a directory writable by the caller (access(W_OK|X_OK)). */
int xa_os_dir_writable(const char *path);
/* Size in bytes of an open file, or -errno. */
int64_t xa_os_file_size(int fd);
/* Renames from to to, failing with EEXIST rather than replacing an existing
 * to (renameat2 RENAME_NOREPLACE; link + unlink where the filesystem lacks
 * it). Returns 0 or an errno value. */
int xa_os_rename_noreplace(const char *from, const char *to);
/* The working directory (getcwd syscall). Returns 0 or an errno value. */
int xa_os_getcwd(char *buf, size_t len);
/* Writes to stderr (fd 2), whole buffer, ignoring errors. */
void xa_os_write_stderr(const char *buf, size_t len);
/* Aborts the process (raise SIGABRT; _exit(127) if it returns). */
__attribute__((noreturn)) void xa_os_abort(void);

#endif /* XA_OS_H */
