/* config.h: the option table, parsed once at start. Side module: any layer
 * may read xa_opt; config never calls up into heap, arena or slab.
 * OWNED BY THE CONFIG MODULE (options.def, config.c). The core relies on
 * exactly this interface. */
#ifndef XA_CONFIG_H
#define XA_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum xa_thp_mode { XA_THP_DEFAULT = 0, XA_THP_ALWAYS = 1, XA_THP_NEVER = 2 };
enum xa_numa_mode { XA_NUMA_ON = 0, XA_NUMA_OFF = 1, XA_NUMA_INTERLEAVE = 2 };
enum xa_purge_mode { XA_PURGE_DONTNEED = 0, XA_PURGE_FREE = 1 };

/* Effective values. Written only by xa_config_init() and, for the options
 * that may change at run time, by xalloc_config_set(); read anywhere. */
struct xa_options {
    int thp;                 /* enum xa_thp_mode as configured */
    int64_t arenas;          /* 1..1024; default 4 x CPUs */
    int numa;                /* enum xa_numa_mode */
    int64_t decay_ms;        /* runtime-settable */
    int purge;               /* enum xa_purge_mode */
    bool background_thread;  /* runtime-settable */
    bool tcache;
    uint64_t tcache_max;     /* bytes */
    bool stats;
    char stats_dir[256];     /* "" = /run/xalloc, else /dev/shm */
    int64_t stats_interval_ms; /* runtime-settable */
    bool stats_print;
    bool verbose;
    bool abort_on_error;
    bool junk;
    bool prof;
    uint64_t prof_sample;    /* bytes */
    char prof_dir[256];
    uint64_t prof_interval;  /* bytes */
};
extern struct xa_options xa_opt;

/* Parses defaults < config file < XALLOC_CONF into xa_opt. Called once by
 * init, before any arena exists; never allocates. Idempotent. */
void xa_config_init(void);

/* Introspection for xalloc-stat --config and the stats file. */
int xa_config_option_count(void);
/* i-th option: name, formatted effective value, source ("default",
 * "/etc/xalloc.conf" or the file's path, "XALLOC_CONF", "runtime") and its
 * one-line doc. Returns false when i is out of range. */
bool xa_config_option_info(int i, const char **name, char *value,
                           size_t value_len, const char **source,
                           const char **doc);

#endif /* XA_CONFIG_H */
