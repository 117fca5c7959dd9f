/* xalloc: a production memory allocator for Linux services.
 *
 * Public API. The standard malloc family (malloc, free, calloc, realloc,
 * reallocarray, posix_memalign, aligned_alloc, memalign, valloc, pvalloc,
 * malloc_usable_size, free_sized, free_aligned_sized, malloc_trim,
 * mallinfo2, mallinfo, malloc_stats, mallopt) is exported under its usual
 * names; this header declares only the xalloc_* extensions. */
#ifndef XALLOC_H
#define XALLOC_H

#include <stddef.h>
#include <stdint.h>

#define XALLOC_VERSION_MAJOR 1
#define XALLOC_VERSION_MINOR 0
#define XALLOC_VERSION_PATCH 0

#ifdef __cplusplus
extern "C" {
#endif

/* Version of the library actually loaded, as "MAJOR.MINOR.PATCH". */
const char *xalloc_version(void);

/* Returns free memory to the operating system now: purges every dirty page
 * of every arena regardless of decay_ms. Returns the number of bytes purged. */
size_t xalloc_purge(void);

/* Effective value of a configuration option, formatted as the option table
 * prints it (e.g. "never" for thp, "8" for arenas), and where it came from
 * ("default", "/etc/xalloc.conf", "XALLOC_CONF", "runtime").
 * Returns 0, or -1 if the option is unknown. */
int xalloc_config_get(const char *name, char *value, size_t value_len,
                      const char **source);

/* Changes an option that may change at run time (decay_ms,
 * background_thread, stats_interval_ms). Same "key:value" syntax and
 * messages as XALLOC_CONF. Returns 0, or -1 with the reason in msg. */
int xalloc_config_set(const char *key_value, char *msg, size_t msg_len);

/* Writes the statistics report, line by line, through write(arg, line).
 * With write NULL, the report goes to stderr. */
void xalloc_stats_print(void (*write)(void *arg, const char *line), void *arg);

#ifdef __cplusplus
}
#endif

#endif /* XALLOC_H */
