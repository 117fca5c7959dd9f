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
enum xa_background_mode { XA_BG_OFF = 0, XA_BG_ON = 1, XA_BG_AUTO = 2 };

/* Effective values. Written only by xa_config_init() and, for the options
 * that may change at run time, by xalloc_config_set(); read anywhere. */
struct xa_options {
    int thp;                 /* enum xa_thp_mode as configured */
    int64_t arenas;          /* 1..1024; default 4 x CPUs */
    int numa;                /* enum xa_numa_mode */
    int64_t decay_ms;        /* runtime-settable */
    int purge;               /* enum xa_purge_mode */
    int background_thread;   /* enum xa_background_mode; runtime-settable */
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

/* ---- additions of the config module (issue 4) ---- */

/* Limits of the configuration file: a bigger file is ignored with one
 * message; a longer line (or one holding a NUL byte) is skipped. */
#define XA_CONF_FILE_MAX 65536
#define XA_CONF_LINE_MAX 1024
#define XA_CONF_DEFAULT_FILE "/etc/xalloc.conf"

/* Parses conf_string (XALLOC_CONF syntax) against the defaults without
 * applying it; prints the same messages as start-up and returns the number
 * of errors. Used by tools that validate a configuration before use. */
int xa_config_validate(const char *conf_string);

/* The start-up sequence with its inputs made explicit (xa_config_init()
 * passes the real ones): in secure mode conf_env and conf_file_env are
 * ignored. conf_file_env NULL means /etc/xalloc.conf (silently absent),
 * "" means no file. exe is the executable base name that [sections] match
 * (NULL: looked up when the file has a section). Resets to the defaults,
 * parses, aborts if abort_on_error is set and there were errors, prints the
 * configuration if verbose. Returns the number of errors. */
int xa_config_load(bool secure, const char *conf_env, const char *conf_file_env,
                   const char *exe);

/* Test seams: defaults < file (file_path NULL: none; a missing file is
 * reported only if file_explicit) < env (NULL: none). No abort, no dump.
 * Returns the number of errors. */
int xa_config_parse_sources(const char *file_path, bool file_explicit,
                            const char *env, const char *exe);
/* Parses a file's contents given in memory as if read from source_name,
 * on top of the current values (no reset). Returns the number of errors. */
int xa_config_parse_file_buffer(const char *buf, size_t len,
                                const char *source_name, const char *exe);
/* Back to the defaults, marked initialised (so no later call parses the
 * real environment). */
void xa_config_reset_for_test(void);
/* Routes messages (one line each, ending in '\n') to hook instead of
 * stderr; NULL restores stderr. */
void xa_config_set_message_hook(void (*hook)(const char *line, size_t len));
/* Prints the effective configuration, one "xalloc: config: " line per
 * option (what verbose:true prints at start). */
void xa_config_dump(void);

/* Called after xalloc_config_set() changed options (set by init.c), so a
 * run-time change takes effect at once. */
extern void (*xa_config_on_change)(void);

#endif /* XA_CONFIG_H */
