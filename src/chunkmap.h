/* chunkmap.h: address -> chunk radix map. Every 2 MiB region the
 * allocator owns maps to the header of its chunk (a huge block spanning
 * several regions maps each of them to its one header). free() consults it
 * before trusting any header, so a foreign or wild pointer is reported
 * instead of being dereferenced. Two levels: a static top array indexed by
 * address bits 46..34 and 64 KiB leaves indexed by bits 33..21.
 * Layer: above meta and os. */
#ifndef XA_CHUNKMAP_H
#define XA_CHUNKMAP_H

#include "common.h"

#define XA_CHUNKMAP_LEAF_BITS 13
#define XA_CHUNKMAP_TOP_BITS (47 - XA_CHUNK_SHIFT - XA_CHUNKMAP_LEAF_BITS)

struct xa_chunk;
extern struct xa_chunk **xa_chunkmap_top[1u << XA_CHUNKMAP_TOP_BITS];

/* One byte per 2 MiB region of the 47-bit address space (64 MiB of
 * address space, in .bss: only the pages that are written become
 * resident): the free() fast path's one-load filter. */
enum xa_region_kind {
    XA_REGION_NONE = 0,  /* not ours */
    XA_REGION_RUNS = 1,  /* a chunk of runs whose header is at the region start */
    XA_REGION_HUGE = 2,  /* part of a huge block: use xa_chunkmap_lookup */
    XA_REGION_RUNS_SLOW = 3, /* RUNS whose frees all take the slow path (junk mode) */
};
/* The kind chunks of runs get: RUNS, or RUNS_SLOW when every free must be
 * checked (junk mode, set before the first chunk), so the free fast path
 * needs no test of its own for it. */
extern uint8_t xa_region_runs;
#define XA_REGION_BITS (47 - XA_CHUNK_SHIFT)
extern uint8_t xa_region_kind[(size_t)1 << XA_REGION_BITS];

/* Kind of the region holding p; NONE for NULL and for every address
 * outside the 47-bit user space. */
XA_FAST_PATH unsigned xa_region_of(const void *p)
{
    /* One shift serves the range test (user space is below 2^47) and
     * the index. */
    uintptr_t i = (uintptr_t)p >> XA_CHUNK_SHIFT;
    if (xa_unlikely(i >= ((uintptr_t)1 << (47 - XA_CHUNK_SHIFT))))
        return XA_REGION_NONE;
    return xa_region_kind[i];
}

/* The chunk owning address p, or NULL if p is not in allocator memory. */
XA_FAST_PATH struct xa_chunk *xa_chunkmap_lookup(const void *p)
{
    uintptr_t a = (uintptr_t)p;
    uintptr_t top = a >> (XA_CHUNK_SHIFT + XA_CHUNKMAP_LEAF_BITS);
    if (xa_unlikely(top >= (1u << XA_CHUNKMAP_TOP_BITS)))
        return NULL;
    struct xa_chunk **leaf = xa_chunkmap_top[top];
    if (xa_unlikely(!leaf))
        return NULL;
    return leaf[(a >> XA_CHUNK_SHIFT) & ((1u << XA_CHUNKMAP_LEAF_BITS) - 1)];
}

/* Maps [base, base+size) to chunk (or clears it with chunk NULL), with
 * the region kind (RUNS or HUGE). base is 2 MiB-aligned. Returns false if
 * a leaf could not be allocated. */
bool xa_chunkmap_set(void *base, size_t size, struct xa_chunk *chunk, unsigned kind);
void xa_chunkmap_fork_prepare(void);
void xa_chunkmap_fork_parent(void);
void xa_chunkmap_fork_child(void);

#endif /* XA_CHUNKMAP_H */
