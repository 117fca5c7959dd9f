/* arena_slab.c: the arena's side of slabs: new ones from runs, freed ones
 * back to runs, abandoned ones (their thread exited) kept, adopted or
 * reclaimed, remote frees collected, carved blocks counted.
 * Layer: arena; above pages. */
#include "arena_internal.h"

#include <string.h>

#include "config.h"
#include "os.h"
#include "pages.h"

xa_slab *xa_arena_slab_new(xa_arena *a, unsigned cls, struct xa_heap *heap)
{
    const struct xa_class_info *ci = &xa_classes[cls];
    xa_lock_acquire(&a->lock);
    xa_slab *s = xa_run_alloc(a, ci->units);
    if (s) {
        xa_chunk *c = xa_chunk_of(s);
        s->kind = XA_RUN_SMALL;
        s->cls = (uint8_t)cls;
        s->block_size = ci->size;
        s->div_magic = ci->div_magic;
        s->reserved = ci->blocks;
        s->start = xa_unit_addr(c, s->first_unit);
        s->heap = heap;
        /* Copies of what a free of another thread's block asks (keep it,
         * and whose arena's count it lowers), on the line it reads. */
        s->small.keep_key = xa_chunk_keep_key(a->node);
        s->small.arena_index = a->index;
        if (ci->size >= XA_TRIM_MIN_BLOCK)
            xa_slab_set_in_full(s, XA_SLAB_TRIM);
        a->class_slabs[cls]++;
        a->class_capacity[cls] += ci->blocks;
    }
    xa_lock_release(&a->lock);
    return s;
}

void xa_arena_note_carved(xa_slab *s, uint32_t n)
{
    xa_chunk *c = xa_chunk_of(s);
    __atomic_fetch_add(&c->arena->class_carved[s->cls], n, __ATOMIC_RELAXED);
    xa_arena_note_dense_carved(s, n);
}

void xa_arena_note_dense_carved(xa_slab *s, uint32_t n)
{
    xa_chunk *c = xa_chunk_of(s);
    xa_arena *a = c->arena;
    uint64_t dense = xa_chunk_dense_add(c, (uint64_t)n * s->block_size);
    if (xa_unlikely(xa_pages_policy == XA_THP_POLICY_DENSE && !xa_chunk_huge_advised(c) &&
                    dense >= ((uint64_t)XA_THP_DENSE_UNITS << XA_UNIT_SHIFT))) {
        xa_lock_acquire(&a->lock);
        xa_chunk_density_changed(a, c);
        xa_lock_release(&a->lock);
    }
}

void xa_arena_note_uncarved(xa_slab *s)
{
    xa_chunk *c = xa_chunk_of(s);
    xa_arena *a = c->arena;
    __atomic_fetch_sub(&a->class_carved[s->cls], s->capacity, __ATOMIC_RELAXED);
    uint64_t dense = xa_chunk_dense_add(c, (uint64_t)0 - (uint64_t)s->capacity * s->block_size);
    if (xa_unlikely(xa_pages_policy == XA_THP_POLICY_DENSE && xa_chunk_huge_advised(c) &&
                    dense < ((uint64_t)XA_THP_SPARSE_UNITS << XA_UNIT_SHIFT))) {
        xa_lock_acquire(&a->lock);
        xa_chunk_density_changed(a, c);
        xa_lock_release(&a->lock);
    }
}


static void slab_release_locked(xa_arena *a, xa_chunk *c, xa_slab *s)
{
    /* (Withheld blocks were uncounted when their pages were purged.) */
    uint32_t carved = s->capacity - xa_slab_withheld(s);
    a->class_slabs[s->cls]--;
    a->class_capacity[s->cls] -= s->reserved;
    __atomic_fetch_sub(&a->class_carved[s->cls], carved, __ATOMIC_RELAXED);
    xa_chunk_dense_add(c, (uint64_t)0 - (uint64_t)carved * s->block_size);
    s->kind = XA_RUN_FREE;
    s->heap = NULL;
    xa_run_free(a, c, s);
}

void xa_arena_slab_reclass(xa_slab *s, unsigned cls)
{
    const struct xa_class_info *ci = &xa_classes[cls];
    xa_chunk *c = xa_chunk_of(s);
    xa_arena *a = c->arena;
    uint64_t carved = (uint64_t)s->capacity * s->block_size;
    xa_lock_acquire(&a->lock);
    a->class_slabs[s->cls]--;
    a->class_capacity[s->cls] -= s->reserved;
    a->class_slabs[cls]++;
    a->class_capacity[cls] += ci->blocks;
    xa_chunk_dense_add(c, 0 - carved);
    xa_chunk_density_changed(a, c); /* (may demote it: the lock is held) */
    /* (Under the lock, with the counts: the invariant walk and the
     * statistics see the slab and the counts agree.) */
    s->cls = (uint8_t)cls;
    s->block_size = ci->size;
    s->div_magic = ci->div_magic;
    s->reserved = ci->blocks;
    s->capacity = 0;
    s->free = 0;
    xa_lock_release(&a->lock);
}

void xa_arena_slab_free(xa_chunk *c, xa_slab *s)
{
    xa_arena *a = c->arena;
    xa_lock_acquire(&a->lock);
    slab_release_locked(a, c, s);
    xa_lock_release(&a->lock);
}

static void abandon_locked(xa_arena *a, xa_slab *s)
{
    __atomic_store_n(&s->heap, NULL, __ATOMIC_RELEASE);
    xa_slab_set_in_full(s, (s->in_full & ~XA_SLAB_IN_FULL) | XA_SLAB_ABANDONED);
    s->prev = NULL;
    s->next = a->abandoned[s->cls];
    if (s->next)
        s->next->prev = s;
    a->abandoned[s->cls] = s;
}

/* Sets when abandoned slab s (not warm) last got blocks back, or 0 once
 * its free pages are purged, and counts the slabs due. Pre: arena lock. */
static void set_trim_due(xa_arena *a, xa_slab *s, uint64_t ns)
{
    if ((s->freed_ns != 0) != (ns != 0))
        __atomic_store_n(&a->trim_due_slabs, a->trim_due_slabs + (ns ? 1u : (uint32_t)-1),
                         __ATOMIC_RELAXED);
    s->freed_ns = ns;
}

void xa_arena_slab_abandon(xa_chunk *c, xa_slab *s)
{
    xa_arena *a = c->arena;
    uint64_t now = xa_os_now_ns();
    xa_lock_acquire(&a->lock);
    abandon_locked(a, s);
    set_trim_due(a, s, now); /* its free pages are purged decay_ms from now */
    xa_lock_release(&a->lock);
    /* The purger must come back for it: the process may not call the
     * allocator again. */
    if (!__atomic_load_n(&xa_arena_dirty_pending, __ATOMIC_RELAXED))
        __atomic_store_n(&xa_arena_dirty_pending, true, __ATOMIC_RELAXED);
}

bool xa_arena_slab_keep(xa_chunk *c, xa_slab *s)
{
    /* Big classes are left out: their slabs' free blocks are purged as
     * they go (XA_SLAB_TRIM), which an adopter would pay for again. */
    if (s->block_size >= XA_TRIM_MIN_BLOCK || !__atomic_load_n(&xa_opt.decay_ms, __ATOMIC_RELAXED))
        return false;
    xa_arena *a = c->arena;
    xa_lock_acquire(&a->lock);
    bool keep = a->warm_slabs[s->cls] < XA_WARM_SLABS;
    if (keep) {
        a->warm_slabs[s->cls]++;
        __atomic_store_n(&a->warm_bytes, a->warm_bytes + ((uint64_t)s->units << XA_UNIT_SHIFT),
                         __ATOMIC_RELAXED);
        s->warm = 1;
        s->freed_ns = xa_os_now_ns();
        abandon_locked(a, s);
    }
    xa_lock_release(&a->lock);
    /* The purger must come back for it (as for a freed run): a process
     * whose threads all exited does not call the allocator again. */
    if (keep && !__atomic_load_n(&xa_arena_dirty_pending, __ATOMIC_RELAXED))
        __atomic_store_n(&xa_arena_dirty_pending, true, __ATOMIC_RELAXED);
    return keep;
}

uint32_t xa_slab_collect(xa_slab *s)
{
    uintptr_t old = atomic_load_explicit(&s->thread_free, memory_order_relaxed);
    if (!xa_tf_list(old))
        return 0;
    /* Take the list and its count, keep the state bits. */
    while (!atomic_compare_exchange_weak_explicit(&s->thread_free, &old, old & XA_TF_MASK,
                                                  memory_order_acquire, memory_order_relaxed))
        ;
    uintptr_t head = xa_tf_list(old);
    uint32_t n = xa_tf_count(old);
    /* The owner collects when its own list is empty (its malloc's slow
     * path): the list becomes the slab's as it is, without touching a
     * block. Otherwise (trim, exit) the two lists are joined at the tail. */
    if (s->free) {
        xa_block *tail = (xa_block *)head;
        for (uintptr_t next; (next = tail->next ^ xa_heap_secret) != 0; tail = (xa_block *)next)
            ;
        tail->next = s->free ^ xa_heap_secret;
    }
    s->free = head;
    s->used -= n;
    return n;
}

static void abandoned_unlink(xa_arena *a, xa_slab *s)
{
    if (s->warm) {
        s->warm = 0;
        s->freed_ns = 0;
        a->warm_slabs[s->cls]--;
        __atomic_store_n(&a->warm_bytes, a->warm_bytes - ((uint64_t)s->units << XA_UNIT_SHIFT),
                         __ATOMIC_RELAXED);
    }
    set_trim_due(a, s, 0);
    if (s->prev)
        s->prev->next = s->next;
    else
        a->abandoned[s->cls] = s->next;
    if (s->next)
        s->next->prev = s->prev;
    s->next = s->prev = NULL;
}

/* ---- free big blocks ---- */

#define TRIM_MARK 0x7472696d6d656421ULL /* "trimmed!" */

static inline uintptr_t trim_mark(const xa_block *b)
{
    return ((uintptr_t)b ^ xa_heap_secret) ^ TRIM_MARK;
}

/* Purges the whole pages of one free block that do not hold its first
 * three words (the link, the free mark, the trim mark) and marks it so a
 * later trim does not purge it again. Malloc clears the first two words
 * only, so a block handed out and freed again since may still carry the
 * mark while its pages are back (the program need not write there): a
 * marked block whose last page is resident is purged again. Blocks of the
 * eight-per-doubling classes are not page multiples: a page the block
 * shares with its neighbour (whose link it may hold) is never purged. */
size_t xa_slab_trim_block(xa_block *b, uint32_t block_size, unsigned path)
{
    uintptr_t *words = (uintptr_t *)b;
    uintptr_t first = XA_ALIGN_UP((uintptr_t)b + 3 * sizeof(uintptr_t), XA_OS_PAGE);
    uintptr_t end = ((uintptr_t)b + block_size) & ~(uintptr_t)(XA_OS_PAGE - 1);
    if (end <= first)
        return 0;
    if (words[2] == trim_mark(b) && !xa_os_page_resident((void *)(end - XA_OS_PAGE)))
        return 0;
    size_t len = end - first;
    xa_pages_purge((void *)first, len);
    words[2] = trim_mark(b);
    xa_arena_count_purged(xa_chunk_of(b)->arena, path, len, 1);
    return len;
}

/* ---- free pages of abandoned slabs ----
 *
 * A thread that exits leaves its slabs with the blocks other threads still
 * hold (handed over, to be freed later or never): a few live blocks in
 * each, and every page the thread carved resident. Pages that only free
 * blocks touch are purged once the slab has stayed abandoned for
 * decay_ms (at once on a forced purge). The free blocks whose first bytes
 * (link and mark) lay there leave the free list: withheld, purged_pages
 * says where, until an adopter lists them again (their pages then fault
 * in, zero-filled). The slab is flagged XA_SLAB_PAGES_PURGED, which keeps
 * every free of its blocks out of the other threads' stacks and rings:
 * they all reach xa_heap_free_remote, which reports a withheld block as
 * the double free it is (the purge erased its free mark). */

/* Runs body for every block i of s whose first bytes lie in a page of mask. */
#define FOR_BLOCKS_HEADED_IN(s, mask, i, body)                                                 \
    for (uint32_t m_ = (mask); m_; m_ &= m_ - 1) {                                             \
        uint64_t lo_ = (uint64_t)__builtin_ctz(m_) * XA_OS_PAGE, hi_ = lo_ + XA_OS_PAGE;       \
        for (uint32_t i = (uint32_t)((lo_ + (s)->block_size - 1) / (s)->block_size);           \
             i < (s)->capacity && (uint64_t)i * (s)->block_size < hi_; i++) {                  \
            body;                                                                              \
        }                                                                                      \
    }

uint32_t xa_slab_withheld(const xa_slab *s)
{
    if (!(s->in_full & XA_SLAB_PAGES_PURGED))
        return 0;
    uint32_t n = 0;
    FOR_BLOCKS_HEADED_IN(s, s->purged_pages, i, n++);
    return n;
}

static void slab_count_carved(xa_arena *a, xa_slab *s, int64_t n)
{
    __atomic_fetch_add(&a->class_carved[s->cls], (uint64_t)n, __ATOMIC_RELAXED);
    xa_chunk_dense_add(xa_chunk_of(s), (uint64_t)(n * (int64_t)s->block_size));
}

/* Purges the pages of s past its carved blocks: a slab made from a run
 * still resident from its last use carves into those pages as it goes,
 * and they stay as the last use left them. Pre: arena lock, s abandoned. */
static size_t slab_tail_trim(xa_arena *a, xa_slab *s, unsigned path)
{
    uintptr_t carved_end = XA_ALIGN_UP((uintptr_t)s->start + (uintptr_t)s->capacity * s->block_size,
                                       XA_OS_PAGE);
    uintptr_t end = (uintptr_t)s->start + ((uintptr_t)s->units << XA_UNIT_SHIFT);
    /* (Looked at once more after every remote free: the tail is resident
     * only if its run was, in which case its first page is.) */
    if (carved_end >= end || xa_chunk_huge_advised(xa_chunk_of(s)) ||
        !xa_os_page_resident((void *)carved_end))
        return 0;
    xa_pages_purge((void *)carved_end, end - carved_end);
    xa_arena_count_purged(a, path, end - carved_end, 1);
    return end - carved_end;
}

/* Purges the pages of abandoned slab s (its remote frees collected) that
 * no live block touches. Pre: arena lock. Returns the bytes purged. */
static size_t slab_page_trim(xa_arena *a, xa_slab *s, unsigned path)
{
    uint32_t bs = s->block_size, cap = s->capacity;
    if (s->in_full & XA_SLAB_TRIM) {
        /* Big blocks have pages of their own: each free one is purged but
         * for the page of its first words, which stay, as in the owner's
         * trim (a remote free trims only past an allowance). */
        if (xa_chunk_huge_advised(xa_chunk_of(s)))
            return 0;
        size_t bytes = 0;
        uint32_t limit = cap;
        for (uintptr_t p = s->free; p && limit--; p = ((xa_block *)p)->next ^ xa_heap_secret)
            bytes += xa_slab_trim_block((xa_block *)p, bs, path);
        return bytes;
    }
    uintptr_t start = (uintptr_t)s->start;
    uint64_t span = XA_ALIGN_UP((uint64_t)cap * bs, XA_OS_PAGE);
    if (!cap || span > 32 * XA_OS_PAGE || xa_chunk_huge_advised(xa_chunk_of(s)))
        return 0; /* (a purge would split the chunk's huge pages) */
    /* The free blocks, a bit each (a small slab holds 4096 at most). */
    uint64_t freebits[4096 / 64];
    if (cap > 4096)
        return 0;
    memset(freebits, 0, ((cap + 63) / 64) * sizeof freebits[0]);
    uint32_t listed = 0;
    for (uintptr_t p = s->free; p && listed < cap; listed++) {
        uint32_t i = (uint32_t)((p - start) / bs);
        freebits[i / 64] |= 1ull << (i % 64);
        p = ((xa_block *)p)->next ^ xa_heap_secret;
    }
    uint32_t old = s->purged_pages, mask = 0;
    if (!(s->in_full & XA_SLAB_PAGES_PURGED))
        old = 0;
    for (unsigned pg = 0; pg < span / XA_OS_PAGE; pg++) {
        if ((old >> pg) & 1u)
            continue;
        uint64_t lo = (uint64_t)pg * XA_OS_PAGE;
        uint32_t first = (uint32_t)(lo / bs), last = (uint32_t)((lo + XA_OS_PAGE - 1) / bs);
        bool free_only = true;
        for (uint32_t i = first; i <= last && i < cap && free_only; i++)
            free_only = (freebits[i / 64] >> (i % 64)) & 1u;
        if (free_only)
            mask |= 1u << pg;
    }
    if (!mask)
        return 0;
    /* The list without the blocks headed in the new pages, in its order;
     * every link is read before a page goes. */
    uintptr_t head = 0;
    xa_block *tail = NULL;
    uint32_t withheld = 0;
    for (uintptr_t p = s->free; p;) {
        xa_block *b = (xa_block *)p;
        p = b->next ^ xa_heap_secret;
        if ((mask >> ((uintptr_t)b - start) / XA_OS_PAGE) & 1u) {
            withheld++;
            continue;
        }
        if (tail)
            tail->next = (uintptr_t)b ^ xa_heap_secret;
        else
            head = (uintptr_t)b;
        tail = b;
    }
    if (tail)
        tail->next = xa_heap_secret; /* (the end: 0, encoded) */
    s->free = head;
    __atomic_store_n(&s->purged_pages, old | mask, __ATOMIC_RELAXED);
    xa_slab_set_in_full(s, s->in_full | XA_SLAB_PAGES_PURGED);
    slab_count_carved(a, s, -(int64_t)withheld);
    size_t bytes = 0;
    unsigned runs = 0;
    for (uint32_t m = mask; m;) {
        unsigned pg = (unsigned)__builtin_ctz(m), end = pg;
        while (end < 32 && ((m >> end) & 1u))
            end++;
        xa_pages_purge((void *)(start + (uintptr_t)pg * XA_OS_PAGE),
                       (size_t)(end - pg) * XA_OS_PAGE);
        bytes += (size_t)(end - pg) * XA_OS_PAGE;
        runs++;
        m &= end < 32 ? ~((1u << end) - 1u) : 0;
    }
    xa_arena_count_purged(a, path, bytes, runs);
    return bytes;
}

/* Lists s's withheld blocks again, for its new owner. Pre: arena lock. */
static void slab_pages_restore(xa_arena *a, xa_slab *s)
{
    if (!(s->in_full & XA_SLAB_PAGES_PURGED))
        return;
    uint32_t n = 0;
    uintptr_t start = (uintptr_t)s->start;
    FOR_BLOCKS_HEADED_IN(s, s->purged_pages, i, {
        xa_block *b = (xa_block *)(start + (uintptr_t)i * s->block_size);
        b->next = s->free ^ xa_heap_secret;
        b->mark = xa_free_mark_of(b);
        s->free = (uintptr_t)b;
        n++;
    });
    __atomic_store_n(&s->purged_pages, 0, __ATOMIC_RELAXED);
    xa_slab_set_in_full(s, s->in_full & ~XA_SLAB_PAGES_PURGED);
    slab_count_carved(a, s, n);
}

size_t xa_slab_reclaim_abandoned(xa_arena *a, uint64_t now, uint64_t warm_age_ns,
                                 uint64_t trim_age_ns, unsigned path)
{
    size_t freed = 0;
    for (unsigned cls = 0; cls < XA_NCLASSES; cls++) {
        for (xa_slab *s = a->abandoned[cls]; s;) {
            xa_slab *next = s->next;
            if (s->warm && now - s->freed_ns < warm_age_ns) {
                s = next; /* (kept for a next thread a while longer) */
                continue;
            }
            uint32_t got = xa_slab_collect(s);
            if (xa_slab_used(s) == 0) {
                abandoned_unlink(a, s);
                slab_release_locked(a, xa_chunk_of(s), s);
                freed++;
            } else if (!s->warm) {
                /* Looked at once its blocks stop coming back for a while,
                 * and again after more came. */
                if (got)
                    set_trim_due(a, s, now);
                if (s->freed_ns && now - s->freed_ns >= trim_age_ns) {
                    slab_tail_trim(a, s, path);
                    slab_page_trim(a, s, path);
                    set_trim_due(a, s, 0);
                }
            }
            s = next;
        }
    }
    return freed;
}

/* Takes abandoned slab s for heap. Pre: arena lock held, s abandoned. */
static void adopt_locked(xa_arena *a, xa_slab *s, struct xa_heap *heap)
{
    abandoned_unlink(a, s);
    slab_pages_restore(a, s);
    xa_slab_set_in_full(s, s->in_full & ~XA_SLAB_ABANDONED);
    xa_slab_collect(s);
    /* Back to a normal owner: remote frees may notify again. */
    uintptr_t old = atomic_load_explicit(&s->thread_free, memory_order_relaxed);
    while (!atomic_compare_exchange_weak_explicit(&s->thread_free, &old,
                                                  (old & ~XA_TF_MASK) | XA_TF_NORMAL,
                                                  memory_order_acq_rel, memory_order_relaxed))
        ;
    __atomic_store_n(&s->heap, heap, __ATOMIC_RELEASE);
}

xa_slab *xa_arena_slab_adopt(xa_arena *a, unsigned cls, struct xa_heap *heap)
{
    if (!__atomic_load_n(&a->abandoned[cls], __ATOMIC_RELAXED))
        return NULL;
    xa_lock_acquire(&a->lock);
    xa_slab *s = a->abandoned[cls];
    if (s)
        adopt_locked(a, s, heap);
    xa_lock_release(&a->lock);
    return s;
}

bool xa_arena_slab_adopt_this(xa_arena *a, xa_slab *s, struct xa_heap *heap)
{
    xa_lock_acquire(&a->lock);
    bool ok = s->kind == XA_RUN_SMALL && (s->in_full & XA_SLAB_ABANDONED);
    if (ok)
        adopt_locked(a, s, heap);
    xa_lock_release(&a->lock);
    return ok;
}
