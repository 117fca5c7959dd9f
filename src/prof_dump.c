/* prof_dump.c: heap-profile files, collapsed stacks and the leak report
 * (profiling build only). Side module beside prof; see prof_dump.h. Calls
 * prof (tables), prof_unwind (names), meta, lock, config, os and util.
 *
 * The heap file is the gperftools heap-profile text format that
 * google-pprof and jeprof read:
 *   heap profile: <live objs>: <live bytes> [<alloc objs>: <alloc bytes>] @ heap_v2/<rate>
 *   <objs>: <bytes> [<objs>: <bytes>] @ 0x.. 0x..      one line per stack
 *   MAPPED_LIBRARIES:
 *   <a copy of /proc/self/maps>
 * The counts are of sampled blocks, unscaled: with heap_v2/<rate> the
 * readers scale each stack by 1 / (1 - exp(-avg size / rate)).
 * Lock order with the dynamic loader: the loader's lock may be held by a
 * thread that allocates (dlopen), and an allocation may wait for an arena
 * lock that a forking thread holds. So no lock of the profiler is ever
 * held while the loader is asked for a symbol name (dladdr), and the fork
 * handlers do not wait for a dump. The dump lock covers the heap file
 * only (system calls and the table lock); the collapsed file is written
 * afterwards with no lock held, from the append-only stack list, and the
 * symbol cache's lock is held only around the cache itself. */
#define _GNU_SOURCE
#include "prof_dump.h"

#include <errno.h>
#include <stdarg.h>
#include <string.h>

#include "config.h"
#include "lock.h"
#include "meta.h"
#include "os.h"
#include "prof.h"
#include "prof_unwind.h"
#include "util.h"

static xa_lock dump_lock = XA_LOCK_INIT(XA_RANK_PROF_DUMP);
static xa_lock sym_lock = XA_LOCK_INIT(XA_RANK_PROF);
static unsigned dump_seq;
static bool failure_reported;

/* ---- buffered writer ---- */

/* The heap file's buffer (dump_lock held): .bss, so resident only once a
 * dump has been written, and no bigger than the collapsed file's (on the
 * writer's stack). */
static char heap_buf[16384];

struct writer {
    int fd;
    char *buf;
    size_t cap, len;
    int err;
};

static void w_flush(struct writer *w)
{
    if (w->len && !w->err) {
        int rc = xa_os_write_all(w->fd, w->buf, w->len);
        if (rc)
            w->err = -rc;
    }
    w->len = 0;
}

static void w_put(struct writer *w, const char *s, size_t n)
{
    while (n) {
        if (w->len == w->cap)
            w_flush(w);
        size_t k = XA_MIN(n, w->cap - w->len);
        memcpy(w->buf + w->len, s, k);
        w->len += k;
        s += k;
        n -= k;
    }
}

__attribute__((format(printf, 2, 3))) static void w_fmt(struct writer *w, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    size_t n = xa_vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    w_put(w, line, XA_MIN(n, sizeof line - 1));
}

/* ---- /proc/self/maps ---- */

static int copy_maps(struct writer *w)
{
    int fd = xa_os_open_read("/proc/self/maps");
    if (fd < 0)
        return -fd;
    char buf[4096];
    for (;;) {
        ssize_t n = xa_os_read(fd, buf, sizeof buf);
        if (n <= 0)
            break;
        w_put(w, buf, (size_t)n);
    }
    xa_os_close(fd);
    return 0;
}

static uintptr_t parse_hex(const char **p)
{
    uintptr_t v = 0;
    for (;; (*p)++) {
        char c = **p;
        if (c >= '0' && c <= '9')
            v = v * 16 + (uintptr_t)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v = v * 16 + (uintptr_t)(c - 'a' + 10);
        else
            return v;
    }
}

int xa_prof_maps_range(uintptr_t addr, uintptr_t *lo, uintptr_t *hi)
{
    int fd = xa_os_open_read("/proc/self/maps");
    if (fd < 0)
        return -fd;
    /* Lines are read through a window; a line start is always kept. */
    char buf[8192];
    size_t have = 0;
    int rc = ENOENT;
    for (;;) {
        ssize_t n = xa_os_read(fd, buf + have, sizeof buf - have - 1);
        if (n <= 0)
            break;
        have += (size_t)n;
        buf[have] = 0;
        char *line = buf, *nl;
        while ((nl = memchr(line, '\n', have - (size_t)(line - buf)))) {
            const char *p = line;
            uintptr_t a = parse_hex(&p);
            uintptr_t b = *p == '-' ? (p++, parse_hex(&p)) : 0;
            if (addr >= a && addr < b) {
                *lo = a;
                *hi = b;
                rc = 0;
                goto out;
            }
            line = nl + 1;
        }
        have -= (size_t)(line - buf);
        memmove(buf, line, have);
    }
out:
    xa_os_close(fd);
    return rc;
}

/* ---- file names ---- */

static int profile_dir(char *dir, size_t cap)
{
    if (xa_opt.prof_dir[0] == '/') {
        xa_strlcpy(dir, xa_opt.prof_dir, cap);
        return 0;
    }
    char cwd[256];
    int rc = xa_os_getcwd(cwd, sizeof cwd);
    if (rc)
        return rc;
    if (xa_opt.prof_dir[0])
        xa_snprintf(dir, cap, "%s/%s", cwd, xa_opt.prof_dir);
    else
        xa_strlcpy(dir, cwd, cap);
    return 0;
}

/* Creates a temporary file, lets fill write it, and renames it to
 * dir/xalloc.PID.SEQ.ext without replacing anything. Returns 0 or errno;
 * path receives the final name. */
static int write_file(const char *dir, unsigned seq, const char *ext,
                      int (*fill)(struct writer *), char *buf, size_t buf_cap, char *path,
                      size_t cap)
{
    long pid = (long)xa_os_getpid();
    char tmp[320];
    xa_snprintf(path, cap, "%s/xalloc.%ld.%u.%s", dir, pid, seq, ext);
    xa_snprintf(tmp, sizeof tmp, "%s/.xalloc.%ld.%u.%s.tmp", dir, pid, seq, ext);
    int fd = xa_os_open_create_excl(tmp, 0600);
    if (fd < 0)
        return -fd;
    struct writer w = {fd, buf, buf_cap, 0, 0};
    int rc = fill(&w);
    w_flush(&w);
    xa_os_close(fd);
    if (!rc)
        rc = w.err;
    if (!rc)
        rc = xa_os_rename_noreplace(tmp, path);
    if (rc)
        xa_os_unlink(tmp);
    return rc;
}

/* ---- the heap profile ---- */

static void put_pcs(struct writer *w, const xa_prof_stack *s)
{
    w_put(w, " @", 2);
    for (unsigned i = 0; i < s->depth; i++)
        w_fmt(w, " 0x%016lx", (unsigned long)s->pcs[i]);
    w_put(w, "\n", 1);
}

static int fill_heap(struct writer *w)
{
    xa_prof_tables_lock();
    uint64_t lc = 0, lb = 0, ac = 0, ab = 0;
    for (xa_prof_stack *s = xa_prof_stacks_head(); s; s = s->next_all) {
        lc += xa_prof_counter(&s->live_count);
        lb += xa_prof_counter(&s->live_bytes);
        ac += xa_prof_counter(&s->alloc_count);
        ab += xa_prof_counter(&s->alloc_bytes);
    }
    w_fmt(w, "heap profile: %6llu: %8llu [%6llu: %8llu] @ heap_v2/%llu\n",
          (unsigned long long)lc, (unsigned long long)lb, (unsigned long long)ac,
          (unsigned long long)ab, (unsigned long long)xa_prof_rate());
    for (xa_prof_stack *s = xa_prof_stacks_head(); s; s = s->next_all) {
        w_fmt(w, "%6llu: %8llu [%6llu: %8llu]",
              (unsigned long long)xa_prof_counter(&s->live_count),
              (unsigned long long)xa_prof_counter(&s->live_bytes),
              (unsigned long long)xa_prof_counter(&s->alloc_count),
              (unsigned long long)xa_prof_counter(&s->alloc_bytes));
        put_pcs(w, s);
    }
    xa_prof_tables_unlock();
    w_put(w, "\nMAPPED_LIBRARIES:\n", 19);
    return copy_maps(w);
}

/* ---- symbol names, cached across dumps ---- */

/* Open addressing, at most half full. The table starts at 16 KiB and
 * doubles (names are looked up at random slots, so a table made at its
 * final size would be resident in full after a few hundred names); old
 * arrays stay in metadata. */
#define SYM_SLOTS_MIN ((size_t)1 << 10)
#define SYM_SLOTS_MAX ((size_t)1 << 16)
#define SYM_NAME_MAX 200
#define SYM_POOL_CHUNK 16384

struct sym_slot {
    uintptr_t pc;
    const char *name;
};
static struct sym_slot *sym_table;
static size_t sym_slots; /* power of two, 0 before the first dump */
static size_t sym_used;
static char *pool, *pool_end;

static const char *intern_name(const char *s)
{
    size_t n = xa_strlen(s) + 1;
    if (!pool || (size_t)(pool_end - pool) < n) {
        pool = xa_meta_alloc(SYM_POOL_CHUNK, 16);
        if (!pool)
            return NULL;
        pool_end = pool + SYM_POOL_CHUNK;
    }
    char *r = pool;
    memcpy(r, s, n);
    pool += n;
    return r;
}

/* Slot of pc in table t of n slots, or of the empty slot where it goes. */
static size_t sym_slot_in(const struct sym_slot *t, size_t n, uintptr_t pc)
{
    size_t i = (size_t)(pc * 0x9e3779b97f4a7c15ULL >> 40) & (n - 1);
    while (t[i].pc && t[i].pc != pc)
        i = (i + 1) & (n - 1);
    return i;
}

/* Makes room for one more name: the first table, or one twice as big
 * when this one is half full. The new table is filled before it is
 * published and its size set after, so that a fork child (sym_lock reset)
 * sees a complete table, at worst with the old size: probes then stay in
 * its first half, which is less than half full. Returns false when there
 * is no room. Pre: sym_lock held. */
static bool sym_reserve(void)
{
    if (sym_table && sym_used < sym_slots / 2)
        return true;
    size_t n = sym_table ? 2 * sym_slots : SYM_SLOTS_MIN;
    if (n > SYM_SLOTS_MAX)
        return false;
    struct sym_slot *t = xa_meta_alloc(n * sizeof *t, 64);
    if (!t)
        return false;
    for (size_t i = 0; i < sym_slots; i++)
        if (sym_table[i].pc)
            t[sym_slot_in(t, n, sym_table[i].pc)] = sym_table[i];
    __atomic_store_n(&sym_table, t, __ATOMIC_RELEASE);
    sym_slots = n;
    return true;
}

/* Name of pc; buf is scratch of SYM_NAME_MAX bytes. */
static const char *symbol(uintptr_t pc, char *buf)
{
    const char *name = NULL;
    xa_lock_acquire(&sym_lock);
    if (sym_table)
        name = sym_table[sym_slot_in(sym_table, sym_slots, pc)].name;
    xa_lock_release(&sym_lock);
    if (name)
        return name;
    /* The loader is asked with no lock of ours held (see the top). */
    xa_prof_symbolize(pc, buf, SYM_NAME_MAX);
    /* Flame-graph tools split on ';' and on the last space. */
    for (char *c = buf; *c; c++)
        if (*c == ';' || *c == ' ')
            *c = '_';
    xa_lock_acquire(&sym_lock);
    if (sym_reserve()) {
        size_t i = sym_slot_in(sym_table, sym_slots, pc);
        if (!sym_table[i].pc && (name = intern_name(buf))) {
            sym_table[i].name = name;
            __atomic_store_n(&sym_table[i].pc, pc, __ATOMIC_RELEASE);
            sym_used++;
        }
    }
    xa_lock_release(&sym_lock);
    return buf;
}

/* Collapsed stacks: "outermost;...;innermost bytes" with the estimated
 * live bytes of each stack. Reads the append-only stack list without the
 * table lock (the loader is asked for names). */
static int fill_collapsed(struct writer *w)
{
    char buf[SYM_NAME_MAX];
    xa_prof_tables_lock(); /* (folds the threads' tallies in) */
    xa_prof_tables_unlock();
    for (xa_prof_stack *s = xa_prof_stacks_head(); s; s = s->next_all) {
        uint64_t est = xa_prof_counter(&s->live_est);
        if (!est)
            continue;
        if (!s->depth)
            w_put(w, "[unknown]", 9);
        for (unsigned i = s->depth; i-- > 0;) {
            const char *name = symbol(s->pcs[i], buf);
            w_put(w, name, xa_strlen(name));
            if (i)
                w_put(w, ";", 1);
        }
        w_fmt(w, " %llu\n", (unsigned long long)est);
    }
    return 0;
}

/* ---- dumps ---- */

/* strerror may allocate (locale); the errors a dump meets are few. */
static const char *error_text(int e)
{
    switch (e) {
    case EACCES: return "permission denied";
    case EPERM: return "operation not permitted";
    case ENOENT: return "no such directory";
    case ENOTDIR: return "not a directory";
    case ENOSPC: return "no space left on device";
    case EDQUOT: return "disk quota exceeded";
    case EROFS: return "read-only file system";
    case EEXIST: return "every file name is taken";
    case ENAMETOOLONG: return "path too long";
    case EMFILE: case ENFILE: return "too many open files";
    case EIO: return "input/output error";
    default: return "error";
    }
}

/* Writes the heap file under a new sequence number. Pre: dump_lock held.
 * Returns 0 or errno; *seq and path receive what was written. */
static int dump_heap_locked(const char *dir, unsigned *seq, char *path, size_t cap)
{
    int rc = xa_os_dir_writable(dir);
    if (rc)
        return rc;
    rc = EEXIST;
    for (int attempt = 0; attempt < 64 && rc == EEXIST; attempt++) {
        *seq = dump_seq++;
        rc = write_file(dir, *seq, "heap", fill_heap, heap_buf, sizeof heap_buf, path, cap);
    }
    return rc;
}

/* Heap file (under the dump lock, or failing with EBUSY when try is set
 * and another dump runs), then collapsed stacks (no lock). */
static int dump(const char *why, bool try, char *msg, size_t cap)
{
    if (!xa_prof_enabled()) {
        xa_snprintf(msg, cap, "profiling is off: start the process with prof:true");
        return ENOTSUP;
    }
    char dir[256], path[320], cpath[320];
    unsigned seq = 0;
    bool old = xa_prof_guard(true);
    int rc = profile_dir(dir, sizeof dir);
    if (rc) {
        xa_strlcpy(dir, "the working directory", sizeof dir);
    } else if (try && pthread_mutex_trylock(&dump_lock.m) != 0) {
        xa_prof_guard(old);
        return EBUSY;
    } else {
        if (!try)
            xa_lock_acquire(&dump_lock);
        rc = dump_heap_locked(dir, &seq, path, sizeof path);
        xa_lock_release(&dump_lock);
    }
    if (!rc) {
        char buf[16384];
        (void)write_file(dir, seq, "collapsed", fill_collapsed, buf, sizeof buf, cpath,
                         sizeof cpath);
        xa_snprintf(msg, cap, "%s", path);
    } else {
        xa_snprintf(msg, cap, "cannot write a heap profile in %s: %s", dir, error_text(rc));
        size_t n = xa_strlen(msg);
        xa_snprintf(msg + n, cap > n ? cap - n : 0, " (errno %d)", rc);
        if (!__atomic_exchange_n(&failure_reported, true, __ATOMIC_RELAXED))
            xa_message("prof: %s dump: %s (reported once)", why, msg);
    }
    xa_prof_guard(old);
    return rc;
}

int xa_prof_dump(const char *why, char *msg, size_t cap)
{
    return dump(why, false, msg, cap);
}

int xa_prof_dump_try(const char *why, char *msg, size_t cap)
{
    return dump(why, true, msg, cap);
}

/* ---- leak report ---- */

#define LEAK_SHOWN 20
#define LEAK_FRAMES 16

void xa_prof_leak_report(void)
{
    xa_prof_tables_lock(); /* (folds the threads' tallies in) */
    xa_prof_tables_unlock();
    size_t cap = xa_prof_stack_count();
    xa_prof_stack **v = cap ? xa_meta_alloc(cap * sizeof *v, 16) : NULL;
    size_t n = 0;
    uint64_t bytes = 0, objs = 0;
    for (xa_prof_stack *s = xa_prof_stacks_head(); s && n < cap; s = s->next_all) {
        uint64_t est = xa_prof_counter(&s->live_est);
        uint64_t cnt = xa_prof_counter(&s->live_count);
        if (!est)
            continue;
        bytes += est;
        objs += cnt;
        if (v)
            v[n++] = s;
    }
    if (!bytes) {
        xa_message("prof_leak: no sampled memory still allocated at exit");
        return;
    }
    /* Shell sort by estimate, largest first: no libc qsort (it may
     * allocate). */
    for (size_t gap = n / 2; gap; gap /= 2)
        for (size_t i = gap; i < n; i++)
            for (size_t j = i; j >= gap && xa_prof_counter(&v[j - gap]->live_est) <
                                               xa_prof_counter(&v[j]->live_est);
                 j -= gap) {
                xa_prof_stack *t = v[j];
                v[j] = v[j - gap];
                v[j - gap] = t;
            }
    char b[32];
    xa_message("prof_leak: ~%llu bytes (%s) in %llu sampled blocks from %zu stacks still "
               "allocated at exit (sample rate %llu bytes)",
               (unsigned long long)bytes, xa_format_bytes(b, sizeof b, bytes),
               (unsigned long long)objs, n, (unsigned long long)xa_prof_rate());
    char name[SYM_NAME_MAX];
    for (size_t k = 0; k < n && k < LEAK_SHOWN; k++) {
        xa_prof_stack *s = v[k];
        xa_message("prof_leak: #%zu ~%llu bytes (%s), %llu sampled blocks of %llu bytes", k + 1,
                   (unsigned long long)xa_prof_counter(&s->live_est),
                   xa_format_bytes(b, sizeof b, xa_prof_counter(&s->live_est)),
                   (unsigned long long)xa_prof_counter(&s->live_count),
                   (unsigned long long)xa_prof_counter(&s->live_bytes));
        for (unsigned i = 0; i < s->depth && i < LEAK_FRAMES; i++)
            xa_message("prof_leak:     at %s", symbol(s->pcs[i], name));
    }
    if (n > LEAK_SHOWN)
        xa_message("prof_leak: ... %zu more stacks; set prof_final:true and read the dump "
                   "with google-pprof or jeprof",
                   n - LEAK_SHOWN);
}

/* ---- fork ---- */

/* A dump may wait for the loader (collapsed stacks) and the loader's lock
 * may be held by a thread waiting for an allocator lock that the forking
 * thread holds: fork does not wait for dumps. In the child the locks are
 * reset; the heap-file buffer and sequence number need no consistency, and
 * a symbol-cache entry becomes visible only once complete. */
void xa_prof_dump_fork_child(void)
{
    xa_lock_reset(&dump_lock);
    xa_lock_reset(&sym_lock);
}
