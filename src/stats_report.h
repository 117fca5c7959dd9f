/* stats_report.h: the one statistics report emitter, shared by the library
 * (xalloc_stats_print, stats_print:true) and by xalloc-stat, which compiles
 * stats_report.c itself. Depends only on the statistics ABI headers and a
 * line-writer callback: no malloc, no stdio, no libc at all, so it is safe
 * inside the allocator and at exit. */
#ifndef XA_STATS_REPORT_H
#define XA_STATS_REPORT_H

#include <stdint.h>

#include "xalloc_stats.h"
#include "xalloc_stats_file.h"

/* Receives one line at a time, ending in '\n', NUL-terminated. */
typedef void (*xa_report_write_fn)(void *arg, const char *line);

enum xa_report_format {
    XA_REPORT_TEXT,       /* totals, arenas, size classes, configuration */
    XA_REPORT_JSON,       /* one JSON object */
    XA_REPORT_PROMETHEUS, /* text exposition format 0.0.4 */
    XA_REPORT_CONFIG,     /* effective configuration and sources only */
    XA_REPORT_SUMMARY,    /* one line (xalloc-stat --all) */
    XA_REPORT_CONFIG_JSON,       /* header fields and configuration, JSON */
    XA_REPORT_CONFIG_PROMETHEUS, /* xalloc_info and xalloc_config_info */
};

/* The kernel's own accounting of the heap, read by xalloc-stat from
 * /proc/PID/smaps (mappings named "[anon:xalloc...]") or, when the kernel
 * names nothing, from /proc/PID/smaps_rollup for the whole process. */
struct xa_report_kernel {
    int valid;
    const char *scope;   /* "xalloc mappings" or "whole process" */
    uint64_t mappings;   /* mappings counted (0 for smaps_rollup) */
    uint64_t size;       /* bytes of address space */
    uint64_t rss;        /* Rss */
    uint64_t anon_huge;  /* AnonHugePages: THP-backed bytes */
    uint64_t swap;       /* Swap */
};

/* Everything optional: zero / NULL fields are left out of the report. */
struct xa_report_info {
    long pid;
    const char *program;
    const char *service;  /* systemd unit of the process, or NULL */
    const char *library_version;
    uint64_t age_ns;     /* age of the snapshot; UINT64_MAX = unknown */
    uint64_t uptime_ns;  /* time since the process started; 0 = unknown */
    const struct xalloc_stats_file_config *config;
    unsigned config_count;
    const struct xa_report_kernel *kernel;
    int summary_header;  /* XA_REPORT_SUMMARY: emit the column titles first */
    int has_requests;    /* the two counters below are known (format >= 1.1) */
    uint64_t requests_served;  /* requests the process acted on */
    uint64_t requests_ignored; /* requests it refused as unknown, malformed or not allowed */
};

/* Emits the report of s in fmt through write. s->arenas_count and
 * s->classes_count are clamped to the array sizes. */
void xa_stats_report_emit(const struct xalloc_stats *s,
                          const struct xa_report_info *info,
                          enum xa_report_format fmt, xa_report_write_fn write,
                          void *arg);

/* Formats bytes in binary units ("1.5 MiB", "512 B") into buf (>= 16
 * bytes). Returns buf. */
char *xa_stats_report_bytes(char *buf, uint64_t bytes);

#endif /* XA_STATS_REPORT_H */
