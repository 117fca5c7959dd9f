/* arena_chunk.c: chunks of runs: mapping, release, and the huge-page
 * policy per chunk (DENSE: promote dense chunks, demote sparse ones).
 * Layer: arena; above chunkmap, pages, os. */
#include "arena_internal.h"

#include "chunkmap.h"
#include "os.h"
#include "pages.h"

/* ---- huge pages per chunk ---- */

/* Puts a chunk's dirty free runs back in the FIFO (they leave it while the
 * chunk is huge: purging part of it would split the huge page). */
static void requeue_dirty_runs(xa_arena *a, xa_chunk *c)
{
    for (unsigned u = 1; u < XA_UNITS_PER_CHUNK;) {
        xa_slab *s = &c->slabs[u];
        if (s->kind == XA_RUN_FREE && s->dunits && !s->in_dirty_list)
            xa_dirty_append(a, s);
        u += s->units ? s->units : 1;
    }
}

/* DENSE policy: promote a chunk that became dense, demote one that became
 * sparse (see pages.h). Density is what the program can have touched:
 * large blocks, and slab blocks as far as carved (a slab's run is reserved
 * whole but its pages are touched page by page). Called under the arena
 * lock when dense_bytes changed, under DENSE only (xa_chunk_density_changed
 * tests the policy inline). */
void xa_chunk_density_update(xa_arena *a, xa_chunk *c)
{
    uint64_t dense = __atomic_load_n(&c->dense_bytes, __ATOMIC_RELAXED);
    if (!c->huge_advised && dense >= ((uint64_t)XA_THP_DENSE_UNITS << XA_UNIT_SHIFT)) {
        __atomic_store_n(&c->huge_advised, 1, __ATOMIC_RELAXED);
        a->huge_chunks++;
        a->thp_promotions++;
        xa_pages_promote(c);
    } else if (c->huge_advised && dense < ((uint64_t)XA_THP_SPARSE_UNITS << XA_UNIT_SHIFT)) {
        __atomic_store_n(&c->huge_advised, 0, __ATOMIC_RELAXED);
        a->huge_chunks--;
        a->thp_demotions++;
        xa_pages_demote(c);
        requeue_dirty_runs(a, c);
    }
}

/* ---- chunks ---- */

xa_chunk *xa_chunk_new(xa_arena *a)
{
    xa_chunk *c = xa_os_map_aligned(XA_CHUNK_SIZE, XA_CHUNK_SIZE);
    if (!c)
        return NULL;
    c->huge_advised = xa_pages_prepare(c, XA_CHUNK_SIZE, a->node, true);
    c->magic = XA_CHUNK_MAGIC;
    c->arena = a;
    c->map_size = XA_CHUNK_SIZE;
    a->huge_chunks += c->huge_advised;
    c->slabs[0].kind = XA_RUN_HEADER;
    c->slabs[0].units = 1;
    c->first_of[0] = 0; /* the header's own descriptor, slabs[0] */
    if (!xa_chunkmap_set(c, XA_CHUNK_SIZE, c, xa_region_runs)) {
        xa_chunkmap_set(c, XA_CHUNK_SIZE, NULL, XA_REGION_NONE);
        xa_os_unmap(c, XA_CHUNK_SIZE);
        return NULL;
    }
    c->next = a->chunks;
    if (a->chunks)
        a->chunks->prev = c;
    a->chunks = c;
    a->nchunks++;
    xa_free_run_init(a, c, 1, XA_LARGE_MAX_UNITS, 0, true, 0);
    return c;
}

void xa_chunk_release(xa_arena *a, xa_chunk *c, unsigned path)
{
    xa_slab *s = &c->slabs[1];
    /* Only pages that were in use count as purged; the rest of the chunk
     * was never touched or was purged before. */
    uint64_t resident = (uint64_t)s->dunits << XA_UNIT_SHIFT;
    xa_free_run_detach(a, s);
    if (c->prev)
        c->prev->next = c->next;
    else
        a->chunks = c->next;
    if (c->next)
        c->next->prev = c->prev;
    a->nchunks--;
    a->huge_chunks -= c->huge_advised;
    xa_arena_count_purged(a, path, resident, 1);
    xa_chunkmap_set(c, XA_CHUNK_SIZE, NULL, XA_REGION_NONE);
    xa_os_unmap(c, XA_CHUNK_SIZE);
}
