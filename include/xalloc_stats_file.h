/* xalloc_stats_file.h: layout of the shared-memory statistics file that
 * each process publishes and xalloc-stat reads. Part of the statistics
 * ABI, like xalloc_stats.h; readers need nothing else.
 *
 * Where it lives: an anonymous memory file (memfd) named
 * XALLOC_STATS_FILE_MEMFD_NAME, sealed against resizing, held open by the
 * process on a close-on-exec descriptor. It has no name in any directory,
 * so it dies with the process however that ends (exit, _exit, exec, any
 * signal). Readers open it as /proc/PID/fd/N, N being the descriptor whose
 * link reads "/memfd:xalloc-stats (deleted)": the kernel lets only the
 * process's user (if the process is dumpable) or root do that. Libraries
 * before format 1.1 used named files (/run/xalloc/<pid>,
 * /dev/shm/xalloc.<pid>, <stats_dir>/xalloc.<pid>); readers still accept
 * them.
 *
 * The file is a header followed, at snapshot_offset, by one struct
 * xalloc_stats. The writer is the process (one publisher at a time); any
 * number of readers copy under the sequence lock (helpers below). The
 * request area is written by a client opened read-write and served by the
 * process within one stats_interval_ms. The process treats everything it
 * finds in the file as untrusted: it never reads back a size, offset or
 * counter of its own, and validates every request (requests_ignored counts
 * the ones it could not use).
 *
 * Compatibility: a reader accepts any file whose format major equals its
 * own; minor bumps only append fields inside reserved space. Sizes carried
 * in the header (header_size, snapshot_size) let a reader copy
 * min(its size, the writer's). */
#ifndef XALLOC_STATS_FILE_H
#define XALLOC_STATS_FILE_H

#include <stdint.h>

#include "xalloc_stats.h"

/* "XASTATS1" read as a little-endian u64. */
#define XALLOC_STATS_FILE_MAGIC 0x3153544154534158ULL
#define XALLOC_STATS_FILE_VERSION_MAJOR 1
#define XALLOC_STATS_FILE_VERSION_MINOR 1
#define XALLOC_STATS_FILE_MAX_CONFIG 48
#define XALLOC_STATS_FILE_MEMFD_NAME "xalloc-stats" /* memfd_create() name (1.1) */
/* Before 1.1: named files. */
#define XALLOC_STATS_FILE_PREFIX "xalloc."  /* /dev/shm and stats_dir names */
#define XALLOC_STATS_FILE_RUN_DIR "/run/xalloc"  /* files named <pid> there */
#define XALLOC_STATS_FILE_SHM_DIR "/dev/shm"

/* Keeps the writer-only and client-written parts on their own cache lines. */
#define XALLOC_STATS_FILE_ALIGN64 __attribute__((aligned(64)))

/* Request commands. */
enum xalloc_stats_command {
    XALLOC_STATS_CMD_NONE = 0,
    XALLOC_STATS_CMD_PURGE = 1, /* xalloc_purge() */
    XALLOC_STATS_CMD_SET = 2,   /* xalloc_config_set(arg) */
    XALLOC_STATS_CMD_PUBLISH = 3, /* refresh the snapshot now */
    XALLOC_STATS_CMD_DUMP = 4,    /* write a heap profile (profiling build) */
};

struct xalloc_stats_file_config {
    char name[32];
    char value[96];
    char source[96]; /* "default", config file path, "XALLOC_CONF", "runtime" */
};

/* Written by a client, served by the process. Protocol: the client takes
 * the area by compare-and-swap of owner from 0 to its pid (stealing it
 * from a dead pid), fills command, arg and requester_uid, then stores
 * seq = ack_seq + 1 (release) and wakes futex waiters on seq. The process
 * serves it, fills status, result and message, stores ack_seq = seq
 * (release) and wakes futex waiters on ack_seq. The client reads the
 * outcome and stores owner = 0. */
struct xalloc_stats_file_request {
    uint32_t seq;           /* futex word the process sleeps on */
    uint32_t ack_seq;       /* futex word the client sleeps on */
    int32_t owner;          /* pid of the client holding the area, 0 = free */
    uint32_t command;       /* enum xalloc_stats_command */
    uint32_t requester_uid; /* refused unless 0 or the process's euid */
    int32_t status;         /* 0, or a positive errno value */
    uint64_t result;        /* CMD_PURGE: bytes purged */
    uint64_t served_ns;     /* CLOCK_MONOTONIC when served */
    char arg[128];          /* CMD_SET: "key:value" */
    char message[160];      /* human-readable outcome */
    uint64_t reserved[4];
};

struct xalloc_stats_file_header {
    /* Constant after creation. */
    uint64_t magic;
    uint16_t version_major; /* XALLOC_STATS_FILE_VERSION_MAJOR of the writer */
    uint16_t version_minor;
    uint32_t header_size;   /* sizeof(struct xalloc_stats_file_header) */
    uint64_t file_size;
    uint64_t snapshot_offset; /* where struct xalloc_stats starts */
    uint64_t snapshot_size;   /* sizeof(struct xalloc_stats) of the writer */
    int32_t pid;              /* getpid() in the writer's pid namespace */
    uint32_t uid;             /* effective uid of the writer */
    uint64_t pidns_ino;       /* inode of /proc/self/ns/pid, 0 if unknown */
    uint64_t start_ticks;     /* field 22 of /proc/self/stat (clock ticks) */
    uint64_t start_mono_ns;   /* CLOCK_MONOTONIC when the file was made */
    char program[64];         /* executable base name */
    char library_version[16]; /* xalloc_version() */
    uint64_t reserved0[8];

    /* Under the sequence lock (odd while being written). */
    uint64_t seq XALLOC_STATS_FILE_ALIGN64;
    uint64_t publish_count;
    uint64_t publish_mono_ns; /* CLOCK_MONOTONIC of the last publication */
    uint64_t interval_ms;     /* stats_interval_ms in effect */
    uint32_t config_count;
    uint32_t flags;           /* XALLOC_STATS_FILE_F_* */
    uint64_t requests_served;  /* (1.1) requests acted on */
    uint64_t requests_ignored; /* (1.1) not acted on: unknown, malformed, refused */
    uint64_t reserved1[6];
    struct xalloc_stats_file_config config[XALLOC_STATS_FILE_MAX_CONFIG];

    /* Not under the sequence lock. */
    struct xalloc_stats_file_request request XALLOC_STATS_FILE_ALIGN64;
    uint64_t reserved2[16];
};

/* The serving thread is running: requests are answered within one
 * interval. Without it they wait for the next allocator slow path. */
#define XALLOC_STATS_FILE_F_THREAD 1u

/* ---- sequence lock ---- */

/* Writer: begin, write the protected fields, end. One writer at a time. */
static inline void xalloc_stats_file_write_begin(struct xalloc_stats_file_header *h)
{
    uint64_t s = __atomic_load_n(&h->seq, __ATOMIC_RELAXED);
    __atomic_store_n(&h->seq, s + 1, __ATOMIC_RELAXED);
    /* The odd value must be visible before any protected store. */
    __atomic_thread_fence(__ATOMIC_RELEASE);
}

static inline void xalloc_stats_file_write_end(struct xalloc_stats_file_header *h)
{
    uint64_t s = __atomic_load_n(&h->seq, __ATOMIC_RELAXED);
    __atomic_store_n(&h->seq, s + 1, __ATOMIC_RELEASE);
}

/* Reader: s = read_begin(h); if s is odd (being written) or 0 (never
 * written) try later; copy what is needed; valid only if
 * !read_retry(h, s). */
static inline uint64_t xalloc_stats_file_read_begin(const struct xalloc_stats_file_header *h)
{
    return __atomic_load_n(&h->seq, __ATOMIC_ACQUIRE);
}

static inline int xalloc_stats_file_read_retry(const struct xalloc_stats_file_header *h,
                                               uint64_t s)
{
    /* The copies must complete before seq is read again. */
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    return (s & 1) || s == 0 || __atomic_load_n(&h->seq, __ATOMIC_RELAXED) != s;
}

static inline struct xalloc_stats *
xalloc_stats_file_snapshot(const struct xalloc_stats_file_header *h)
{
    return (struct xalloc_stats *)((char *)h + h->snapshot_offset);
}

#endif /* XALLOC_STATS_FILE_H */
