/* invariant.c: the invariant walk (see invariant.h). Compiled in the unit-test
 * (XA_TEST), debug (XA_DEBUG) and fault-injection builds only; the release
 * library does not carry it. Reads, never writes; tolerates corrupt data
 * (bounded walks, range checks before every dereference). */
#include "invariant.h"

#if defined(XA_TEST) || XA_DEBUG || (defined(XA_FAULT) && XA_FAULT)
#include <stdarg.h>
#include <string.h>

#include "heap.h"
#include "util.h"

struct ctx {
    size_t problems;
    char *msg;
    size_t len;
};

__attribute__((format(printf, 2, 3))) static void bad(struct ctx *x, const char *fmt, ...)
{
    if (x->problems++ == 0 && x->len) {
        va_list ap;
        va_start(ap, fmt);
        xa_vsnprintf(x->msg, x->len, fmt, ap);
        va_end(ap);
    }
}

static inline uintptr_t dec(uintptr_t v) { return v ^ xa_heap_secret; }

#define MAX_BLOCKS 65536u
#define WALK_LIMIT 1000000u

/* Marks block p of slab s in seen; false (and a report) if p is not a
 * carved block of s or is already marked (a block on two lists). */
static bool mark(struct ctx *x, const xa_slab *s, uintptr_t p, uint8_t *seen, const char *list)
{
    uintptr_t rel = p - (uintptr_t)s->start;
    if (p < (uintptr_t)s->start || rel >= (uintptr_t)s->capacity * s->block_size ||
        rel % s->block_size) {
        bad(x, "slab %p: %s list holds %p, not a carved block", (void *)s, list, (void *)p);
        return false;
    }
    uint32_t i = (uint32_t)(rel / s->block_size);
    if (seen[i >> 3] & (1u << (i & 7))) {
        bad(x, "slab %p: block %p twice on the free lists (%s)", (void *)s, (void *)p, list);
        return false;
    }
    seen[i >> 3] |= (uint8_t)(1u << (i & 7));
    if ((s->in_full & XA_SLAB_PAGES_PURGED) && xa_slab_block_withheld(s, (void *)p)) {
        bad(x, "slab %p: %s list holds %p, in a page purged while abandoned", (void *)s, list,
            (void *)p);
        return false;
    }
    return true;
}

/* A slab's descriptor; with lists, also its local and remote free lists
 * (only for slabs the caller owns: its heap's, or abandoned ones under
 * the arena lock). */
static void check_slab(struct ctx *x, xa_chunk *c, const xa_slab *s, bool lists)
{
    const struct xa_class_info *ci = &xa_classes[s->cls];
    if (s->cls >= XA_NCLASSES || s->block_size != ci->size || s->reserved != ci->blocks ||
        s->units != ci->units || s->capacity > s->reserved ||
        s->start != xa_unit_addr(c, s->first_unit) || xa_slab_used(s) > s->capacity) {
        bad(x, "slab %p (class %u): bad descriptor (size %u units %u capacity %u used %u)",
            (void *)s, s->cls, s->block_size, s->units, s->capacity, xa_slab_used(s));
        return;
    }
    if (s->small.keep_key != xa_chunk_keep_key(c->arena->node) ||
        s->small.arena_index != c->arena->index)
        bad(x, "slab %p: keep key %u / arena %u, its chunk's arena's %u / %u", (void *)s,
            s->small.keep_key, s->small.arena_index, xa_chunk_keep_key(c->arena->node),
            c->arena->index);
    if ((s->used & XA_USED_SLOW) != xa_slab_slow_bit(s->in_full, s->used))
        bad(x, "slab %p: used flag %u disagrees with in_full %u (head %u)", (void *)s,
            (s->used & XA_USED_SLOW) != 0, s->in_full, (s->used & XA_USED_HEAD) != 0);
    if (!lists || s->reserved > MAX_BLOCKS)
        return;
    uint8_t seen[MAX_BLOCKS / 8];
    memset(seen, 0, (s->capacity + 7) / 8);
    uint32_t nfree = 0;
    for (uintptr_t p = s->free; p; p = dec(((xa_block *)p)->next), nfree++)
        if (!mark(x, s, p, seen, "local"))
            return;
    uint32_t withheld = xa_slab_withheld(s);
    if (s->capacity - nfree - withheld != xa_slab_used(s))
        bad(x, "slab %p: used %u, but capacity %u - %u free - %u withheld", (void *)s,
            xa_slab_used(s), s->capacity, nfree, withheld);
    if ((s->in_full & XA_SLAB_PAGES_PURGED) && !(s->in_full & XA_SLAB_ABANDONED))
        bad(x, "slab %p: pages purged but not abandoned", (void *)s);
    uintptr_t word = atomic_load_explicit(&s->thread_free, memory_order_acquire);
    uintptr_t tf = xa_tf_list(word);
    uint32_t n = 0;
    for (; tf; tf = dec(((xa_block *)tf)->next), n++)
        if (n > xa_slab_used(s) || !mark(x, s, tf, seen, "remote")) {
            if (n > xa_slab_used(s))
                bad(x, "slab %p: more remote frees than blocks in use", (void *)s);
            return;
        }
    if (n != xa_tf_count(word))
        bad(x, "slab %p: remote list holds %u blocks, its count says %u", (void *)s, n,
            xa_tf_count(word));
}

/* ---- arenas ---- */

/* What check_chunk counts over an arena's chunks. */
struct chunk_counts {
    uint64_t free_units, dirty_units, used_units, nfree_runs, large;
    uint64_t class_slabs[XA_NCLASSES], class_capacity[XA_NCLASSES];
};

static void check_chunk(struct ctx *x, xa_arena *a, xa_chunk *c, struct chunk_counts *n)
{
    if (c->magic != XA_CHUNK_MAGIC || c->arena != a) {
        bad(x, "chunk %p: bad magic or arena", (void *)c);
        return;
    }
    if (xa_chunkmap_lookup(c) != c || xa_region_of(c) != xa_region_runs)
        bad(x, "chunk %p: not in the chunk map", (void *)c);
    if (c->slabs[0].kind != XA_RUN_HEADER)
        bad(x, "chunk %p: unit 0 is not the header", (void *)c);
    uint32_t used = 0;
    bool prev_free = false;
    for (unsigned u = 1; u < XA_UNITS_PER_CHUNK;) {
        const xa_slab *s = &c->slabs[u];
        if (s->first_unit != u || s->units == 0 || u + s->units > XA_UNITS_PER_CHUNK) {
            bad(x, "chunk %p: run at unit %u has first %u, %u units", (void *)c, u,
                s->first_unit, s->units);
            return;
        }
        for (unsigned k = u; k < u + s->units; k++) {
            if (c->first_of[k] != u)
                bad(x, "chunk %p: first_of[%u] = %u, want %u", (void *)c, k, c->first_of[k], u);
            /* free() reads slabs[k] before it knows k starts a run: past
             * the first unit the descriptor must fail its block test. */
            if (k > u && (c->slabs[k].div_magic != 0 || c->slabs[k].heap != NULL))
                bad(x, "chunk %p: unit %u inside run %u has a slab's descriptor", (void *)c, k,
                    u);
        }
        switch (s->kind) {
        case XA_RUN_FREE:
            if (prev_free)
                bad(x, "chunk %p: free runs at unit %u not coalesced", (void *)c, u);
            if (s->dunits > s->units || (s->dunits > 0) != (s->dirty != 0))
                bad(x, "chunk %p: free run %u: %u dirty of %u units", (void *)c, u, s->dunits,
                    s->units);
            n->free_units += s->units;
            n->dirty_units += s->dunits;
            n->nfree_runs++;
            break;
        case XA_RUN_SMALL:
            used += s->units;
            check_slab(x, c, s, false);
            if (s->cls < XA_NCLASSES) {
                n->class_slabs[s->cls]++;
                n->class_capacity[s->cls] += s->reserved;
            }
            break;
        case XA_RUN_LARGE:
            used += s->units;
            n->large++;
            break;
        default:
            bad(x, "chunk %p: run at unit %u has kind %u", (void *)c, u, s->kind);
            return;
        }
        prev_free = s->kind == XA_RUN_FREE;
        u += s->units;
    }
    if (used != c->used_units)
        bad(x, "chunk %p: %u units in runs, header says %u", (void *)c, used, c->used_units);
    n->used_units += used;
}

static void check_huge(struct ctx *x, xa_chunk *c, bool live)
{
    if (c->magic != XA_CHUNK_MAGIC || c->slabs[0].kind != XA_RUN_HUGE) {
        bad(x, "huge mapping %p: bad magic or kind", (void *)c);
        return;
    }
    /* A live mapping parked in a heap's cache has no user pointer. */
    if ((!live && c->huge_ptr) ||
        (c->huge_ptr && c->huge_ptr + c->huge_size != (char *)c + c->map_size))
        bad(x, "huge mapping %p: pointer %p, %zu bytes of %zu mapped", (void *)c,
            (void *)c->huge_ptr, c->huge_size, c->map_size);
    for (size_t off = 0; off < c->map_size; off += XA_CHUNK_SIZE)
        if (xa_chunkmap_lookup((char *)c + off) != c)
            bad(x, "huge mapping %p: region +%zu not mapped to it", (void *)c, off);
}

static void check_huge_list(struct ctx *x, const xa_arena *a, xa_chunk *list, uint64_t count,
                            bool live)
{
    uint64_t n = 0;
    for (xa_chunk *c = list; c && n < WALK_LIMIT; c = c->next, n++)
        check_huge(x, c, live);
    if (n != count)
        bad(x, "arena %u: %llu %s huge blocks, count says %llu", a->index,
            (unsigned long long)n, live ? "live" : "cached", (unsigned long long)count);
}

static void check_arena(struct ctx *x, xa_arena *a)
{
    struct chunk_counts counts;
    memset(&counts, 0, sizeof counts);
    uint64_t nchunks = 0, n = 0;
    for (xa_chunk *c = a->chunks; c && nchunks < WALK_LIMIT; c = c->next, nchunks++)
        check_chunk(x, a, c, &counts);
    /* The statistics' slab counts per class (slabs made, reclassed, freed). */
    for (unsigned cls = 0; cls < XA_NCLASSES; cls++)
        if (counts.class_slabs[cls] != a->class_slabs[cls] ||
            counts.class_capacity[cls] != a->class_capacity[cls])
            bad(x, "arena %u: class %u has %llu slabs of %llu blocks, counts say %llu of %llu",
                a->index, cls, (unsigned long long)counts.class_slabs[cls],
                (unsigned long long)counts.class_capacity[cls],
                (unsigned long long)a->class_slabs[cls],
                (unsigned long long)a->class_capacity[cls]);
    if (nchunks != a->nchunks)
        bad(x, "arena %u: %llu chunks listed, count says %llu", a->index,
            (unsigned long long)nchunks, (unsigned long long)a->nchunks);
    if (counts.used_units != a->used_units || counts.dirty_units != a->dirty_units ||
        counts.free_units - counts.dirty_units != a->retained_units)
        bad(x, "arena %u: units used %llu/%llu dirty %llu/%llu retained %llu/%llu", a->index,
            (unsigned long long)counts.used_units, (unsigned long long)a->used_units,
            (unsigned long long)counts.dirty_units, (unsigned long long)a->dirty_units,
            (unsigned long long)(counts.free_units - counts.dirty_units),
            (unsigned long long)a->retained_units);
    if (counts.large != a->large_count)
        bad(x, "arena %u: %llu large runs, count says %llu", a->index,
            (unsigned long long)counts.large, (unsigned long long)a->large_count);
    /* Bins: every free run exactly once, in the bin of its length. */
    uint64_t binned = 0;
    for (unsigned b = 1; b < XA_UNITS_PER_CHUNK; b++) {
        xa_slab *prev = NULL;
        n = 0;
        for (xa_slab *s = a->bin_head[b]; s && n < WALK_LIMIT; prev = s, s = s->next, n++) {
            if (s->kind != XA_RUN_FREE || s->units != b || s->prev != prev ||
                xa_chunk_of(s)->arena != a)
                bad(x, "arena %u: bin %u holds run %p (kind %u, %u units)", a->index, b,
                    (void *)s, s->kind, s->units);
        }
        if (a->bin_tail[b] != prev || !!(a->bins_nonempty & (1u << b)) != (n > 0))
            bad(x, "arena %u: bin %u tail or non-empty bit wrong", a->index, b);
        binned += n;
    }
    if (binned != counts.nfree_runs)
        bad(x, "arena %u: %llu free runs, %llu in bins", a->index,
            (unsigned long long)counts.nfree_runs, (unsigned long long)binned);
    n = 0;
    for (xa_slab *s = a->dirty_head; s && n < WALK_LIMIT; s = s->dnext, n++)
        if (s->kind != XA_RUN_FREE || !s->in_dirty_list || !s->dirty)
            bad(x, "arena %u: dirty list holds run %p (kind %u)", a->index, (void *)s, s->kind);
    uint32_t trim_due = 0;
    for (unsigned cls = 0; cls < XA_NCLASSES; cls++) {
        unsigned warm = 0;
        for (xa_slab *s = a->abandoned[cls]; s; s = s->next) {
            trim_due += !s->warm && s->freed_ns;
            if (s->kind != XA_RUN_SMALL || s->cls != cls || s->heap ||
                !(s->in_full & XA_SLAB_ABANDONED))
                bad(x, "arena %u: abandoned list %u holds %p", a->index, cls, (void *)s);
            else
                check_slab(x, xa_chunk_of(s), s, true);
            if (s->warm) {
                warm++;
                /* (Kept empty: none of its blocks can be out.) */
                if (xa_slab_used(s) != 0 || xa_tf_list(s->thread_free))
                    bad(x, "arena %u: warm slab %p of class %u has blocks out (%u)", a->index,
                        (void *)s, cls, xa_slab_used(s));
            }
        }
        if (warm != a->warm_slabs[cls] || warm > XA_WARM_SLABS)
            bad(x, "arena %u: class %u keeps %u warm slabs, its count says %u", a->index, cls,
                warm, a->warm_slabs[cls]);
    }
    if (trim_due != a->trim_due_slabs)
        bad(x, "arena %u: %u abandoned slabs due a page trim, its count says %u", a->index,
            trim_due, a->trim_due_slabs);
    check_huge_list(x, a, a->huge_live, a->huge_count, true);
    check_huge_list(x, a, a->huge_cache, a->huge_cache_count, false);
}

/* ---- the calling thread's heap ---- */

static void check_heap(struct ctx *x, xa_heap *h)
{
    for (unsigned cls = 0; cls < XA_NCLASSES; cls++) {
        /* The current slab: one of the class list (any place in it: a free
         * makes the slab it freed into current), the serving stack, or a
         * placeholder (empty; the reclaim sentinel while the purger looks). */
        xa_slab *cur = __atomic_load_n(&h->cur[cls], __ATOMIC_RELAXED);
        bool cur_found = cur == &xa_slab_empty || cur == &xa_slab_reclaiming ||
                         (cls < XA_FOREIGN_CLASSES && cur == xa_heap_serving(h, cls));
        xa_slab *prev = NULL;
        for (xa_slab *s = h->avail[cls]; s; prev = s, s = s->next) {
            cur_found |= s == cur;
            if (s->kind != XA_RUN_SMALL || s->cls != cls || s->heap != h ||
                (s->in_full & (XA_SLAB_IN_FULL | XA_SLAB_ABANDONED)) ||
                s->prev != prev) {
                bad(x, "heap: class list %u holds slab %p (kind %u, class %u)", cls, (void *)s,
                    s->kind, s->cls);
                break;
            }
            if (((s->used & XA_USED_HEAD) != 0) != (!prev && !h->no_keep))
                bad(x, "heap: slab %p (class %u, %s of its list) has the head bit %s", (void *)s,
                    cls, prev ? "not the head" : "the head", prev ? "set" : "wrong");
            check_slab(x, xa_chunk_of(s), s, true);
        }
        if (!cur_found)
            bad(x, "heap: cur[%u] is neither a slab of its list nor the serving stack", cls);
    }
    for (xa_slab *s = h->full; s; s = s->next) {
        if (s->kind != XA_RUN_SMALL || s->heap != h || !(s->in_full & XA_SLAB_IN_FULL) ||
            (s->in_full & XA_SLAB_ABANDONED)) {
            bad(x, "heap: full list holds slab %p", (void *)s);
            break;
        }
        if (s->used & XA_USED_HEAD)
            bad(x, "heap: slab %p of the full list has the head bit", (void *)s);
        check_slab(x, xa_chunk_of(s), s, true);
    }
    for (unsigned cls = 0; cls < XA_FOREIGN_CLASSES; cls++) {
        if (!xa_heap_foreign_ready(h, cls))
            continue; /* never set up (and not read: see XA_HEAP_ALLOC_SIZE) */
        for (unsigned which = 0; which < 2; which++) {
            const xa_slab *f = which ? xa_heap_serving(h, cls) : xa_heap_foreign(h, cls);
            const char *name = which ? "serving" : "foreign";
            if (!which && f->used != 0)
                bad(x, "heap: foreign stack %u was popped from (%u)", cls, f->used);
            uint32_t n = 0;
            for (uintptr_t p = f->free; p && n <= f->reserved;
                 p = dec(((xa_block *)p)->next), n++) {
                xa_chunk *c = xa_chunkmap_lookup((void *)p);
                const xa_slab *s = c ? xa_run_of(c, (void *)p) : NULL;
                if (!s || s->kind != XA_RUN_SMALL || s->cls != cls ||
                    !xa_slab_is_block(s, (void *)p)) {
                    bad(x, "heap: %s stack %u holds %p, not a block of the class", name, cls,
                        (void *)p);
                    break;
                }
            }
            if (n != f->reserved - f->used)
                bad(x, "heap: %s stack %u has %u blocks, counts say %u", name, cls, n,
                    f->reserved - f->used);
        }
    }
    /* The unsettled ring: remote frees yet to take effect, each of a
     * carved block of a small slab of a class with stacks (another
     * heap's, or one this heap adopted since). */
    if (h->foreign_ready) {
        const struct xa_heap_remote *r = xa_heap_remote(h);
        for (unsigned i = 0; i < XA_HEAP_UNSETTLED; i++) {
            xa_block *u = r->unsettled[i];
            if (!u)
                continue;
            xa_chunk *c = xa_chunkmap_lookup(u);
            const xa_slab *s = c ? xa_run_of(c, u) : NULL;
            if (!s || s->kind != XA_RUN_SMALL || s->cls >= XA_FOREIGN_CLASSES ||
                !xa_slab_is_block(s, u))
                bad(x, "heap: unsettled slot %u holds %p, not a small block", i, (void *)u);
        }
    }
    /* The outbox: chains of blocks of their slot's slab, as long as
     * their counts say, all counted in outbox_held. */
    uint32_t held = 0;
    if (h->outbox_held) {
        const struct xa_heap_remote *r = xa_heap_remote(h);
        for (unsigned i = 0; i < XA_HEAP_OUTBOX_SLOTS; i++) {
            const struct xa_heap_outbox *o = &r->outbox[i];
            uint32_t n = 0;
            for (const xa_block *b = o->head; b && n < o->n; n++) {
                xa_chunk *c = xa_chunkmap_lookup((void *)b);
                if (!c || xa_run_of(c, (void *)b) != o->slab ||
                    !xa_slab_is_block(o->slab, (void *)b)) {
                    bad(x, "heap: outbox slot %u holds %p, not a block of slab %p", i,
                        (const void *)b, (void *)o->slab);
                    break;
                }
                if (n + 1 == o->n && b != o->tail)
                    bad(x, "heap: outbox slot %u ends at %p, not at its tail %p", i,
                        (const void *)b, (void *)o->tail);
                b = (const xa_block *)dec(b->next);
            }
            if (n != o->n)
                bad(x, "heap: outbox slot %u has %u blocks, its count says %u", i, n, o->n);
            held += o->n;
        }
    }
    if (held != h->outbox_held)
        bad(x, "heap: the outbox holds %u blocks, the count says %u", held, h->outbox_held);
    uint32_t spares = 0;
    for (unsigned cls = 0; cls < XA_NCLASSES; cls++) {
        unsigned depth = 0;
        for (xa_slab *s = atomic_load_explicit(&h->spare[cls], memory_order_relaxed); s;
             s = s->next) {
            spares++;
            /* Empty, of its class, of this heap, in no list of it;
             * XA_SPARES_SMALL at most (a big class's beyond the first only
             * while the heap churns it, see spare_park). */
            if (s->kind != XA_RUN_SMALL || s->cls != cls || s->heap != h ||
                xa_slab_used(s) != 0 || (s->in_full & XA_SLAB_IN_FULL) || s == h->cur[cls] ||
                ++depth > XA_SPARES_SMALL) {
                bad(x, "heap: spare %u is slab %p (kind %u, class %u, used %u)", cls, (void *)s,
                    s->kind, s->cls, xa_slab_used(s));
                break;
            }
            check_slab(x, xa_chunk_of(s), s, true);
        }
    }
    if (spares != __atomic_load_n(&h->spare_count, __ATOMIC_RELAXED))
        bad(x, "heap: %u spare slabs, the count says %u", spares, h->spare_count);
    for (unsigned i = 0; i < XA_LARGE_CACHE_SLOTS; i++) {
        /* A slot word is the block's address with a size key in its low
         * bits (below the page size). */
        uintptr_t p = atomic_load_explicit(&h->large_cache[i], memory_order_relaxed) &
                      ~(uintptr_t)(XA_OS_PAGE - 1);
        if (!p)
            continue;
        xa_chunk *c = xa_chunkmap_lookup((void *)p);
        if (c && c->slabs[0].kind == XA_RUN_HUGE) { /* a parked huge mapping */
            if (p != (uintptr_t)c || c->huge_ptr) /* the word holds the mapping */
                bad(x, "heap: large cache slot %u holds %p, not a parked huge block", i,
                    (void *)p);
            continue;
        }
        const xa_slab *s = c ? xa_run_of(c, (void *)p) : NULL;
        if (!s || s->kind != XA_RUN_LARGE || !s->in_full ||
            (void *)p != xa_unit_addr(c, s->first_unit))
            bad(x, "heap: large cache slot %u holds %p, not a parked large block", i, (void *)p);
    }
}

size_t xa_invariant_check(char *msg, size_t len)
{
    struct ctx x = {0, msg, len};
    if (len)
        msg[0] = 0;
    for (unsigned i = 0; i < xa_narenas; i++) {
        xa_arena *a = __atomic_load_n(&xa_arenas[i], __ATOMIC_ACQUIRE);
        if (!a)
            continue;
        xa_lock_acquire(&a->lock);
        check_arena(&x, a);
        xa_lock_release(&a->lock);
    }
    xa_heap *h = xa_tls_heap;
    if (h != &xa_heap_empty) {
        /* The purger leaves the heap's slabs alone meanwhile. */
        uint32_t busy = xa_heap_owner_enter(h);
        check_heap(&x, h);
        xa_heap_owner_leave(h, busy);
    }
    return x.problems;
}
#else
typedef int xa_invariant_unused; /* ISO C: a translation unit is not empty */
#endif
