/* meta.h: the internal allocator for the allocator's own metadata (heaps,
 * arenas, radix leaves). It never calls malloc: memory comes from the os
 * layer in 1 MiB regions, carved by a bump pointer. Metadata is never
 * returned to the OS; structures that come and go (thread heaps) are
 * recycled by their owners. Layer: just above os. */
#ifndef XA_META_H
#define XA_META_H

#include "common.h"

/* Zeroed memory of size bytes aligned to align (power of two <= 4096).
 * Returns NULL when the OS refuses memory. Thread-safe. */
void *xa_meta_alloc(size_t size, size_t align);
/* Bytes mapped for metadata so far. */
size_t xa_meta_mapped(void);
void xa_meta_fork_prepare(void);
void xa_meta_fork_parent(void);
void xa_meta_fork_child(void);

#endif /* XA_META_H */
