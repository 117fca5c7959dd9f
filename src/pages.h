/* pages.h: page policy: transparent huge pages and purging. Decides; the
 * os layer executes. Layer: above os (and config), below arena. */
#ifndef XA_PAGES_H
#define XA_PAGES_H

#include "common.h"

/* Effective THP behaviour after resolving thp:default against
 * /sys/kernel/mm/transparent_hugepage/enabled ("madvise" counts as never). */
extern bool xa_pages_thp;

void xa_pages_boot(void);
/* Prepares a fresh mapping: THP advice, NUMA placement, a name in maps. */
void xa_pages_prepare(void *p, size_t size, int node, bool chunk);
/* Returns the pages of [p, p+size) to the OS as purge: says. Returns true
 * when the range now reads as zero. */
bool xa_pages_purge(void *p, size_t size);
/* Name of the effective THP mode, for stats and messages. */
const char *xa_pages_thp_name(void);

#endif /* XA_PAGES_H */
