/* pages.h: page policy: transparent huge pages and purging. Decides; the
 * os layer executes. Layer: above os (and config), below arena.
 *
 * Huge pages go where they pay. Three policies:
 *  - NEVER: every mapping of ours is MADV_NOHUGEPAGE (chunks, huge blocks,
 *    metadata, the static region map); purging is page-granular.
 *  - DENSE (thp:default when the system says "always"): chunks start
 *    MADV_NOHUGEPAGE, so a sparsely used chunk costs only the small pages
 *    it touches; a chunk whose runs cover XA_THP_DENSE_UNITS of its 31 units
 *    is promoted (MADV_HUGEPAGE, then MADV_COLLAPSE) and from then on purged
 *    only whole; it is demoted back to small pages when its use falls under
 *    XA_THP_SPARSE_UNITS, so its free runs can be purged again.
 *  - ALWAYS (thp:always): every chunk is MADV_HUGEPAGE from the start and
 *    purged whole, even where the system setting is "madvise". */
#ifndef XA_PAGES_H
#define XA_PAGES_H

#include "common.h"

enum xa_thp_policy { XA_THP_POLICY_NEVER = 0, XA_THP_POLICY_DENSE = 1, XA_THP_POLICY_ALWAYS = 2 };
extern unsigned xa_pages_policy;
/* True under ALWAYS: chunks are huge from the start. */
extern bool xa_pages_thp;

/* Promotion and demotion thresholds (units of the 31 usable per chunk):
 * 28 in use is 90% dense; demotion at half leaves a wide band so a chunk
 * does not flip back and forth. */
#define XA_THP_DENSE_UNITS 28u
#define XA_THP_SPARSE_UNITS 15u

void xa_pages_boot(void);
/* Prepares a fresh mapping: THP advice, NUMA placement, a name in maps.
 * chunk: a chunk of runs (false: a huge block's own mapping). Returns
 * true when the mapping starts huge-page backed. */
bool xa_pages_prepare(void *p, size_t size, int node, bool chunk);
/* Promotes a dense chunk to a huge page / demotes a sparse one. */
void xa_pages_promote(void *chunk);
void xa_pages_demote(void *chunk);
/* Small pages, whatever the mode, for a range that is sparse by nature
 * (the static region map): one touched byte must not cost 2 MiB. */
void xa_pages_sparse(void *p, size_t size);
/* Returns the pages of [p, p+size) to the OS as purge: says. Returns true
 * when the range now reads as zero. */
bool xa_pages_purge(void *p, size_t size);
/* Name of the effective THP mode, for stats and messages. */
const char *xa_pages_thp_name(void);

#endif /* XA_PAGES_H */
