/* chunkmap.c: see chunkmap.h. Layer: above meta. */
#include "chunkmap.h"

#include "lock.h"
#include "meta.h"

struct xa_chunk **xa_chunkmap_top[1u << XA_CHUNKMAP_TOP_BITS];
uint8_t xa_region_kind[(size_t)1 << XA_REGION_BITS] __attribute__((aligned(XA_OS_PAGE)));
uint8_t xa_region_runs = XA_REGION_RUNS;
static xa_lock leaf_lock = XA_LOCK_INIT(XA_RANK_CHUNKMAP);

bool xa_chunkmap_set(void *base, size_t size, struct xa_chunk *chunk, unsigned kind)
{
    uintptr_t a = (uintptr_t)base;
    uintptr_t end = a + size;
    for (; a < end; a += XA_CHUNK_SIZE) {
        uintptr_t top = a >> (XA_CHUNK_SHIFT + XA_CHUNKMAP_LEAF_BITS);
        if (top >= (1u << XA_CHUNKMAP_TOP_BITS))
            return false;
        struct xa_chunk **leaf = __atomic_load_n(&xa_chunkmap_top[top], __ATOMIC_ACQUIRE);
        if (!leaf) {
            if (!chunk)
                continue;
            xa_lock_acquire(&leaf_lock);
            leaf = xa_chunkmap_top[top];
            if (!leaf) {
                leaf = xa_meta_alloc(sizeof(*leaf) << XA_CHUNKMAP_LEAF_BITS, XA_OS_PAGE);
                if (leaf)
                    __atomic_store_n(&xa_chunkmap_top[top], leaf, __ATOMIC_RELEASE);
            }
            xa_lock_release(&leaf_lock);
            if (!leaf)
                return false;
        }
        __atomic_store_n(&leaf[(a >> XA_CHUNK_SHIFT) & ((1u << XA_CHUNKMAP_LEAF_BITS) - 1)],
                         chunk, __ATOMIC_RELEASE);
        /* The fast filter is set after the radix entry and cleared before
         * it: whoever sees a kind finds the chunk. */
        __atomic_store_n(&xa_region_kind[a >> XA_CHUNK_SHIFT],
                         (uint8_t)(chunk ? kind : XA_REGION_NONE), __ATOMIC_RELEASE);
    }
    return true;
}

void xa_chunkmap_fork_prepare(void) { xa_lock_acquire(&leaf_lock); }
void xa_chunkmap_fork_parent(void) { xa_lock_release(&leaf_lock); }
void xa_chunkmap_fork_child(void) { xa_lock_reset(&leaf_lock); }
