/* statfile.h: xalloc-stat's access to another process's statistics file:
 * finding it (pid namespaces and containers included), opening it without
 * following links, copying a consistent snapshot under the sequence lock,
 * sending requests, telling stale files from live ones, and reading the
 * kernel's own accounting. Uses only the ABI headers, never src/. */
#ifndef XS_STATFILE_H
#define XS_STATFILE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "stats_report.h"
#include "xalloc_stats.h"
#include "xalloc_stats_file.h"

/* Outcomes; main() maps them to exit codes (see xalloc-stat(1)). */
enum xs_status {
    XS_OK = 0,
    XS_ERROR = 1,       /* anything else (I/O, malformed file) */
    XS_NO_PROCESS = 3,  /* no such process */
    XS_NOT_XALLOC = 4,  /* no statistics file: not xalloc, or stats:off */
    XS_PERM = 5,        /* permission denied */
    XS_VERSION = 6,     /* incompatible file format */
    XS_REFUSED = 7,     /* the process refused or failed the request */
    XS_TIMEOUT = 8,     /* no snapshot / no answer in time */
};

/* An open statistics file. Everything is read with pread() into private
 * copies, with the layout (header_size, snapshot_offset, snapshot_size)
 * checked once at open and never read again: a file rewritten or cut short
 * while we read it gives an error, never a crash. Only a file opened
 * writable is mapped (h), for the request area's atomics and futexes. */
struct xs_file {
    char path[PATH_MAX];
    int fd;
    struct xalloc_stats_file_header *h; /* writable only: the shared mapping */
    size_t size;
    bool writable;
    bool memfd;  /* the process's memory file (format 1.1) */
    long pid;    /* pid as the caller sees it (0 for --file) */
    long ns_pid; /* pid in the process's own namespace */
    size_t hsize, soff, ssize; /* layout, checked at open */
    struct xalloc_stats_file_header ident; /* header as read at open */
};

struct xs_snapshot {
    struct xalloc_stats_file_header hdr; /* copy, config included */
    struct xalloc_stats stats;
};

/* Finds and opens the statistics file of pid: its memory file through
 * /proc/PID/fd (also from the host into a container), else a named file
 * left by a library before format 1.1. extra_dir: a stats_dir to search
 * too (may be NULL). A stale named file met on the way is removed and
 * noted in note (may be NULL) when the caller may remove it. On failure
 * err holds one line explaining why. */
enum xs_status xs_open_pid(long pid, const char *extra_dir, bool writable,
                           struct xs_file *f, char *note, size_t note_len,
                           char *err, size_t err_len);
/* Opens a file at a path in a shared directory: a link is not followed. */
enum xs_status xs_open_path(const char *path, bool writable, struct xs_file *f,
                            char *err, size_t err_len);
/* The same for a path the operator named (xalloc-stat --file): links are
 * followed, so /proc/PID/fd/N works. */
enum xs_status xs_open_file(const char *path, bool writable, struct xs_file *f,
                            char *err, size_t err_len);
void xs_close(struct xs_file *f);

/* Copies a consistent snapshot, waiting up to timeout_ms for the first
 * publication of a new file. */
enum xs_status xs_read(struct xs_file *f, struct xs_snapshot *snap, int timeout_ms,
                       char *err, size_t err_len);

/* Sends a request (f opened writable) and waits up to timeout_ms for the
 * acknowledgement. msg receives the process's answer. */
enum xs_status xs_request(struct xs_file *f, uint32_t command, const char *arg,
                          int timeout_ms, uint64_t *result, char *msg, size_t msg_len);

/* The kernel's accounting of pid's heap (smaps). Returns false if
 * unreadable. */
bool xs_kernel(long pid, struct xa_report_kernel *k);

/* The systemd unit pid runs in ("redis-server.service"), from the last
 * .service or .scope component of its cgroup path; false if none. */
bool xs_service(long pid, char *buf, size_t len);

/* Seconds the process has run, from /proc (0 if unknown), in ns. */
uint64_t xs_uptime_ns(long pid);

/* Calls fn for every process whose statistics the caller can read
 * (one open file each, closed after fn returns). Counts the ones that use
 * xalloc but cannot be read in *denied, and removes stale files from the
 * default directories, reporting each through stale(path). */
void xs_for_each(const char *extra_dir, void (*fn)(void *, struct xs_file *),
                 void *arg, int *denied, void (*stale)(void *, const char *));

/* Monotonic clock, ns. */
uint64_t xs_now_ns(void);

#endif /* XS_STATFILE_H */
