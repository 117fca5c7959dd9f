/* heap.c: slow paths of the per-thread heaps: refill, full/unfull, remote
 * frees, collection, abandonment at thread exit. See heap.h.
 * Layer: above arena; calls init.c's thread entry on a thread's first use. */
#include "heap.h"

#include "numa.h"

#include <errno.h>
#include <sched.h>
#include <string.h>

#include "config.h"
#include "lock.h"
#include "meta.h"
#include "os.h"
#include "pages.h"

static void no_tick(uint64_t now) { (void)now; }
static void no_dirty(void) { __atomic_store_n(&xa_arena_dirty_pending, false, __ATOMIC_RELAXED); }
/* The process boots on its first allocation, before any constructor could
 * set a hook: thread_init starts as init.c's entry point, the one call the
 * heap makes upward (declared in heap.h, defined by the orchestrator). */
struct xa_heap_hooks xa_heap_hooks = {xa_heap_boot_thread, no_tick, no_dirty};
bool xa_heap_purger_active;
unsigned xa_heap_purger_state;

xa_slab xa_slab_empty;
/* The heap of a thread that has not allocated yet: every class points to
 * an empty slab, so its first malloc takes the slow path, which sets the
 * thread (and, the first time, the process) up. No init branch on the
 * fast path. */
xa_heap xa_heap_empty = {.cur = {[0 ... XA_NCLASSES - 1] = &xa_slab_empty}};
uintptr_t xa_heap_secret, xa_heap_free_mark;
__thread xa_heap *xa_tls_heap __attribute__((tls_model("initial-exec"))) = &xa_heap_empty;

static xa_lock heaps_lock = XA_LOCK_INIT(XA_RANK_HEAPS);
static xa_heap *heaps_live, *heaps_free;
static uint64_t heaps_count;
/* Counters of heaps that have exited, and of frees by threads that never
 * had a heap. */
static uint64_t dead_nmalloc_big, dead_nfree_big, dead_nrealloc;
static int64_t dead_requested_delta;
static uint64_t dead_remote_nfree[XA_NCLASSES]; /* class totals only */
static uint64_t next_global_decay_ns;

static inline uintptr_t enc(uintptr_t p) { return p ^ xa_heap_secret; }

bool xa_heaps_many;
/* False while the purger sleeps with no heap to look at for idle reclaim;
 * the next slab page carved sets it and wakes the purger. */
static bool reclaim_armed;
/* cur[] of a class while the purger reclaims its slab: empty, so the
 * owner's malloc takes the slow path and waits. No owner code stores it. */
xa_slab xa_slab_reclaiming;

static bool large_cache_flush(xa_heap *h, uint64_t now, bool force);
static void make_room(xa_heap *h);
static void remote_flush(xa_heap *h);
static void outbox_flush(xa_heap *h);
static void remote_add(xa_heap *h, unsigned index, uint64_t bytes);
static xa_slab *spare_take(xa_heap *h, unsigned cls);
static xa_slab *spare_reclass(xa_heap *h, unsigned cls);

/* Sets class cls's bit in *bits (slab_returned, slab_churn), with no
 * locked instruction once it is set. */
static void class_bit_set(uint64_t *bits, unsigned cls)
{
    if (!(__atomic_load_n(bits, __ATOMIC_RELAXED) & (1ull << cls)))
        __atomic_fetch_or(bits, 1ull << cls, __ATOMIC_RELAXED);
}

/* True when h has anything parked for large_cache_flush to return: large
 * blocks, huge mappings or spare slabs. */
static bool heap_has_parked(xa_heap *h)
{
    for (unsigned i = 0; i < XA_LARGE_CACHE_SLOTS; i++)
        if (atomic_load_explicit(&h->large_cache[i], memory_order_relaxed))
            return true;
    return __atomic_load_n(&h->spare_count, __ATOMIC_RELAXED) != 0;
}

/* A clock read on slow paths (upkeep) and used to stamp parked large
 * blocks: stamping them with a real clock read would cost a vDSO call on
 * every free of a large block, for a decay measured in seconds. */
static uint64_t coarse_now_ns;

/* Blocks a thread keeps of other threads' slabs, per class: 64 KiB worth,
 * between 16 and 256 blocks. Kept in the pseudo-slab's capacity field
 * (set at heap creation) so the free path does not divide. */
static inline uint32_t foreign_limit_of(unsigned cls)
{
    uint32_t n = 65536 / xa_classes[cls].size;
    return n < 16 ? 16 : n > XA_FOREIGN_MAX ? XA_FOREIGN_MAX : n;
}

static inline uint32_t foreign_limit(const xa_heap *h, unsigned cls)
{
    return xa_heap_foreign(h, cls)->capacity;
}

/* Sets up class cls's two stacks on the heap's first remote free of the
 * class (see XA_HEAP_ALLOC_SIZE). */
static XA_NOINLINE void foreign_init(xa_heap *h, xa_slab *f, unsigned cls)
{
    h->foreign_ready |= (uint64_t)1 << cls;
    xa_slab *v = xa_heap_serving(h, cls);
    f->kind = v->kind = XA_RUN_HEADER; /* never found by address */
    f->cls = v->cls = (uint8_t)cls;
    f->block_size = v->block_size = xa_classes[cls].size;
    f->capacity = foreign_limit_of(cls);
}

/* Statistics through the two stacks. A block pushed onto the foreign
 * stack still counts as live, in its class and in its arena: the free
 * costs nothing beyond the push, and the block is counted when it leaves
 * the stack. Moved to the serving stack, the stack's blocks count as
 * freed in one go (class frees, and bytes freed in the own arena: the
 * pops then count as allocations of this heap, so of its own arena, and
 * balance it); what the serving stack still holds when it is handed back
 * to the owners moves from the own arena's count to theirs (stack_flush).
 * A foreign stack handed back counts its blocks as freed in their arenas
 * then. Class and arena totals agree at all times, and lag by at most the
 * foreign stacks' contents (64 KiB per class a thread has freed others'
 * blocks of), as a thread cache's would; per-arena bytes are exact for
 * every block outside the two stacks. Without the move, every block a
 * thread took from another arena's slab counted in its own arena for good
 * (ovsdb update: arenas of 2 MiB showing 79 MiB). */
static void foreign_charge(xa_heap *h, const xa_slab *f)
{
    h->remote_nfree[f->cls] += f->reserved;
    remote_add(h, h->arena->index, (uint64_t)f->reserved * f->block_size);
}

/* ---- class lists ---- */

/* Moves the XA_USED_HEAD bit to s, the new head of its class list (none
 * when s is NULL), from old, the head it replaces. */
static void head_move(xa_heap *h, xa_slab *old, xa_slab *s)
{
    if (old) {
        old->used &= ~XA_USED_HEAD;
        xa_slab_sync_slow(old);
    }
    if (s && !h->no_keep) {
        s->used |= XA_USED_HEAD;
        xa_slab_sync_slow(s);
    }
}

static void avail_push_front(xa_heap *h, xa_slab *s)
{
    unsigned cls = s->cls;
    s->prev = NULL;
    s->next = h->avail[cls];
    head_move(h, s->next, s);
    if (s->next)
        s->next->prev = s;
    h->avail[cls] = s;
    __atomic_store_n(&h->cur[cls], s, __ATOMIC_RELAXED);
}

static void avail_push_back(xa_heap *h, xa_slab *s)
{
    unsigned cls = s->cls;
    xa_slab *head = h->avail[cls];
    if (!head) {
        avail_push_front(h, s);
        return;
    }
    /* Second place: the current slab stays current. */
    s->prev = head;
    s->next = head->next;
    if (s->next)
        s->next->prev = s;
    head->next = s;
}

static void avail_remove(xa_heap *h, xa_slab *s)
{
    unsigned cls = s->cls;
    if (s->prev) {
        s->prev->next = s->next;
    } else {
        h->avail[cls] = s->next;
        head_move(h, s, s->next);
    }
    if (s->next)
        s->next->prev = s->prev;
    s->next = s->prev = NULL;
    __atomic_store_n(&h->cur[cls], h->avail[cls] ? h->avail[cls] : &xa_slab_empty,
                     __ATOMIC_RELAXED);
}

static void full_push(xa_heap *h, xa_slab *s)
{
    s->prev = NULL;
    s->next = h->full;
    if (s->next)
        s->next->prev = s;
    h->full = s;
    xa_slab_set_in_full(s, s->in_full | XA_SLAB_IN_FULL);
}

static void full_remove(xa_heap *h, xa_slab *s)
{
    if (s->prev)
        s->prev->next = s->next;
    else
        h->full = s->next;
    if (s->next)
        s->next->prev = s->prev;
    s->next = s->prev = NULL;
    xa_slab_set_in_full(s, s->in_full & ~XA_SLAB_IN_FULL);
}

/* ---- collection ---- */

/* Carves the never-used blocks that start in the next page onto the free
 * list. Blocks are linked as carved, so pages of the slab not reached stay
 * untouched. */
static void extend(xa_heap *h, xa_slab *s)
{
    uint32_t n = s->reserved - s->capacity;
    char *first = s->start + (size_t)s->capacity * s->block_size;
    /* The blocks that start in first's page: linking them touches no other
     * page (a batch from an offset used to reach into the next page, made
     * resident for blocks a thread may never take). */
    uintptr_t page_end = XA_ALIGN_UP((uintptr_t)first + 1, XA_OS_PAGE);
    uint32_t in_page = (uint32_t)((page_end - (uintptr_t)first + s->block_size - 1) / s->block_size);
    if (n > in_page)
        n = in_page;
    char *b = first;
    /* Carved blocks are free blocks: they carry the mark too, so a free
     * of one that was never handed out is a double free like any other. */
    for (uint32_t i = 1; i < n; i++, b += s->block_size) {
        ((xa_block *)b)->next = enc((uintptr_t)(b + s->block_size));
        ((xa_block *)b)->mark = xa_free_mark_of(b);
    }
    ((xa_block *)b)->next = enc(s->free);
    ((xa_block *)b)->mark = xa_free_mark_of(b);
    s->free = (uintptr_t)first;
    s->capacity += n;
    /* Counted by the heap, in its arena's slabs (all but a few). */
    if (xa_likely(xa_chunk_of(s)->arena == h->arena)) {
        __atomic_store_n(&h->carved_bytes, h->carved_bytes + (int64_t)n * s->block_size,
                         __ATOMIC_RELAXED);
        if (xa_unlikely(xa_pages_policy == XA_THP_POLICY_DENSE))
            xa_arena_note_dense_carved(s, n);
    } else {
        xa_arena_note_carved(s, n);
    }
    /* New pages in a thread's slab: wake the purger for idle reclaim if it
     * sleeps with nothing to look at. */
    if (xa_unlikely(!__atomic_load_n(&reclaim_armed, __ATOMIC_RELAXED)) && xa_heaps_many) {
        __atomic_store_n(&reclaim_armed, true, __ATOMIC_RELAXED);
        __atomic_store_n(&xa_arena_dirty_pending, true, __ATOMIC_RELAXED);
    }
}

/* Arms the notification and moves s to the full list. Fails (returns
 * false) if remote frees arrived meanwhile: the caller collects them.
 * Still armed from an earlier time full (see unfull), it needs no atomic:
 * remote frees since went to the owner, not to the list. */
static bool to_full(xa_heap *h, xa_slab *s)
{
    uintptr_t old = atomic_load_explicit(&s->thread_free, memory_order_relaxed);
    while (old != (uintptr_t)XA_TF_NOTIFY) {
        if (xa_tf_list(old))
            return false;
        if (atomic_compare_exchange_weak_explicit(&s->thread_free, &old,
                                                  (uintptr_t)XA_TF_NOTIFY,
                                                  memory_order_acq_rel, memory_order_relaxed))
            break;
    }
    avail_remove(h, s);
    full_push(h, s);
    return true;
}

/* Free blocks a full slab gathers before it rejoins its class list: a
 * sixteenth of its blocks, at least one. In a steady state of random
 * frees over a big working set (a cache evicting and inserting), each
 * free lands in another full slab: back in the list with that one block,
 * the slab served one malloc, and the next malloc of the class took the
 * slow path to find another (a slow path per malloc). Waiting for a
 * sixteenth makes each slow path serve that many; the blocks a full slab
 * holds meanwhile are at most a sixteenth of it. */
static inline uint32_t unfull_at(const xa_slab *s)
{
    uint32_t n = s->capacity >> 4;
    return n ? n : 1;
}

/* Back from the full list at the owner's free. The notification stays
 * armed: clearing it took a locked compare-exchange, which waits for every
 * store the thread has in flight (in a program writing fresh blocks, 80%
 * of this path's time: a slab of big blocks holds few, so it fills and
 * leaves the full list every few frees). The next remote free of s, if
 * any, hands its block to the owner (push_remote_chain) and disarms it;
 * a slab that fills again is armed already. */
static void unfull(xa_heap *h, xa_slab *s)
{
    full_remove(h, s);
    avail_push_back(h, s);
}

/* Frees the blocks that remote threads handed over for full slabs. */
static void drain_delayed(xa_heap *h)
{
    if (!atomic_load_explicit(&h->delayed, memory_order_relaxed))
        return;
    uintptr_t list = atomic_exchange_explicit(&h->delayed, 0, memory_order_acquire);
    while (list) {
        xa_block *b = (xa_block *)list;
        list = enc(b->next);
        xa_chunk *c = xa_chunk_of(b);
        xa_slab *s = xa_run_of(c, b);
        b->next = 0;
        /* Counted as a free when it was freed remotely. */
        h->nfree[s->cls]--;
        xa_heap_free_owned(h, s, b);
    }
}

/* ---- trimming free blocks of big classes ---- */

/* Bytes of big-class blocks a heap's owner may free before their pages
 * are purged (trim_free_blocks): frees of such blocks take the slow path
 * (XA_SLAB_TRIM) and count here, so a mass free returns memory as it goes,
 * a purge covering many blocks. */
#define TRIM_ALLOWANCE XA_HEAP_TRIM_ALLOWANCE
/* Most free big-block bytes the free-time trim learns to leave alone. */
#define TRIM_KEEP_MAX ((uint64_t)64 << 20)
/* Bytes of the carved but free blocks of this heap's big-class slabs
 * (trimmed ones included: it is a bound, from the slab counters alone). */
static uint64_t big_free_bytes(const xa_heap *h)
{
    uint64_t bytes = 0;
    for (unsigned c = xa_size_class(XA_TRIM_MIN_BLOCK); c < XA_NCLASSES; c++)
        for (const xa_slab *s = h->avail[c]; s; s = s->next)
            bytes += (uint64_t)(s->capacity - xa_slab_used(s)) * s->block_size;
    return bytes;
}

/* Bytes of big-class blocks this heap has allocated since it began (its
 * statistics counters: nothing on the fast path). */
static uint64_t big_malloc_bytes(const xa_heap *h)
{
    uint64_t bytes = 0;
    for (unsigned c = xa_size_class(XA_TRIM_MIN_BLOCK); c < XA_NCLASSES; c++)
        bytes += h->nmalloc[c] * xa_class_size(c);
    return bytes;
}

/* Purges the free big blocks of this heap (xa_slab_trim_block), biggest classes
 * first, until at most keep bytes of free blocks are left as they are
 * (0: all). */
static size_t trim_free_blocks(xa_heap *h, unsigned path, uint64_t keep)
{
    uint64_t free_bytes = keep ? big_free_bytes(h) : UINT64_MAX;
    if (free_bytes <= keep)
        return 0;
    uint64_t todo = free_bytes - keep, seen = 0;
    size_t bytes = 0;
    unsigned first = xa_size_class(XA_TRIM_MIN_BLOCK);
    for (unsigned c = XA_NCLASSES; c-- > first && seen < todo;) {
        for (xa_slab *s = h->avail[c]; s && seen < todo; s = s->next) {
            if (xa_chunk_huge_advised(xa_chunk_of(s)))
                continue; /* would split a huge page: those chunks go back whole */
            xa_slab_collect(s);
            uint32_t limit = s->reserved;
            for (uintptr_t p = s->free; p && limit-- && seen < todo;
                 p = enc(((xa_block *)p)->next)) {
                bytes += xa_slab_trim_block((xa_block *)p, s->block_size, path);
                seen += s->block_size;
            }
        }
    }
    h->trimmed_bytes += bytes;
    return bytes;
}

/* ---- malloc slow path ---- */

void xa_heap_upkeep(xa_heap *h)
{
    uint64_t now = xa_os_now_ns();
    __atomic_store_n(&coarse_now_ns, now, __ATOMIC_RELAXED);
    h->remote_trim_pending = 0;
    /* The heap's own free lists are private: only this thread can trim
     * them, background thread or not. */
    uint64_t decay_ns = (uint64_t)__atomic_load_n(&xa_opt.decay_ms, __ATOMIC_RELAXED) * 1000000u;
    if (now - h->last_trim_ns >= decay_ns) {
        h->last_trim_ns = now;
        h->trim_keep /= 2; /* what the free-time trim learnt fades */
        h->trim_last = 0;
        trim_free_blocks(h, XA_PURGE_SLOW_PATH, 0);
    }
    xa_heap_notice_dirty();
    if (__atomic_load_n(&xa_heap_purger_active, __ATOMIC_ACQUIRE)) {
        xa_heap_hooks.tick(now);
        return;
    }
    if (heap_has_parked(h))
        large_cache_flush(h, now, false);
    xa_arena_maybe_decay(h->arena, now, XA_PURGE_SLOW_PATH);
    /* Arenas without active threads still decay: one thread in a while
     * sweeps them all (cheap when nothing is due). */
    if (now >= __atomic_load_n(&next_global_decay_ns, __ATOMIC_RELAXED)) {
        __atomic_store_n(&next_global_decay_ns, now + 50000000u, __ATOMIC_RELAXED);
        for (unsigned i = 0; i < xa_narenas; i++) {
            xa_arena *a = __atomic_load_n(&xa_arenas[i], __ATOMIC_ACQUIRE);
            if (a && a != h->arena)
                xa_arena_maybe_decay(a, now, XA_PURGE_SLOW_PATH);
        }
    }
    xa_heap_hooks.tick(now);
}

static void heap_move(xa_heap *h, int slot);

/* Bytes a class may take from the class of twice its size before it gets
 * a slab of its own. */
#define BORROW_BYTES 1024u

/* A class this thread has not allocated from yet takes its first blocks
 * (up to BORROW_BYTES in all) from the class of twice its size, when that
 * one has a carved block at hand: a slab of its own costs a page for what
 * may stay a handful of blocks, and a small service's threads each hold
 * such a page per rarely used class (32 threads: 128 KiB a class). Twice
 * the size, not more: a block kept long pins its lender's page, and the
 * class next but one up is often one the thread uses only in bursts,
 * whose empty slab the purger would otherwise take back. Twice the size
 * also keeps any alignment the class gave: aligned_alloc picks a class
 * whose size is a multiple of the alignment, and blocks of a class sit at
 * multiples of their size from a 64 KiB boundary. The block is the
 * lender's in every way (counts, free, usable size). Pre: owner, busy
 * set; returns NULL when the class should have its own slab. */
static void *borrow(xa_heap *h, unsigned cls)
{
    uint32_t size = xa_classes[cls].size;
    _Static_assert(BORROW_BYTES <= 1024 && XA_BORROW_CLASSES > 19, "borrowed[] covers the lenders");
    if (h->nmalloc[cls] || size > BORROW_BYTES || h->borrowed[cls] >= BORROW_BYTES / size)
        return NULL;
    unsigned lend = xa_size_class(2 * (size_t)size);
    if (xa_classes[lend].size != 2 * size)
        return NULL;
    /* A free block in the lender's current slab (or its foreign stack); an
     * empty slab or the reclaim sentinel has none. Never a new page. */
    const xa_slab *s = __atomic_load_n(&h->cur[lend], __ATOMIC_RELAXED);
    if (!s->free)
        return NULL;
    h->borrowed[cls]++;
    return xa_heap_malloc_class(h, lend);
}

/* s (in the class list, with free blocks) becomes current and serves. */
static void *take_slab(xa_heap *h, xa_slab *s)
{
    if (s != h->avail[s->cls]) {
        avail_remove(h, s);
        avail_push_front(h, s);
    }
    /* (The head may not be current: a free made another slab current.) */
    __atomic_store_n(&h->cur[s->cls], s, __ATOMIC_RELAXED);
    return xa_heap_malloc_class(h, s->cls);
}

/* Used-up slabs the malloc slow path leaves in the class list (the first
 * ones it meets, the most recently current) instead of moving them to the
 * full list. A program that takes a batch of blocks and frees it (a
 * request's buffers: 40 blocks of 4 KiB span three slabs) empties the
 * slabs it used up moments later: each move to the full list and back
 * cost a slow path at both ends, some 20 instructions per malloc/free pair
 * of the batch. A slab that stays used up is moved when it is passed
 * again behind newer ones, so a growing heap's scans stay this short.
 * Remote frees to a listed slab wait in its remote list, which the scan
 * collects (a full slab's are handed over as they come). */
#define EXHAUSTED_KEPT 2u

static void *malloc_slow(xa_heap *h, unsigned cls)
{
    if (h == &xa_heap_empty) {
        h = xa_heap_hooks.thread_init();
        if (!h)
            return NULL;
        return xa_heap_malloc_class(h, cls);
    }
    /* The thread may have moved to another node since the last look (no
     * call at all on a one-node machine). */
    if (xa_numa_active) {
        int slot = xa_numa_recheck(&h->numa);
        if (slot >= 0 && slot != h->arena->node)
            heap_move(h, slot);
    }
    drain_delayed(h);
    outbox_flush(h);
    /* (atomic, relaxed: a thread that frees this heap's big blocks reads
     * it, see remote_trim) */
    uint32_t slow = h->slow_count + 1;
    __atomic_store_n(&h->slow_count, slow, __ATOMIC_RELAXED);
    if ((slow & 15) == 0) {
        /* Remote frees waiting in the ring take effect here too, so a
         * double free among them is reported within 16 slow paths even
         * when no other remote free comes (every slow path: a ninth of
         * larson's instructions). */
        xa_heap_settle_all(h);
        xa_heap_upkeep(h);
    }
    if (cls < XA_FOREIGN_CLASSES && xa_heap_foreign_ready(h, cls)) {
        /* Blocks freed here by this thread but owned by others go first:
         * reusing them at once is what keeps memory from piling up in
         * slabs whose owner is busy elsewhere (or idle). */
        xa_slab *f = xa_heap_foreign(h, cls), *v = xa_heap_serving(h, cls);
        if (__atomic_load_n(&h->cur[cls], __ATOMIC_RELAXED) == v)
            __atomic_store_n(&h->cur[cls], h->avail[cls] ? h->avail[cls] : &xa_slab_empty,
                             __ATOMIC_RELAXED);
        /* Switch only for a batch, so the fast path serves it: what the
         * serving stack still holds (it stopped being current while the
         * purger looked at the class), or the foreign stack's blocks,
         * moved over in one go. */
        if (!v->free && f->reserved >= foreign_limit(h, cls) / 2) {
            foreign_charge(h, f);
            v->free = f->free;
            v->reserved = f->reserved;
            v->used = 0;
            f->free = 0;
            f->reserved = 0;
        }
        if (v->free) {
            __atomic_store_n(&h->cur[cls], v, __ATOMIC_RELAXED);
            return xa_heap_malloc_class(h, cls);
        }
    }
    /* Small blocks already freed in any of the class's slabs come before a
     * new page of one: carving on while another slab has holes leaves
     * those holes resident and unused until the carving slab is used up
     * (with two slabs of a class, up to a slab of holes per thread and
     * class). Big blocks have pages of their own, which trim purges when
     * they pile up: the current slab carves on, and the others may empty
     * and go back to the arena. */
    bool holes_first = xa_classes[cls].size < XA_TRIM_MIN_BLOCK;
    xa_slab *carvable = NULL;
    unsigned kept = 0; /* used-up slabs left in the list (EXHAUSTED_KEPT) */
    for (xa_slab *s = h->avail[cls]; s;) {
        xa_slab *next = s->next;
        if (!s->free)
            xa_slab_collect(s);
        if (!s->free && !holes_first && s->capacity < s->reserved)
            extend(h, s);
        if (s->free)
            return take_slab(h, s);
        if (s->capacity < s->reserved) {
            if (!carvable)
                carvable = s;
        } else if (kept < EXHAUSTED_KEPT) {
            kept++; /* stays listed: its frees need no slow path */
        } else if (!to_full(h, s)) {
            continue; /* remote frees arrived: collect them on the next turn */
        }
        s = next;
    }
    if (carvable) {
        extend(h, carvable);
        return take_slab(h, carvable);
    }
    xa_slab *s = spare_take(h, cls);
    if (!s)
        s = xa_arena_slab_adopt(h->arena, cls, h);
    if (!s) {
        /* Before a new slab (an exited thread's slab is memory in use,
         * taken first). */
        void *lent = borrow(h, cls);
        if (lent)
            return lent;
        s = spare_reclass(h, cls);
        if (!s)
            s = xa_arena_slab_new(h->arena, cls, h);
        if (!s)
            return NULL;
        /* A new slab after one went back: the class churns; its next
         * empty slab is parked (spare_park). */
        if (__atomic_load_n(&h->slab_returned, __ATOMIC_RELAXED) & (1ull << cls))
            class_bit_set(&h->slab_churn, cls);
    }
    avail_push_front(h, s);
    if (!s->free && s->capacity < s->reserved)
        extend(h, s);
    if (!s->free)
        return malloc_slow(h, cls); /* adopted a full slab */
    return xa_heap_malloc_class(h, cls);
}

void *xa_heap_malloc_slow(xa_heap *h, unsigned cls)
{
    /* busy is set (the fast path did it): wait out a reclaim in progress
     * before touching the lists; cur[] is whole again afterwards. */
    if (xa_unlikely(__atomic_load_n(&h->reclaiming, __ATOMIC_ACQUIRE)))
        xa_heap_wait_reclaim(h);
    void *p = malloc_slow(h, cls);
    __atomic_store_n(&h->busy, 0, __ATOMIC_RELEASE);
    if (xa_unlikely(!p))
        errno = ENOMEM;
    return p;
}

void xa_heap_wait_reclaim(xa_heap *h)
{
    while (__atomic_load_n(&h->reclaiming, __ATOMIC_ACQUIRE))
        sched_yield();
}

/* ---- free slow paths ---- */

void xa_heap_double_free_check(xa_slab *s, xa_block *b)
{
    /* The mark: free already, wherever it waits (this slab's lists, the
     * delayed list, another thread's stack). */
    if (xa_block_marked_free(b))
        xa_fatal("free(): double free of %p (%u-byte block)", (void *)b, s->block_size);
    /* The program may have written over the mark after the first free:
     * the link then still says it, if the block is on this slab's lists. */
    uintptr_t target = (uintptr_t)b;
    uint32_t limit = s->reserved + 1;
    for (uintptr_t p = s->free; p && limit--; p = enc(((xa_block *)p)->next))
        if (p == target)
            xa_fatal("free(): double free of %p (%u-byte block)", (void *)b, s->block_size);
    uintptr_t tf = xa_tf_list(atomic_load_explicit(&s->thread_free, memory_order_acquire));
    limit = s->reserved + 1;
    for (uintptr_t p = tf; p && limit--; p = enc(((xa_block *)p)->next))
        if (p == target)
            xa_fatal("free(): double free of %p (%u-byte block)", (void *)b, s->block_size);
}

/* A remote thread that handed a block of s to this heap (push_remote,
 * NOTIFY path) still writes s->thread_free once after the hand-off: an
 * empty slab must not go back to the arena (and be reused) before that
 * write. No new hand-off can start: no block of s is live. */
static void wait_notifying(xa_slab *s)
{
    while ((atomic_load_explicit(&s->thread_free, memory_order_acquire) & XA_TF_MASK) ==
           XA_TF_NOTIFYING)
        sched_yield();
}

/* ---- spare slabs ---- */

static void note_parked(xa_heap *h);

/* The owner, or a thread that has the heap to itself: no locked add (the
 * statistics read the count without a lock). */
static void spare_count_add(xa_heap *h, int d)
{
    __atomic_store_n(&h->spare_count, __atomic_load_n(&h->spare_count, __ATOMIC_RELAXED) + (uint32_t)d,
                     __ATOMIC_RELAXED);
}

/* Returns class c's spares to the arena; the class churns no more until
 * it returns a slab and takes one anew. The owner, or a thread that has
 * the heap to itself (see flush_parked_of_others). */
static void spare_release_class(xa_heap *h, unsigned c)
{
    xa_slab *s = atomic_load_explicit(&h->spare[c], memory_order_relaxed);
    atomic_store_explicit(&h->spare[c], NULL, memory_order_relaxed);
    __atomic_fetch_and(&h->slab_churn, ~(1ull << c), __ATOMIC_RELAXED);
    __atomic_fetch_and(&h->slab_returned, ~(1ull << c), __ATOMIC_RELAXED);
    while (s) {
        xa_slab *next = s->next;
        s->next = NULL;
        spare_count_add(h, -1);
        xa_arena_slab_free(xa_chunk_of(s), s);
        s = next;
    }
}

/* Returns the spares of the class other than cls that parked longest ago;
 * false when cls alone has spares. */
static bool spare_release_oldest(xa_heap *h, unsigned cls)
{
    unsigned oldest = XA_NCLASSES;
    for (unsigned c = 0; c < XA_NCLASSES; c++)
        if (c != cls && atomic_load_explicit(&h->spare[c], memory_order_relaxed) &&
            (oldest == XA_NCLASSES || __atomic_load_n(&h->spare_ns[c], __ATOMIC_RELAXED) <
                                          __atomic_load_n(&h->spare_ns[oldest], __ATOMIC_RELAXED)))
            oldest = c;
    if (oldest == XA_NCLASSES)
        return false;
    spare_release_class(h, oldest);
    xa_heap_notice_dirty();
    return true;
}

/* Parks s (empty, out of the heap's lists) as its class's spare; false
 * when the class has one already, or is a smaller class that the heap
 * does not churn (see slab_churn: a thread that allocates a little keeps
 * no empty slab). */
static bool spare_park(xa_heap *h, xa_slab *s)
{
    unsigned cls = s->cls;
    bool big = s->in_full & XA_SLAB_TRIM;
    if (h->no_keep)
        return false;
    /* A big class keeps one spare from the start; any class more once the
     * heap churns its slabs. A batch of big blocks spans several slabs
     * (24 blocks of 16 KiB: three), and each that went back to the arena
     * came again with the arena lock, a run split and its blocks carved
     * one page at a time: 19 ns per malloc/free pair there, against 11 ns
     * with the spares (and 37 against 19 at 32 KiB). */
    bool has_spare = atomic_load_explicit(&h->spare[cls], memory_order_relaxed) != NULL;
    if (!(__atomic_load_n(&h->slab_churn, __ATOMIC_RELAXED) & (1ull << cls)) &&
        (!big || has_spare)) {
        class_bit_set(&h->slab_returned, cls);
        return false;
    }
    /* Without this bound a server's mix of big classes kept its empty
     * slabs out of each other's reach: more page faults, latency p99 +8%. */
    if (big && has_spare && __atomic_load_n(&h->spare_count, __ATOMIC_RELAXED) >= XA_SPARES_BIG_TOTAL)
        return false;
    if (__atomic_load_n(&h->spare_count, __ATOMIC_RELAXED) >= XA_SPARES_TOTAL &&
        !spare_release_oldest(h, cls))
        return false;
    /* The class's chain, linked through next. Plain loads and stores: the
     * owner is busy here, and no other thread touches the slots then
     * (flush_parked_of_others). */
    xa_slab *old = atomic_load_explicit(&h->spare[cls], memory_order_relaxed);
    unsigned depth = 0;
    for (const xa_slab *t = old; t; t = t->next)
        depth++;
    if (depth >= XA_SPARES_SMALL)
        return false;
    s->next = old;
    s->prev = NULL;
    uint64_t parked = __atomic_load_n(&coarse_now_ns, __ATOMIC_RELAXED);
    __atomic_store_n(&h->spare_ns[cls], parked, __ATOMIC_RELAXED);
    /* The first spare sets the oldest park; later ones are younger. */
    if (!__atomic_load_n(&h->spare_count, __ATOMIC_RELAXED))
        __atomic_store_n(&h->spare_oldest_ms, (uint32_t)(parked / 1000000u), __ATOMIC_RELAXED);
    spare_count_add(h, 1);
    atomic_store_explicit(&h->spare[cls], s, memory_order_relaxed);
    note_parked(h);
    return true;
}

/* One of the class's spares, now the caller's; NULL when there is none.
 * The owner, busy (see spare_park). */
static xa_slab *spare_take(xa_heap *h, unsigned cls)
{
    xa_slab *s = atomic_load_explicit(&h->spare[cls], memory_order_relaxed);
    if (s) {
        atomic_store_explicit(&h->spare[cls], s->next, memory_order_relaxed);
        s->next = NULL;
        spare_count_add(h, -1);
    }
    return s;
}

/* A spare of another class made a slab of cls, NULL when none fits: the
 * one parked longest ago among small classes of cls's run length. A
 * thread whose blocks move through the sizes (a batch of one size freed,
 * then a batch of the next: sh6bench) carves the pages it has just freed,
 * still in cache, where the arena would hand it other pages while the
 * spares of the classes it left sat cold until decay_ms (size sweep:
 * 10x the last-level cache misses of mimalloc, 1.6x its peak RSS). The
 * owner, busy (see spare_park). */
static xa_slab *spare_reclass(xa_heap *h, unsigned cls)
{
    const struct xa_class_info *ci = &xa_classes[cls];
    if (!__atomic_load_n(&h->spare_count, __ATOMIC_RELAXED) || ci->size >= XA_TRIM_MIN_BLOCK)
        return NULL;
    unsigned from = XA_NCLASSES;
    for (unsigned c = 0; c < XA_NCLASSES && xa_classes[c].size < XA_TRIM_MIN_BLOCK; c++) {
        xa_slab *t = atomic_load_explicit(&h->spare[c], memory_order_relaxed);
        if (c != cls && t && xa_classes[c].units == ci->units && xa_chunk_of(t)->arena == h->arena &&
            (from == XA_NCLASSES || __atomic_load_n(&h->spare_ns[c], __ATOMIC_RELAXED) <
                                        __atomic_load_n(&h->spare_ns[from], __ATOMIC_RELAXED)))
            from = c;
    }
    if (from == XA_NCLASSES)
        return NULL;
    xa_slab *s = spare_take(h, from);
    /* Its last spare gone, the class churns no more (as when its spares
     * go back to the arena, spare_release_class). */
    if (!atomic_load_explicit(&h->spare[from], memory_order_relaxed)) {
        __atomic_fetch_and(&h->slab_churn, ~(1ull << from), __ATOMIC_RELAXED);
        __atomic_fetch_and(&h->slab_returned, ~(1ull << from), __ATOMIC_RELAXED);
    }
    /* Its carved blocks are uncounted: cls carves its own from the start. */
    __atomic_store_n(&h->carved_bytes,
                     h->carved_bytes - (int64_t)((uint64_t)s->capacity * s->block_size),
                     __ATOMIC_RELAXED);
    xa_arena_slab_reclass(s, cls);
    return s;
}

/* False while no spare of h can be due yet: its oldest park (a bound,
 * never younger than the real one) is less than decay_ms ago. Spares are
 * then not looked at in the 64 classes (two arrays of 512 bytes). A clock
 * read below the oldest park wraps to a large age: true. */
static bool spares_may_be_due(const xa_heap *h, uint64_t now, uint32_t decay_ms)
{
    return (uint32_t)(now / 1000000u) - __atomic_load_n(&h->spare_oldest_ms, __ATOMIC_RELAXED) >=
           decay_ms;
}

/* Returns spares parked for decay_ms (all with force) to their arenas.
 * The owner, or another thread that has the heap to itself (see
 * flush_parked_of_others). Returns true when spares remain. */
static bool spare_flush(xa_heap *h, uint64_t now, bool force)
{
    if (!__atomic_load_n(&h->spare_count, __ATOMIC_RELAXED))
        return false;
    uint32_t decay_ms = (uint32_t)__atomic_load_n(&xa_opt.decay_ms, __ATOMIC_RELAXED);
    /* (upkeep would otherwise look every 16 slow paths of a thread that
     * parks and takes spares in rounds) */
    if (!force && !spares_may_be_due(h, now, decay_ms))
        return true;
    bool left = false;
    uint64_t decay_ns = (uint64_t)decay_ms * 1000000u, oldest = UINT64_MAX;
    for (unsigned c = 0; c < XA_NCLASSES; c++) {
        if (!atomic_load_explicit(&h->spare[c], memory_order_relaxed))
            continue;
        uint64_t parked = __atomic_load_n(&h->spare_ns[c], __ATOMIC_RELAXED);
        if (!force && now - parked < decay_ns) {
            left = true;
            if (parked < oldest)
                oldest = parked;
            continue;
        }
        /* The whole chain: not taken for decay_ms, the class no longer
         * churns. */
        spare_release_class(h, c);
    }
    if (left)
        __atomic_store_n(&h->spare_oldest_ms, (uint32_t)(oldest / 1000000u), __ATOMIC_RELAXED);
    return left;
}

static void free_local_slow(xa_heap *h, xa_slab *s);
void xa_heap_free_local_slow(xa_heap *h, xa_slab *s)
{
    uint32_t busy = xa_heap_owner_enter(h);
    free_local_slow(h, s);
    xa_heap_owner_leave(h, busy);
}

/* A free into s, a slab of the full list (the owner's, or a remote one
 * handed over through the delayed list): s rejoins its class list once a
 * sixteenth of it is free. Until then its notification is armed again.
 * The remote free that handed blocks over disarmed it, and the remote
 * frees after it waited in the slab's own list, which no slow path looks
 * at while the slab is full: a producer whose consumer freed its blocks
 * a few at a time kept taking new slabs while its full ones filled up
 * with free blocks (producer/consumer of 16-512 B items: a peak of
 * 44-470 MB for 1.5 MB in flight). */
static void full_slab_freed(xa_heap *h, xa_slab *s)
{
    for (;;) {
        if (s->capacity - xa_slab_used(s) >= unfull_at(s)) {
            unfull(h, s);
            return;
        }
        uintptr_t old = atomic_load_explicit(&s->thread_free, memory_order_relaxed);
        if (xa_tf_list(old)) {
            xa_slab_collect(s); /* (counted as freed when they were) */
            continue;
        }
        /* Armed already; or handing blocks over now (they reach the
         * delayed list, whose drain brings s back here); or never to
         * notify: its heap is letting its slabs go (heap_release_all),
         * and a slab armed then would call on a heap recycled since. */
        if ((old & XA_TF_MASK) != XA_TF_NORMAL)
            return;
        if (atomic_compare_exchange_weak_explicit(&s->thread_free, &old, (uintptr_t)XA_TF_NOTIFY,
                                                  memory_order_acq_rel, memory_order_relaxed))
            return;
    }
}

static void free_local_slow(xa_heap *h, xa_slab *s)
{
    if (s->in_full & XA_SLAB_IN_FULL)
        full_slab_freed(h, s);
    if ((s->in_full & XA_SLAB_TRIM) && (h->trim_pending += s->block_size) > TRIM_ALLOWANCE) {
        uint64_t freed = h->trim_pending;
        /* A mass free grows the pool of free big blocks: purge it down to
         * the allowance each time it has grown by twice that since its
         * lowest point. A program that frees and allocates big blocks in a
         * steady state keeps its pool level and reuses it at once; purging
         * it would cost a madvise and a refault per block (decay and
         * malloc_trim still take it). */
        h->trim_pending = 0;
        uint64_t pool = big_free_bytes(h); /* trimmed blocks included */
        uint64_t last = h->trim_pool_last;
        h->trim_pool_last = pool;
        /* Frees outrun mallocs only when the big blocks freed lately are
         * more than twice those allocated: else the heap grows or churns
         * in a steady state, its pool the fragmentation of a working set
         * (a server warming up), and a trim now would be faulted in again
         * by the next requests. Lately: a streak, freed less twice the
         * allocated, over as many looks as it lasts. One look alone (a few
         * dozen blocks) would see a steady program's random sizes swing
         * 2:1 now and then; a mass free keeps the streak from its second
         * look on. */
        uint64_t mallocs = big_malloc_bytes(h);
        uint64_t gain = freed >> 10, cost = 2 * ((mallocs - h->trim_malloc_last) >> 10);
        uint64_t streak = h->trim_free_streak_kib + gain;
        streak = streak > cost ? streak - cost : 0;
        h->trim_free_streak_kib = streak < UINT32_MAX ? (uint32_t)streak : UINT32_MAX;
        bool outrun = streak >= TRIM_ALLOWANCE >> 10;
        h->trim_malloc_last = mallocs;
        if (pool < h->trim_pool_low)
            h->trim_pool_low = pool;
        /* ... and only if the pool grew by half of what was freed since
         * the last look (frees outrunning reuse, not a pool that wanders
         * while the program churns). */
        /* A pool that wanders wider than that still looks like a mass
         * free now and then; the trim learns from its own effect, as the
         * arena's purge does. It takes the blocks at the heads of the
         * free lists, which the next mallocs take first: when the pool
         * fell back by half of what the last trim purged, those pages
         * were faulted in again, and the heap keeps more from then on
         * (upkeep halves it again every decay_ms, and still trims all). */
        if (h->trim_last && pool + h->trim_last / 2 <= h->trim_pool_after) {
            uint64_t k = h->trim_keep + 2 * h->trim_last;
            if (k < 2 * h->trim_keep)
                k = 2 * h->trim_keep;
            if (k < 2 * TRIM_ALLOWANCE)
                k = 2 * TRIM_ALLOWANCE;
            h->trim_keep = k < TRIM_KEEP_MAX ? k : TRIM_KEEP_MAX;
            h->trim_last = 0;
        }
        /* What the arena learnt (its purges undone by page faults: a
         * program that frees and takes the same memory again in rounds)
         * the heap keeps too: the same pages would fault in again. */
        uint64_t keep = TRIM_ALLOWANCE;
        uint64_t learnt = (uint64_t)__atomic_load_n(&h->arena->churn_floor_units,
                                                    __ATOMIC_RELAXED)
                          << XA_UNIT_SHIFT;
        if (learnt > keep)
            keep = learnt;
        if (h->trim_keep > keep)
            keep = h->trim_keep;
        if (outrun && pool > h->trim_pool_low + 2 * keep && pool >= last + TRIM_ALLOWANCE / 2) {
            h->trim_last = trim_free_blocks(h, XA_PURGE_AT_FREE, keep);
            h->trim_pool_after = pool;
            h->trim_pool_low = pool;
        }
    }
    if (xa_slab_used(s) == 0 && (s != h->avail[s->cls] || h->no_keep)) {
        /* Empty and not its list's head (current or not: the free fast
         * path makes any slab of the list current): back to the arena,
         * where it coalesces and, once decayed, is returned to the OS.
         * (avail_remove makes the head current again.) */
        avail_remove(h, s);
        wait_notifying(s);
        if (spare_park(h, s))
            return;
        xa_arena_slab_free(xa_chunk_of(s), s);
        xa_heap_notice_dirty();
    }
}

/* Pushes the chain head..tail (blocks of s linked through next, tail's
 * link to be set here) onto s's remote list, or, for a full slab, hands it
 * to the owner. One atomic exchange for the whole chain. No statistics. */
static void push_remote_chain(xa_slab *s, xa_block *head, xa_block *tail, uint32_t n)
{
    uintptr_t old = atomic_load_explicit(&s->thread_free, memory_order_relaxed);
    for (;;) {
        if ((old & XA_TF_MASK) == XA_TF_NOTIFY) {
            /* The slab is full: hand the blocks to the owner's heap so the
             * slab comes back into use. NOTIFYING keeps the owner from
             * leaving while we touch its heap. */
            if (!atomic_compare_exchange_weak_explicit(&s->thread_free, &old,
                                                       (old & ~XA_TF_MASK) | XA_TF_NOTIFYING,
                                                       memory_order_acq_rel,
                                                       memory_order_relaxed))
                continue;
            xa_heap *owner = __atomic_load_n(&s->heap, __ATOMIC_ACQUIRE);
            uintptr_t dh = atomic_load_explicit(&owner->delayed, memory_order_relaxed);
            do {
                tail->next = enc(dh);
            } while (!atomic_compare_exchange_weak_explicit(&owner->delayed, &dh, (uintptr_t)head,
                                                            memory_order_release,
                                                            memory_order_relaxed));
            old = atomic_load_explicit(&s->thread_free, memory_order_relaxed);
            while (!atomic_compare_exchange_weak_explicit(&s->thread_free, &old,
                                                          (old & ~XA_TF_MASK) | XA_TF_NORMAL,
                                                          memory_order_release,
                                                          memory_order_relaxed))
                ;
            return;
        }
        tail->next = enc(xa_tf_list(old));
        uintptr_t count = (uintptr_t)(xa_tf_count(old) + n) << XA_TF_COUNT_SHIFT;
        if (atomic_compare_exchange_weak_explicit(&s->thread_free, &old,
                                                  count | (uintptr_t)head | (old & XA_TF_MASK),
                                                  memory_order_release, memory_order_relaxed))
            return;
    }
}

static void push_remote(xa_slab *s, xa_block *b) { push_remote_chain(s, b, b, 1); }

/* One chain of n blocks of slab run, from stack f, back to the slab;
 * their bytes are counted as freed in its arena, and taken back from the
 * own arena's count for a serving stack's (charged: see foreign_charge). */
static void stack_flush_chain(xa_heap *h, const xa_slab *f, bool charged, xa_slab *run,
                              xa_block *head, xa_block *tail, uint32_t n)
{
    uint64_t bytes = (uint64_t)n * f->block_size;
    if (charged)
        remote_add(h, h->arena->index, (uint64_t)0 - bytes);
    else
        h->remote_nfree[f->cls] += n; /* (a serving stack's were counted at the switch) */
    remote_add(h, run->small.arena_index, bytes);
    push_remote_chain(run, head, tail, n);
}

/* Gives the blocks of stack f back to their slabs, consecutive blocks of
 * one slab as one chain: one atomic per run of blocks of a slab, not one
 * per block. charged: the serving stack, whose blocks count in h's own
 * arena (see foreign_charge): each run's bytes move back to its arena. */
static void stack_flush(xa_heap *h, unsigned cls, xa_slab *f, bool charged)
{
    uintptr_t list = f->free;
    f->free = 0;
    f->reserved = f->used = 0; /* capacity (the limit) stays */
    if (__atomic_load_n(&h->cur[cls], __ATOMIC_RELAXED) == f)
        __atomic_store_n(&h->cur[cls], h->avail[cls] ? h->avail[cls] : &xa_slab_empty,
                         __ATOMIC_RELAXED);
    xa_slab *run = NULL;
    xa_block *head = NULL, *tail = NULL;
    uint32_t n = 0;
    while (list) {
        xa_block *b = (xa_block *)list;
        list = enc(b->next);
        xa_slab *s = xa_run_of(xa_chunk_of(b), b);
        if (s == run) {
            tail->next = enc((uintptr_t)b);
            tail = b;
            n++;
            continue;
        }
        if (run)
            stack_flush_chain(h, f, charged, run, head, tail, n);
        run = s;
        head = tail = b;
        n = 1;
    }
    if (run)
        stack_flush_chain(h, f, charged, run, head, tail, n);
}

/* Gives the blocks kept in class cls's stacks back to their slabs (at
 * exit, collection, a move). */
static void foreign_flush_class(xa_heap *h, unsigned cls)
{
    if (!xa_heap_foreign_ready(h, cls))
        return; /* never set up: its page stays untouched */
    stack_flush(h, cls, xa_heap_foreign(h, cls), false);
    stack_flush(h, cls, xa_heap_serving(h, cls), true);
}

/* Lets the remote frees still in h's unsettled ring take effect. */
void xa_heap_settle_all(xa_heap *h)
{
    if (!h->foreign_ready)
        return; /* no remote free kept yet: the ring's page stays untouched */
    struct xa_heap_remote *r = xa_heap_remote(h);
    for (unsigned i = 0; i < XA_HEAP_UNSETTLED; i++) {
        xa_block *u = r->unsettled[i];
        if (u) {
            r->unsettled[i] = NULL;
            xa_heap_settle(h, u);
        }
    }
}

/* At exit, the exiting thread's remote frees still in its ring take
 * effect: a double free among them is reported, not lost. */
__attribute__((destructor)) static void heap_fini(void)
{
    xa_heap *h = xa_tls_heap;
    if (h != &xa_heap_empty)
        xa_heap_settle_all(h);
}

/* Gives the blocks kept in the foreign stacks back to their slabs, the
 * unsettled ones first. */
static void foreign_flush(xa_heap *h)
{
    xa_heap_settle_all(h);
    for (unsigned c = 0; c < XA_FOREIGN_CLASSES; c++)
        foreign_flush_class(h, c);
}

/* ---- the outbox (see struct xa_heap_outbox) ---- */

static unsigned outbox_slot(const xa_slab *s)
{
    /* Descriptors are 128 bytes apart in a chunk's header; chunks 2 MiB. */
    uintptr_t a = (uintptr_t)s;
    return (unsigned)((a >> 7) ^ (a >> 21)) % XA_HEAP_OUTBOX_SLOTS;
}

/* Gives chain o back to its slab, counting its blocks as freed by h now
 * (held in the outbox, they still counted as in use, as in the foreign
 * stack: one count per chain, not one per free). */
static void outbox_push(xa_heap *h, struct xa_heap_outbox *o)
{
    if (!o->n)
        return;
    xa_slab *s = o->slab;
    /* (Read before the push: the owner may release the slab after it.) */
    h->remote_nfree[s->cls] += o->n;
    remote_add(h, s->small.arena_index, (uint64_t)o->n * s->block_size);
    push_remote_chain(s, o->head, o->tail, o->n);
    h->outbox_held -= o->n;
    o->slab = NULL;
    o->head = o->tail = NULL;
    o->n = 0;
}

/* Pushes every chain the outbox holds to its slab. */
static void outbox_flush(xa_heap *h)
{
    if (!h->outbox_held)
        return;
    struct xa_heap_remote *r = xa_heap_remote(h);
    for (unsigned i = 0; i < XA_HEAP_OUTBOX_SLOTS; i++)
        outbox_push(h, &r->outbox[i]);
}

/* Slot o holds another slab's chain (or none): pushed, and b of s starts
 * the slot's new chain. */
static XA_NOINLINE void outbox_switch(xa_heap *h, struct xa_heap_outbox *o, xa_slab *s,
                                      xa_block *b)
{
    outbox_push(h, o);
    o->slab = s;
    o->head = o->tail = b;
    b->next = enc(0); /* (the tail's is set by the push) */
    o->n = 1;
    h->outbox_held++;
}

/* Holds b (a block of s, marked free) in the outbox. The rare cases are
 * tail calls: the common one needs no frame. */
void xa_heap_outbox_add(xa_heap *h, xa_slab *s, xa_block *b)
{
    struct xa_heap_outbox *o = &xa_heap_remote(h)->outbox[outbox_slot(s)];
    if (xa_unlikely(o->slab != s)) {
        outbox_switch(h, o, s, b);
        return;
    }
    b->next = enc((uintptr_t)o->head);
    o->head = b;
    h->outbox_held++;
    if (++o->n >= XA_HEAP_OUTBOX_CHAIN)
        outbox_push(h, o);
}

/* Hands the bytes of slot i of h's remote table to its arena and frees
 * the slot. */
static void remote_slot_flush(struct xa_heap_remote *r, unsigned i)
{
    uint32_t tag = r->arena_plus1[i];
    if (!tag)
        return;
    if (r->bytes[i]) {
        xa_arena *a = __atomic_load_n(&xa_arenas[tag - 1], __ATOMIC_ACQUIRE);
        __atomic_fetch_add(&a->remote_freed_bytes, r->bytes[i], __ATOMIC_RELAXED);
    }
    __atomic_store_n(&r->bytes[i], 0, __ATOMIC_RELAXED);
    __atomic_store_n(&r->arena_plus1[i], 0, __ATOMIC_RELAXED);
}

/* Counts bytes of a block of arena index freed by h (not its owner).
 * Modular: a negative count (as uint64_t) takes bytes back. */
static void remote_add(xa_heap *h, unsigned index, uint64_t bytes)
{
    struct xa_heap_remote *r = xa_heap_remote(h);
    unsigned i = index % XA_HEAP_REMOTE_SLOTS;
    if (xa_unlikely(r->arena_plus1[i] != index + 1)) {
        if (!h->remote_used)
            __atomic_store_n(&h->remote_used, true, __ATOMIC_RELAXED);
        remote_slot_flush(r, i);
        __atomic_store_n(&r->arena_plus1[i], index + 1, __ATOMIC_RELAXED);
    }
    __atomic_store_n(&r->bytes[i], r->bytes[i] + bytes, __ATOMIC_RELAXED);
}

/* Hands every byte of h's remote table to its arena (the heap is
 * released, or leaves its node). */
static void remote_flush(xa_heap *h)
{
    if (!h->remote_used)
        return;
    struct xa_heap_remote *r = xa_heap_remote(h);
    for (unsigned i = 0; i < XA_HEAP_REMOTE_SLOTS; i++)
        remote_slot_flush(r, i);
    __atomic_store_n(&h->remote_used, false, __ATOMIC_RELAXED);
}

/* A thread freeing many big blocks of other threads (a mass delete)
 * purges them as it goes: their owners may be idle and would keep the
 * pages until their next slow path. Hand-offs in steady state stay under
 * the allowance, which each upkeep of this heap renews, and which starts
 * over whenever the owner has taken a malloc slow path since the last such
 * free: it allocates, and takes the blocks back (a thread that only frees
 * what another allocates, 64 KiB-1 MiB buffers, made no upkeep and purged
 * every block it freed: 20,000 madvise calls per 100,000 buffers). Out of
 * line: the remote free of small blocks keeps a short frame. */
static XA_NOINLINE void remote_trim(xa_heap *h, xa_slab *s, xa_block *b)
{
    /* (The owner's count, read unlocked: a heap's page stays mapped.) */
    const xa_heap *owner = s->heap;
    uint32_t slow = owner ? __atomic_load_n(&owner->slow_count, __ATOMIC_RELAXED) : 0;
    if (owner && owner == h->remote_trim_owner && slow != h->remote_trim_owner_slow)
        h->remote_trim_pending = 0;
    h->remote_trim_owner = owner;
    h->remote_trim_owner_slow = slow;
    if ((h->remote_trim_pending += s->block_size) > TRIM_ALLOWANCE &&
        !xa_chunk_huge_advised(xa_chunk_of(s)))
        h->trimmed_bytes += xa_slab_trim_block(b, s->block_size, XA_PURGE_AT_FREE);
}

/* A block of a slab whose owner exited, freed by a thread of the slab's
 * arena: the slab becomes this heap's (as a new slab would), so this free
 * and the next ones of its blocks are local pushes, and its blocks are
 * reused at once instead of waiting in the arena. */
static XA_NOINLINE bool adopt_on_free(xa_heap *h, xa_slab *s)
{
    if (h == &xa_heap_empty || h->no_keep || xa_chunk_of(s)->arena != h->arena ||
        !xa_arena_slab_adopt_this(h->arena, s, h))
        return false;
    uint32_t busy = xa_heap_owner_enter(h);
    avail_push_back(h, s);
    xa_heap_owner_leave(h, busy);
    return true;
}

void xa_heap_settle_slow(xa_heap *h, xa_block *u)
{
    /* Checked as free() would check it now: the block may have been freed
     * again meanwhile, by its owner or this thread (a double free), and
     * its slab, even its chunk, given back since. */
    unsigned region = xa_region_of(u);
    xa_chunk *c = region == XA_REGION_RUNS || region == XA_REGION_RUNS_SLOW ? xa_chunk_of(u) : NULL;
    xa_slab *s = c ? xa_run_of(c, u) : NULL;
    if (!s || s->kind != XA_RUN_SMALL || !xa_slab_is_block(s, u))
        xa_fatal("free(): invalid pointer %p (freed already: its slab was given back since)",
                 (void *)u);
    /* Then as free_generic does: both frees report a marked block. */
    if (s->heap == h) { /* adopted meanwhile: an owner's free */
        if (xa_block_marked_free(u) || xa_slab_link_suspect(s, u))
            xa_heap_double_free_check(s, u);
        xa_heap_free_owned(h, s, u);
        return;
    }
    xa_heap_free_remote(h, s, u);
}

void xa_heap_free_remote(xa_heap *h, xa_slab *s, xa_block *b)
{
    /* Freed already, by its owner or by another thread: this thread
     * cannot walk the lists it may be on, the mark says it. */
    if (xa_unlikely(xa_block_marked_free(b)))
        xa_fatal("free(): double free of %p (%u-byte block, freed already by this or another "
                 "thread)",
                 (void *)b, s->block_size);
    /* A block whose page was purged while its slab was abandoned was free
     * then: the purge erased its mark (every free of such a slab's blocks
     * comes here, see xa_heap_keeps_remote). */
    if (xa_unlikely(s->in_full & XA_SLAB_PAGES_PURGED) && xa_slab_block_withheld(s, b))
        xa_fatal("free(): double free of %p (%u-byte block, freed already: its thread exited "
                 "and its page was given back since)",
                 (void *)b, s->block_size);
    if (xa_unlikely(s->in_full & XA_SLAB_ABANDONED) && adopt_on_free(h, s)) {
        xa_heap_free_owned(h, s, b);
        return;
    }
    b->mark = xa_free_mark_of(b);
    unsigned cls = s->cls;
    /* Counted against the block's arena, so per-arena live bytes stay
     * exact whichever thread frees (see xa_heap_remote). */
    xa_chunk *oc = xa_chunk_of(b);
    xa_arena *owner = oc->arena;
    if (xa_unlikely(h == &xa_heap_empty)) {
        __atomic_fetch_add(&owner->remote_nfree[cls], 1, __ATOMIC_RELAXED);
        push_remote(s, b);
        return;
    }
    if (xa_unlikely(s->in_full & XA_SLAB_TRIM))
        remote_trim(h, s, b);
    /* Under NUMA only blocks of this heap's node are kept (the keys
     * differ): a block of another node goes back to its owner, whose
     * threads run there. The empty heap's key keeps nothing. */
    if (s->small.keep_key == h->keep_key && cls < XA_FOREIGN_CLASSES) {
        xa_slab *f = xa_heap_foreign(h, cls);
        if (xa_unlikely(!xa_heap_foreign_ready(h, cls)))
            foreign_init(h, f, cls);
        /* A full stack stays as it is, for this thread's next allocations
         * (handing it all back when it fills left the blocks waiting in
         * their owners' remote lists while this thread took new memory:
         * ovsdb update, 1000 rows, peak RSS 26 -> 37 MiB). */
        if (f->reserved < foreign_limit(h, cls)) {
            /* Keep it for this thread's next malloc of the class. The slab
             * still counts it as in use, so nothing changes for its owner.
             * (A second free of it while it waits here finds the mark.) */
            xa_heap_foreign_push(f, b, f->reserved);
            return;
        }
    }
    /* Blocks above 8 KiB (the classes without foreign stacks) go one by
     * one: few, and a mass free of big blocks should not wait in
     * outboxes, holding whole slabs. */
    if (cls < XA_FOREIGN_CLASSES) {
        xa_heap_outbox_add(h, s, b); /* (counted when its chain goes) */
        return;
    }
    h->remote_nfree[cls]++;
    remote_add(h, owner->index, s->block_size);
    push_remote(s, b);
}

/* ---- large-block cache ---- */

/* A slot word is a page-aligned address with a size key in its low 12
 * bits: a large block's own (64 KiB-aligned) with the run's units
 * (1..31), or a huge block's mapping (its chunk; the block starts
 * XA_HUGE_HEADER past it, inside the first page) with the mapping's size
 * in pages (more than 496). The owner matches on the word alone; the
 * statistics read the words without a lock, and a parked block may be
 * freed (a huge one unmapped) by whoever flushes the slot, so its
 * metadata is read only by the one that empties the slot. The slot's
 * freed time sits in the heap for the same reason. */
#define SLOT_KEY_MASK ((uintptr_t)XA_OS_PAGE - 1)

static inline uintptr_t slot_word(uintptr_t p, uintptr_t key) { return p | key; }
static inline uintptr_t huge_key(size_t map_size) { return map_size >> 12; }
/* The slot word w holds a huge mapping (a key past any large block's
 * units); an empty slot (0) does not. */
static inline bool slot_is_huge(uintptr_t w) { return (w & SLOT_KEY_MASK) > XA_UNITS_PER_CHUNK; }

/* Bytes of large blocks parked in h's slots, read off the slot words (a
 * key up to XA_UNITS_PER_CHUNK is a large block's units). */
static uint64_t slots_large_bytes(const xa_heap *h)
{
    uint64_t bytes = 0;
    for (unsigned i = 0; i < XA_LARGE_CACHE_SLOTS; i++) {
        uintptr_t w = atomic_load_explicit(&h->large_cache[i], memory_order_relaxed);
        if (!slot_is_huge(w))
            bytes += (uint64_t)(w & SLOT_KEY_MASK) << XA_UNIT_SHIFT;
    }
    return bytes;
}

/* A block was parked: the purger (which may sleep with nothing dirty)
 * must hear of it to give it back if this thread goes quiet, but a thread
 * cycling a hot buffer must not wake it on every free. The coarse clock
 * only moves on slow paths, so a tight cycle raises the hint once. */
static void note_parked(xa_heap *h)
{
    uint64_t now = __atomic_load_n(&coarse_now_ns, __ATOMIC_RELAXED);
    if (now != h->park_noticed_ns) {
        h->park_noticed_ns = now;
        __atomic_store_n(&xa_arena_dirty_pending, true, __ATOMIC_RELAXED);
    }
}

/* Empties slot i: its block is the caller's. Only the
 * owner while busy, or a thread that has the heap to itself (see
 * flush_parked_of_others), reads or writes the slots, so a plain store
 * does: the locked exchange it replaced was a third of a hot 1 MiB
 * malloc/free cycle. */
static void slot_clear(xa_heap *h, unsigned i)
{
    atomic_store_explicit(&h->large_cache[i], 0, memory_order_relaxed);
}

/* Publishes w in a free slot, making room first; false if none was free. */
static bool slot_publish(xa_heap *h, uintptr_t w)
{
    make_room(h);
    for (unsigned i = 0; i < XA_LARGE_CACHE_SLOTS; i++) {
        if (atomic_load_explicit(&h->large_cache[i], memory_order_relaxed))
            continue;
        __atomic_store_n(&h->large_cache_ns[i], __atomic_load_n(&coarse_now_ns, __ATOMIC_RELAXED),
                         __ATOMIC_RELAXED);
        /* (A plain store, as in slot_clear.) */
        atomic_store_explicit(&h->large_cache[i], w, memory_order_relaxed);
        note_parked(h);
        return true;
    }
    return false;
}

static void *large_cache_take(xa_heap *h, unsigned units)
{
    for (unsigned i = 0; i < XA_LARGE_CACHE_SLOTS; i++) {
        uintptr_t w = atomic_load_explicit(&h->large_cache[i], memory_order_relaxed);
        if (!w || (w & SLOT_KEY_MASK) != units)
            continue;
        slot_clear(h, i);
        void *p = (void *)(w & ~SLOT_KEY_MASK);
        xa_slab *s = xa_run_of(xa_chunk_of(p), p);
        s->in_full = 0;
        s->large_size = 0; /* parked: counted as not requested (see put) */
        return p;
    }
    return NULL;
}

static bool large_cache_put(xa_heap *h, xa_chunk *c, xa_slab *s)
{
    size_t bytes = (size_t)s->units << XA_UNIT_SHIFT;
    if (h->no_keep || c->arena != h->arena || bytes > xa_opt.tcache_max ||
        __atomic_load_n(&xa_opt.decay_ms, __ATOMIC_RELAXED) == 0)
        return false;
    uintptr_t p = (uintptr_t)xa_unit_addr(c, s->first_unit);
    s->in_full = 1; /* marks a parked block: a second free is reported */
    /* Freed as far as the program is concerned: not requested any more.
     * Done before the block is published, since whoever takes it from the
     * slot next may free it to the arena at once. */
    size_t req = s->large_size;
    s->large_size = 0;
    xa_heap_requested_add(h, -(int64_t)req);
    if (slot_publish(h, slot_word(p, s->units)))
        return true;
    xa_heap_requested_add(h, (int64_t)req);
    s->large_size = req;
    s->in_full = 0;
    return false;
}

static void *huge_cache_take(xa_heap *h, size_t map_size, size_t request)
{
    uintptr_t want = huge_key(map_size);
    for (unsigned i = 0; i < XA_LARGE_CACHE_SLOTS; i++) {
        uintptr_t w = atomic_load_explicit(&h->large_cache[i], memory_order_relaxed);
        uintptr_t key = w & SLOT_KEY_MASK;
        if (!w || !xa_huge_cached_fits(key, want))
            continue;
        slot_clear(h, i);
        xa_chunk *c = (xa_chunk *)(w & ~SLOT_KEY_MASK);
        char *p = (char *)c + XA_HUGE_HEADER;
        c->huge_request = request;
        xa_heap_requested_add(h, (int64_t)request);
        __atomic_store_n(&c->huge_ptr, p, __ATOMIC_RELEASE);
        return p;
    }
    return NULL;
}

static bool huge_cache_put(xa_heap *h, xa_chunk *c)
{
    uintptr_t p = (uintptr_t)c->huge_ptr;
    if (h->no_keep || c->arena != h->arena || c->map_size > XA_HEAP_HUGE_CACHE_MAX ||
        p != (uintptr_t)c + XA_HUGE_HEADER ||
        __atomic_load_n(&xa_opt.decay_ms, __ATOMIC_RELAXED) == 0)
        return false;
    /* One huge mapping parked per thread: that is the hot buffer freed
     * and taken again. More (up to four of 8 MiB) kept a program whose
     * buffers grow through the sizes (realloc) holding freed mappings
     * that no request of its matched, outside the arena's dirty
     * allowance until decay_ms: a peak 8 MiB above glibc's. */
    for (unsigned i = 0; i < XA_LARGE_CACHE_SLOTS; i++)
        if (slot_is_huge(atomic_load_explicit(&h->large_cache[i], memory_order_relaxed)))
            return false;
    /* A parked mapping has no user pointer: a second free of it, or a
     * realloc, is reported as an invalid pointer. It stays on the arena's
     * list of live mappings. */
    size_t req = c->huge_request;
    c->huge_ptr = NULL;
    c->huge_request = 0;
    xa_heap_requested_add(h, -(int64_t)req);
    if (slot_publish(h, slot_word((uintptr_t)c, huge_key(c->map_size))))
        return true;
    xa_heap_requested_add(h, (int64_t)req);
    c->huge_request = req;
    c->huge_ptr = (char *)p;
    return false;
}

/* Takes the block of slot i (which holds word w) and gives it back to its
 * arena. The owner, or a thread that has the heap to itself. */
static void slot_release(xa_heap *h, unsigned i, uintptr_t w)
{
    slot_clear(h, i);
    char *p = (char *)(w & ~SLOT_KEY_MASK);
    xa_chunk *c = xa_chunk_of(p);
    if (slot_is_huge(w)) { /* p is the mapping, c */
        c->huge_ptr = (char *)c + XA_HUGE_HEADER;
        xa_huge_free(c);
        return;
    }
    xa_slab *s = xa_run_of(c, p);
    s->in_full = 0;
    xa_arena_large_free(c, s);
}

/* The owner's way into its slots from malloc and free of big blocks:
 * slots_busy, so that no other thread flushes them meanwhile, then a wait
 * for one that does (the same handshake as owner_enter, on a word of its
 * own: see slots_busy in heap.h). */
static inline void slots_enter(xa_heap *h)
{
    __atomic_store_n(&h->slots_busy, 1, __ATOMIC_RELAXED);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    if (xa_unlikely(__atomic_load_n(&h->reclaiming, __ATOMIC_ACQUIRE)))
        xa_heap_wait_reclaim(h);
}

static inline void slots_leave(xa_heap *h)
{
    __atomic_store_n(&h->slots_busy, 0, __ATOMIC_RELEASE);
}

void *xa_heap_large_cache_take(xa_heap *h, unsigned units)
{
    slots_enter(h);
    void *p = large_cache_take(h, units);
    slots_leave(h);
    return p;
}

bool xa_heap_large_cache_put(xa_heap *h, xa_chunk *c, xa_slab *s)
{
    slots_enter(h);
    bool kept = large_cache_put(h, c, s);
    slots_leave(h);
    return kept;
}

void *xa_heap_huge_cache_take(xa_heap *h, size_t map_size, size_t request)
{
    slots_enter(h);
    void *p = huge_cache_take(h, map_size, request);
    slots_leave(h);
    return p;
}

bool xa_heap_huge_cache_put(xa_heap *h, xa_chunk *c)
{
    slots_enter(h);
    bool kept = huge_cache_put(h, c);
    slots_leave(h);
    return kept;
}

/* The slots are a tiny LRU: when all are taken, the block parked longest
 * goes back to its arena, so blocks parked once (the huge blocks a
 * program freed while building its heap) cannot keep a hot buffer out. */
static void make_room(xa_heap *h)
{
    unsigned oldest = 0;
    uint64_t oldest_ns = UINT64_MAX;
    uintptr_t oldest_w = 0;
    for (unsigned i = 0; i < XA_LARGE_CACHE_SLOTS; i++) {
        uintptr_t w = atomic_load_explicit(&h->large_cache[i], memory_order_relaxed);
        if (!w)
            return;
        uint64_t t = __atomic_load_n(&h->large_cache_ns[i], __ATOMIC_RELAXED);
        if (t < oldest_ns) {
            oldest_ns = t;
            oldest = i;
            oldest_w = w;
        }
    }
    slot_release(h, oldest, oldest_w);
}

/* Returns parked blocks older than decay_ms (all with force) to their
 * arenas. The owner (busy), or a thread that has the heap to itself
 * (flush_parked_of_others). Returns true when blocks remain parked. */
static bool large_cache_flush(xa_heap *h, uint64_t now, bool force)
{
    bool left = false;
    uint64_t decay_ns = (uint64_t)__atomic_load_n(&xa_opt.decay_ms, __ATOMIC_RELAXED) * 1000000u;
    for (unsigned i = 0; i < XA_LARGE_CACHE_SLOTS; i++) {
        uintptr_t w = atomic_load_explicit(&h->large_cache[i], memory_order_relaxed);
        if (!w)
            continue;
        if (!force && now - __atomic_load_n(&h->large_cache_ns[i], __ATOMIC_RELAXED) < decay_ns) {
            left = true;
            continue;
        }
        slot_release(h, i, w);
    }
    return spare_flush(h, now, force) | left;
}

static bool flush_parked_of_others(uint64_t now, bool force, bool barrier_ok);
static bool reclaim_barrier_register(void);

/* True when some block or spare of h has been parked for decay_ms: a
 * racy look (the owner may take it meanwhile), the flush decides. */
static bool heap_parked_due(const xa_heap *h, uint64_t now)
{
    uint32_t decay_ms = (uint32_t)__atomic_load_n(&xa_opt.decay_ms, __ATOMIC_RELAXED);
    uint64_t decay_ns = (uint64_t)decay_ms * 1000000u;
    for (unsigned i = 0; i < XA_LARGE_CACHE_SLOTS; i++)
        if (atomic_load_explicit(&h->large_cache[i], memory_order_relaxed) &&
            now - __atomic_load_n(&h->large_cache_ns[i], __ATOMIC_RELAXED) >= decay_ns)
            return true;
    if (!__atomic_load_n(&h->spare_count, __ATOMIC_RELAXED))
        return false;
    /* (the purger's round would otherwise look at each heap's classes) */
    if (!spares_may_be_due(h, now, decay_ms))
        return false;
    for (unsigned c = 0; c < XA_NCLASSES; c++)
        if (atomic_load_explicit(&h->spare[c], memory_order_relaxed) &&
            now - __atomic_load_n(&h->spare_ns[c], __ATOMIC_RELAXED) >= decay_ns)
            return true;
    return false;
}

bool xa_heaps_decay_caches(uint64_t now)
{
    __atomic_store_n(&coarse_now_ns, now, __ATOMIC_RELAXED);
    bool barrier_ok = reclaim_barrier_register();
    xa_lock_acquire(&heaps_lock);
    bool left = flush_parked_of_others(now, false, barrier_ok);
    xa_lock_release(&heaps_lock);
    return left;
}

/* ---- idle reclaim ----
 *
 * A thread that goes quiet keeps, per class, its current slab, with the
 * pages carved for it: in a service whose threads use a class for a
 * while and then park, empty slabs of a dozen transient classes per
 * thread (issue 18). The owner would give them back on its next slow
 * path, but a parked thread never runs one, so the purger takes them.
 *
 * Only an empty current slab of a class below XA_TRIM_MIN_BLOCK is taken,
 * and only its pages: the slab stays the heap's, its free list and carved
 * count are reset, and the owner's next malloc of the class carves its
 * first page again. No block of an empty slab is out, so no free (the
 * owner's or a remote one) can reach it; a malloc can, through cur[]:
 *   purger: reclaiming = 1; cur[cls] = sentinel; membarrier; read busy
 *   owner:  busy = 1; read cur[cls] ... pop ...; busy = 0
 * The barrier makes the pair a Dekker handshake with no fence on the
 * owner's side: if the purger then reads busy == 0, any pop that loaded
 * the old slab has finished and its stores are visible, and every later
 * malloc loads the sentinel (empty), takes the slow path and waits for
 * reclaiming == 0. Owner code that changes cur[] or the lists outside
 * malloc (xa_heap_owner_enter) waits the same way; a heap busy at the
 * barrier is left as it was. A free makes its slab current without
 * either (it is the fast path), so the purger reads the class's counters
 * once more after the slab's count: the free that emptied the slab
 * counted itself before its decrement, and any later free or malloc of
 * the slab comes after that one. A class counts as idle when its malloc and
 * free counts did not move between two looks, so a thread's working set
 * is never taken from under it. */

#define RECLAIM_BATCH 256
_Static_assert(XA_NCLASSES <= 64, "reclaim_settled has a bit per class");
#define RECLAIM_MIN_NS ((uint64_t)10000000u)           /* 10 ms */
#define RECLAIM_MAX_NS ((uint64_t)1000000000u)         /* 1 s */
#define RECLAIM_BACKOFF_NS ((uint64_t)30 * 1000000000u) /* 30 s */

struct reclaim_candidate {
    xa_heap *h;
    xa_slab *s;
    uint32_t moves;
    unsigned cls;
};

static uint64_t reclaim_next_ns, reclaim_wait_ns;
static pid_t reclaim_pid;       /* atomic: the process registered for */
static bool reclaim_barrier_ok; /* atomic: that registration worked */

/* The barrier needs a registration per process (again in a fork child),
 * made here, never under heaps_lock: in a process that already has
 * threads, registering waits for an RCU grace period (20 ms measured),
 * and every thread that started or exited meanwhile waited for the lock
 * as long (a thread-per-request program's first requests). Callers that
 * race both register, which is harmless. Returns true when this process
 * may use the barrier (false: no handshake, nothing taken from other
 * heaps). */
static bool reclaim_barrier_register(void)
{
    xa_assert(!xa_lock_held_any());
    pid_t pid = xa_os_getpid();
    if (__atomic_load_n(&reclaim_pid, __ATOMIC_ACQUIRE) == pid)
        return __atomic_load_n(&reclaim_barrier_ok, __ATOMIC_RELAXED);
    bool ok = xa_os_membarrier_register() == 0;
    __atomic_store_n(&reclaim_barrier_ok, ok, __ATOMIC_RELAXED);
    __atomic_store_n(&reclaim_pid, pid, __ATOMIC_RELEASE);
    return ok;
}

/* Mallocs and frees of class cls so far (low 32 bits). */
static inline uint32_t class_moves_raw(const xa_heap *h, unsigned cls)
{
    return (uint32_t)(__atomic_load_n(&h->nmalloc[cls], __ATOMIC_RELAXED) +
                      __atomic_load_n(&h->nfree[cls], __ATOMIC_RELAXED));
}

/* Folded to 16 bits (the heap's fields fit one page): a busy class seen
 * as idle by a collision only loses its empty slab's pages, the
 * handshake keeps it safe. */
static inline uint16_t moves_folded(uint32_t m)
{
    return (uint16_t)(m ^ (m >> 16));
}

static inline uint16_t class_moves(const xa_heap *h, unsigned cls)
{
    return moves_folded(class_moves_raw(h, cls));
}

#ifdef XA_TEST
/* Unit tests run owner code here (0: after the handshake, before the
 * slab's count; 1: after it), as an owner thread could. */
void (*xa_test_reclaim_window)(int point);
#define RECLAIM_WINDOW(point)                                                              \
    do {                                                                                   \
        if (xa_test_reclaim_window)                                                        \
            xa_test_reclaim_window(point);                                                 \
    } while (0)
#else
#define RECLAIM_WINDOW(point) ((void)0)
#endif

/* s (examined after the handshake) has no block out (none pending in its
 * remote list either), and its chunk is not promoted to huge pages (a
 * purge would split one; a dense chunk is demoted when it empties, as for
 * trim). */
static bool slab_reclaimable(const xa_slab *s)
{
    return (__atomic_load_n(&s->used, __ATOMIC_ACQUIRE) & ~XA_USED_FLAGS) == 0 &&
           xa_tf_list(atomic_load_explicit(&s->thread_free, memory_order_acquire)) == 0 &&
           !xa_chunk_huge_advised(xa_chunk_of(s));
}

/* Purges every page of the empty slab s and starts it over. */
static size_t reclaim_slab(xa_slab *s)
{
    uintptr_t first = (uintptr_t)s->start;
    uintptr_t end = XA_ALIGN_UP(first + (size_t)s->capacity * s->block_size, XA_OS_PAGE);
    xa_arena_note_uncarved(s);
    s->free = 0;
    s->capacity = 0;
    size_t len = end - first;
    xa_pages_purge((void *)first, len);
    xa_arena_count_purged(xa_chunk_of(s)->arena, XA_PURGE_THREAD, len, 1);
    return len;
}

/* One look at every heap. Pre: heaps_lock held. Sets *moved when some
 * class moved since the last look, *pending when some heap has a current
 * slab, *more when candidates were left for want of room in the batch.
 * Returns the bytes purged.
 * Before the handshake only cur[] itself is read, never the slab it points
 * to: until then the owner may release the slab and its arena unmap the
 * chunk that holds the descriptor. Once the sentinel has stayed in place
 * through the barrier with the heap not busy, the slab is still the
 * heap's (every owner path that releases a slab rewrites cur[] first) and
 * is read and reset safely. */
static size_t reclaim_pass(bool force, bool *moved, bool *pending, bool *more)
{
    struct reclaim_candidate cand[RECLAIM_BATCH];
    unsigned n = 0;
    for (xa_heap *h = heaps_live; h; h = h->next_all) {
        unsigned first = n;
        for (unsigned cls = 0; cls < XA_NCLASSES && xa_classes[cls].size < XA_TRIM_MIN_BLOCK;
             cls++) {
            uint16_t m = class_moves(h, cls);
            bool idle = m == h->reclaim_seen[cls];
            uint64_t bit = (uint64_t)1 << cls;
            h->reclaim_seen[cls] = m;
            if (!idle) {
                *moved = true;
                h->reclaim_settled &= ~bit;
            }
            xa_slab *s = __atomic_load_n(&h->cur[cls], __ATOMIC_RELAXED);
            if (s == &xa_slab_empty || s == &xa_slab_reclaiming ||
                xa_heap_is_stack(h, cls, s))
                continue;
            *pending = true;
            /* Looked at already, and nothing moved since: no handshake. */
            if (!(idle || force) || ((h->reclaim_settled & bit) && !force))
                continue;
            if (n == RECLAIM_BATCH) {
                *more = true; /* the next pass comes soon */
                continue;
            }
            cand[n++] = (struct reclaim_candidate){h, s, m, cls};
        }
        if (n == first)
            continue;
        /* reclaiming first: an owner that finds the sentinel waits on it. */
        __atomic_store_n(&h->reclaiming, 1, __ATOMIC_RELAXED);
        for (unsigned i = first; i < n; i++) {
            xa_slab *expect = cand[i].s;
            if (!__atomic_compare_exchange_n(&h->cur[cand[i].cls], &expect, &xa_slab_reclaiming,
                                             false, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
                cand[i].s = NULL; /* the owner moved on meanwhile */
        }
    }
    if (!n)
        return 0;
    bool barrier = xa_os_membarrier() == 0;
    size_t bytes = 0;
    bool go = false;
    for (unsigned i = 0; i < n; i++) {
        xa_heap *h = cand[i].h;
        xa_slab *s = cand[i].s;
        unsigned cls = cand[i].cls;
        /* A heap busy at the barrier: its owner may be popping from s, or
         * releasing it; s is not read, only put back if still replaced. */
        if (i == 0 || cand[i - 1].h != h)
            go = barrier && !__atomic_load_n(&h->busy, __ATOMIC_ACQUIRE);
        if (s && !go) {
            xa_slab *expect = &xa_slab_reclaiming;
            __atomic_compare_exchange_n(&h->cur[cls], &expect, s, false, __ATOMIC_RELEASE,
                                        __ATOMIC_RELAXED);
        } else if (s && __atomic_load_n(&h->cur[cls], __ATOMIC_ACQUIRE) == &xa_slab_reclaiming) {
            /* Checked again now that the owner's stores are visible: a
             * malloc or free of the class since the look keeps the slab. */
            uint32_t moves = class_moves_raw(h, cls);
            if (s->kind == XA_RUN_SMALL && s->heap == h &&
                moves_folded(moves) == cand[i].moves) {
                RECLAIM_WINDOW(0);
                bool empty = s->capacity && slab_reclaimable(s);
                RECLAIM_WINDOW(1);
                /* The counters once more after the count: frees do not
                 * wait for the purger, and one that emptied s since the
                 * look above also made it current again (the sentinel
                 * gone), so a malloc may be taking a block of s now. That
                 * free counted itself before the decrement the count
                 * shows, and any later free or malloc of s comes after
                 * it (no block of s was out). */
                if (empty && class_moves_raw(h, cls) == moves) {
                    size_t got = reclaim_slab(s);
                    __atomic_fetch_add(&h->reclaimed_bytes, got, __ATOMIC_RELAXED);
                    bytes += got;
                }
                /* Reclaimed, or holding blocks: nothing to do until the
                 * class moves again. */
                h->reclaim_settled |= (uint64_t)1 << cls;
            }
            __atomic_store_n(&h->cur[cls], s, __ATOMIC_RELEASE);
        }
        if (i + 1 == n || cand[i + 1].h != h)
            __atomic_store_n(&h->reclaiming, 0, __ATOMIC_RELEASE);
    }
    return bytes;
}

uint64_t xa_heaps_reclaim_idle(uint64_t now, bool force)
{
    if (!force && now < __atomic_load_n(&reclaim_next_ns, __ATOMIC_RELAXED))
        return __atomic_load_n(&reclaim_next_ns, __ATOMIC_RELAXED) - now;
    bool moved = false, pending = false, more = false;
    size_t bytes = 0;
    bool barrier_ok = reclaim_barrier_register();
    xa_lock_acquire(&heaps_lock);
    if (barrier_ok) {
        /* Disarmed before the look: a page carved after it wakes the
         * purger. (Left armed, so never waking it, without the barrier.) */
        __atomic_store_n(&reclaim_armed, false, __ATOMIC_SEQ_CST);
        bytes = reclaim_pass(force, &moved, &pending, &more);
    }
    xa_lock_release(&heaps_lock);
    if (!pending)
        return UINT64_MAX;
    if (force) /* (now unused) the purger's schedule stays as it was */
        return 0;
    __atomic_store_n(&reclaim_armed, true, __ATOMIC_RELAXED);
    /* A quarter of decay_ms between looks while threads move (a class is
     * idle after one to two of them); backing off to 30 s while nothing
     * moves. */
    uint64_t base = (uint64_t)__atomic_load_n(&xa_opt.decay_ms, __ATOMIC_RELAXED) * 250000u;
    base = base < RECLAIM_MIN_NS ? RECLAIM_MIN_NS : base > RECLAIM_MAX_NS ? RECLAIM_MAX_NS : base;
    uint64_t wait = moved || bytes ? base : reclaim_wait_ns * 2;
    if (wait < base)
        wait = base;
    if (more)
        wait = RECLAIM_MIN_NS;
    if (wait > RECLAIM_BACKOFF_NS)
        wait = RECLAIM_BACKOFF_NS;
    reclaim_wait_ns = wait;
    __atomic_store_n(&reclaim_next_ns, now + wait, __ATOMIC_RELAXED);
    return wait;
}

void xa_heaps_flush_caches(void)
{
    bool barrier_ok = reclaim_barrier_register();
    xa_lock_acquire(&heaps_lock);
    flush_parked_of_others(0, true, barrier_ok);
    xa_lock_release(&heaps_lock);
}

/* Flushes the parked blocks and spare slabs of every live heap (those
 * parked for decay_ms, all with force) from a thread that owns none of
 * them, with idle reclaim's handshake (see there): each heap that parks
 * something is marked reclaiming, one process-wide barrier, and those
 * whose owner was busy neither in malloc (busy) nor with its slots
 * (slots_busy) at it are this thread's until their mark is cleared; their
 * owners wait at their next slow path or slot access. The owner's own
 * takes and parks are then plain loads and stores (no locked instruction
 * on a large block's malloc/free cycle or a spare's round trip). A heap
 * busy at the barrier keeps its blocks until the next pass; without the
 * barrier (an old kernel, a seccomp filter) owners flush only their own,
 * on their slow paths and at exit. Under heaps_lock; barrier_ok from
 * reclaim_barrier_register. Returns true when blocks remain parked. */
static bool flush_parked_of_others(uint64_t now, bool force, bool barrier_ok)
{
    bool left = false, marked = false;
    for (xa_heap *h = heaps_live; h; h = h->next_all) {
        if (!heap_has_parked(h))
            continue;
        /* Only a heap with something due costs the barrier (the purger
         * looks every 100 ms while blocks are parked). */
        if (barrier_ok && (force || heap_parked_due(h, now))) {
            __atomic_store_n(&h->reclaiming, 1, __ATOMIC_RELAXED);
            marked = true;
        } else {
            left = true;
        }
    }
    if (!marked)
        return left;
    bool barrier = xa_os_membarrier() == 0;
    for (xa_heap *h = heaps_live; h; h = h->next_all) {
        if (!__atomic_load_n(&h->reclaiming, __ATOMIC_RELAXED))
            continue;
        if (barrier && !__atomic_load_n(&h->busy, __ATOMIC_ACQUIRE) &&
            !__atomic_load_n(&h->slots_busy, __ATOMIC_ACQUIRE))
            left |= large_cache_flush(h, now, force);
        else
            left = true;
        __atomic_store_n(&h->reclaiming, 0, __ATOMIC_RELEASE);
    }
    return left;
}

/* ---- lifecycle ---- */

xa_heap *xa_heap_create(xa_arena *arena)
{
    xa_lock_acquire(&heaps_lock);
    xa_heap *h = heaps_free;
    if (h)
        heaps_free = h->next_all;
    xa_lock_release(&heaps_lock);
    if (!h) {
        h = xa_meta_alloc(XA_HEAP_ALLOC_SIZE, XA_OS_PAGE);
        if (!h)
            return NULL;
    } else {
        /* The foreign stacks were emptied when the last owner left; those
         * it set up keep their (per-class constant) limits. */
        uint64_t ready = h->foreign_ready;
        memset(h, 0, sizeof *h);
        h->foreign_ready = ready;
    }
    for (unsigned c = 0; c < XA_NCLASSES; c++)
        h->cur[c] = &xa_slab_empty;
    h->arena = arena;
    h->keep_key = xa_chunk_keep_key(arena->node);
    h->tid = (int)xa_os_gettid();
    h->no_keep = !xa_opt.tcache;
    xa_lock_acquire(&heaps_lock);
    h->prev_all = NULL;
    h->next_all = heaps_live;
    if (heaps_live)
        heaps_live->prev_all = h;
    heaps_live = h;
    heaps_count++;
    if (heaps_count >= XA_HEAPS_MANY && !xa_heaps_many) {
        /* Threads enough for idle caches to add up: the purger is worth
         * starting (the dirty hint reaches background_thread:auto). */
        __atomic_store_n(&xa_heaps_many, true, __ATOMIC_RELAXED);
        __atomic_store_n(&xa_arena_dirty_pending, true, __ATOMIC_RELAXED);
    }
    xa_lock_release(&heaps_lock);
    return h;
}

static void set_never_notify(xa_slab *s)
{
    uintptr_t old = atomic_load_explicit(&s->thread_free, memory_order_relaxed);
    for (;;) {
        if ((old & XA_TF_MASK) == XA_TF_NOTIFYING) {
            sched_yield();
            old = atomic_load_explicit(&s->thread_free, memory_order_relaxed);
            continue;
        }
        if (atomic_compare_exchange_weak_explicit(&s->thread_free, &old,
                                                  (old & ~XA_TF_MASK) | XA_TF_NEVER,
                                                  memory_order_acq_rel, memory_order_relaxed))
            return;
    }
}

static void release_or_abandon(xa_slab *s, bool keep_warm)
{
    xa_slab_set_in_full(s, s->in_full & ~XA_SLAB_IN_FULL);
    s->next = s->prev = NULL;
    xa_slab_collect(s);
    if (xa_slab_used(s) == 0) {
        /* Empty: kept as it is for the arena's next thread (a thread per
         * request takes its slabs carved and resident), or freed. */
        if (keep_warm && xa_arena_slab_keep(xa_chunk_of(s), s))
            return;
        s->heap = NULL;
        xa_arena_slab_free(xa_chunk_of(s), s);
    } else {
        xa_arena_slab_abandon(xa_chunk_of(s), s);
    }
}

/* The thread now runs on another node: its slabs go to their arena as at
 * thread exit (their live blocks stay valid, later frees of them are
 * remote frees), its caches are emptied, and it takes an arena of the new
 * node, so its next blocks come from there. */
/* Hands every slab and cached block of h back (thread exit, or a move to
 * another node): live blocks stay valid, and later frees of them are
 * remote frees. */
static void heap_release_all(xa_heap *h)
{
    foreign_flush(h);
    outbox_flush(h);
    /* First stop all notifications (waiting out any in flight), so no
     * other thread touches this heap once it is recycled or moved. */
    for (unsigned c = 0; c < XA_NCLASSES; c++)
        for (xa_slab *s = h->avail[c]; s; s = s->next)
            set_never_notify(s);
    for (xa_slab *s = h->full; s; s = s->next)
        set_never_notify(s);
    drain_delayed(h);
    large_cache_flush(h, 0, true);
    /* (what the heap learnt of its thread's classes goes with it) */
    __atomic_store_n(&h->slab_returned, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&h->slab_churn, 0, __ATOMIC_RELAXED);
    for (unsigned c = 0; c < XA_NCLASSES; c++) {
        head_move(h, h->avail[c], NULL);
        for (xa_slab *s = h->avail[c]; s;) {
            xa_slab *next = s->next;
            release_or_abandon(s, !h->no_keep); /* (tcache:off keeps none) */
            s = next;
        }
        h->avail[c] = NULL;
        __atomic_store_n(&h->cur[c], &xa_slab_empty, __ATOMIC_RELAXED);
    }
    for (xa_slab *s = h->full; s;) {
        xa_slab *next = s->next;
        release_or_abandon(s, !h->no_keep); /* (tcache:off keeps none) */
        s = next;
    }
    h->full = NULL;
}

/* Counters so far go to the heap's arena, as those of exited threads.
 * Pre: heaps_lock held. */
static void heap_retire_counters(xa_heap *h)
{
    remote_flush(h);
    h->arena->dead_carved_bytes += h->carved_bytes;
    __atomic_store_n(&h->carved_bytes, 0, __ATOMIC_RELAXED);
    for (unsigned c = 0; c < XA_NCLASSES; c++) {
        dead_remote_nfree[c] += h->remote_nfree[c];
        h->remote_nfree[c] = 0;
        h->arena->dead_nmalloc[c] += h->nmalloc[c];
        h->arena->dead_nfree[c] += h->nfree[c];
        h->nmalloc[c] = h->nfree[c] = 0;
    }
}

/* The thread now runs on another node: it gives back what it holds of the
 * old node and takes an arena of the new one, so its next blocks come from
 * there. */
static void heap_move(xa_heap *h, int slot)
{
    xa_arena *na = xa_arena_choose_on(slot); /* counts this thread in na */
    if (!na)
        return;
    if (na == h->arena) {
        __atomic_fetch_sub(&na->nthreads, 1, __ATOMIC_RELAXED);
        return;
    }
    heap_release_all(h);
    xa_lock_acquire(&heaps_lock);
    heap_retire_counters(h);
    __atomic_fetch_sub(&h->arena->nthreads, 1, __ATOMIC_RELAXED);
    h->arena = na;
    h->keep_key = xa_chunk_keep_key(na->node); /* it keeps its new node's blocks */
    xa_lock_release(&heaps_lock);
}

void xa_heap_thread_exit(xa_heap *h)
{
    /* busy from here on: the purger leaves the heap alone until it is
     * unlinked (and a recycled heap starts at 0). */
    xa_heap_owner_enter(h);
    heap_release_all(h);
    __atomic_fetch_sub(&h->arena->nthreads, 1, __ATOMIC_RELAXED);
    xa_lock_acquire(&heaps_lock);
    heap_retire_counters(h);
    dead_nmalloc_big += h->nmalloc_big;
    dead_nfree_big += h->nfree_big;
    dead_nrealloc += h->nrealloc;
    dead_requested_delta += h->requested_delta;
    if (h->prev_all)
        h->prev_all->next_all = h->next_all;
    else
        heaps_live = h->next_all;
    if (h->next_all)
        h->next_all->prev_all = h->prev_all;
    heaps_count--;
    h->next_all = heaps_free;
    heaps_free = h;
    xa_lock_release(&heaps_lock);
    xa_heap_notice_dirty(); /* (slabs kept warm, runs freed: the purger's) */
}

static size_t collect(xa_heap *h);
size_t xa_heap_collect(xa_heap *h)
{
    uint32_t busy = xa_heap_owner_enter(h);
    size_t n = collect(h);
    xa_heap_owner_leave(h, busy);
    return n;
}

static size_t collect(xa_heap *h)
{
    foreign_flush(h);
    outbox_flush(h);
    drain_delayed(h);
    large_cache_flush(h, 0, true);
    size_t trimmed = trim_free_blocks(h, XA_PURGE_TRIM, 0);
    for (unsigned c = 0; c < XA_NCLASSES; c++) {
        for (xa_slab *s = h->avail[c]; s;) {
            xa_slab *next = s->next;
            xa_slab_collect(s);
            if (xa_slab_used(s) == 0) {
                avail_remove(h, s);
                wait_notifying(s);
                xa_arena_slab_free(xa_chunk_of(s), s);
            }
            s = next;
        }
    }
    return trimmed;
}

void xa_heaps_sum(uint64_t *nmalloc, uint64_t *nfree, int64_t *arena_small_bytes,
                  int64_t *arena_carved_bytes, struct xa_heaps_big *big)
{
    xa_lock_acquire(&heaps_lock);
    *big = (struct xa_heaps_big){.nmalloc = dead_nmalloc_big, .nfree = dead_nfree_big,
                                 .nrealloc = dead_nrealloc, .threads = heaps_count,
                                 .requested_delta = dead_requested_delta};
    for (unsigned c = 0; c < XA_NCLASSES; c++) {
        nmalloc[c] = 0;
        nfree[c] = dead_remote_nfree[c];
    }
    for (unsigned i = 0; i < xa_narenas; i++) {
        arena_small_bytes[i] = 0;
        arena_carved_bytes[i] = 0;
        xa_arena *a = __atomic_load_n(&xa_arenas[i], __ATOMIC_ACQUIRE);
        if (!a)
            continue;
        arena_carved_bytes[i] = a->dead_carved_bytes;
        arena_small_bytes[i] -= (int64_t)__atomic_load_n(&a->remote_freed_bytes, __ATOMIC_RELAXED);
        for (unsigned c = 0; c < XA_NCLASSES; c++) {
            uint64_t m = a->dead_nmalloc[c];
            uint64_t f = a->dead_nfree[c] + __atomic_load_n(&a->remote_nfree[c], __ATOMIC_RELAXED);
            nmalloc[c] += m;
            nfree[c] += f;
            arena_small_bytes[i] += (int64_t)(m - f) * (int64_t)xa_classes[c].size;
        }
    }
    for (xa_heap *h = heaps_live; h; h = h->next_all) {
        arena_carved_bytes[h->arena->index] += __atomic_load_n(&h->carved_bytes, __ATOMIC_RELAXED);
        for (unsigned c = 0; c < XA_NCLASSES; c++) {
            uint64_t m = __atomic_load_n(&h->nmalloc[c], __ATOMIC_RELAXED);
            uint64_t f = __atomic_load_n(&h->nfree[c], __ATOMIC_RELAXED);
            nmalloc[c] += m;
            nfree[c] += f;
            arena_small_bytes[h->arena->index] += (int64_t)(m - f) * (int64_t)xa_classes[c].size;
            nfree[c] += __atomic_load_n(&h->remote_nfree[c], __ATOMIC_RELAXED);
        }
        if (__atomic_load_n(&h->remote_used, __ATOMIC_RELAXED)) {
            const struct xa_heap_remote *r = xa_heap_remote(h);
            for (unsigned i = 0; i < XA_HEAP_REMOTE_SLOTS; i++) {
                uint32_t tag = __atomic_load_n(&r->arena_plus1[i], __ATOMIC_RELAXED);
                if (tag && tag <= xa_narenas)
                    arena_small_bytes[tag - 1] -=
                        (int64_t)__atomic_load_n(&r->bytes[i], __ATOMIC_RELAXED);
            }
        }
        big->nmalloc += __atomic_load_n(&h->nmalloc_big, __ATOMIC_RELAXED);
        big->nfree += __atomic_load_n(&h->nfree_big, __ATOMIC_RELAXED);
        big->nrealloc += __atomic_load_n(&h->nrealloc, __ATOMIC_RELAXED);
        big->requested_delta += __atomic_load_n(&h->requested_delta, __ATOMIC_RELAXED);
        uint64_t parked = slots_large_bytes(h);
        big->large_cached += parked;
        /* Parked large blocks are free memory of the heap's own arena. */
        arena_small_bytes[h->arena->index] -= (int64_t)parked;
    }
    xa_lock_release(&heaps_lock);
}

void xa_heaps_fork_prepare(void) { xa_lock_acquire(&heaps_lock); }
void xa_heaps_fork_parent(void) { xa_lock_release(&heaps_lock); }

void xa_heaps_fork_child(void)
{
    xa_lock_reset(&heaps_lock);
    /* Heaps of threads that do not exist in the child stay as they are
     * (their state may be mid-update); only their count is dropped. */
    xa_heap *self = xa_tls_heap;
    uint64_t n = 0;
    for (xa_heap *h = heaps_live; h; h = h->next_all)
        n++;
    (void)self;
    heaps_count = n;
}

xa_heap *xa_heap_get_slow(void)
{
    return xa_heap_hooks.thread_init();
}
