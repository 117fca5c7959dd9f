/* stats.c: publishes the process's statistics in a shared-memory file for
 * xalloc-stat, serves the file's request area (purge, set), and implements
 * xalloc_stats_get() and xalloc_stats_print(). Side module (stats).
 *
 * Calls: xa_stats_collect (core), xalloc_purge / xalloc_config_set (api,
 * config), xa_config_option_* (config), os, os_stats, util, stats_report.
 * Never called on the fast path: the core calls xa_stats_tick() on slow
 * paths, and a detached thread with every signal blocked refreshes the
 * snapshot every stats_interval_ms and sleeps on a shared futex in the
 * request area, so a request is served as soon as it is made.
 *
 * Concurrency: one publisher at a time, chosen by a try-lock (busy), never
 * a blocking lock: a tick that finds it taken just returns, so a refresh
 * that re-enters malloc, a fork while the thread publishes, or an exit
 * racing the thread can neither deadlock nor tear the file. */
#define _GNU_SOURCE
#include "stats.h"

#include <errno.h>

#include "common.h"
#include "config.h"
#include "os.h"
#include "os_stats.h"
#include "stats_collect.h"
#include "stats_report.h"
#include "util.h"
#include "xalloc.h"
#include "xalloc_stats.h"
#include "xalloc_stats_file.h"


#define STATS_STR2(x) #x
#define STATS_STR(x) STATS_STR2(x)
#define STATS_LIB_VERSION                                                      \
    STATS_STR(XALLOC_VERSION_MAJOR)                                            \
    "." STATS_STR(XALLOC_VERSION_MINOR) "." STATS_STR(XALLOC_VERSION_PATCH)

/* Longest sleep of the serving thread between checks of the interval. */
#define STATS_MAX_SLEEP_NS 250000000u

enum stats_mode {
    STATS_OFF = 0,    /* before boot, or stats:off */
    STATS_BOOTED = 1, /* file not made yet (first tick pending) */
    STATS_OPEN = 2,   /* file published */
    STATS_FAILED = 3, /* no file could be made; ticks stay cheap */
    STATS_CLOSED = 4, /* removed at exit */
};

/* What one publication copies: the snapshot and the configuration, built
 * outside the sequence lock so the odd window is a memcpy. */
struct stats_scratch {
    struct xalloc_stats stats;
    uint32_t config_count;
    struct xalloc_stats_file_config config[XALLOC_STATS_FILE_MAX_CONFIG];
};

static struct {
    uint64_t next_due;   /* atomic: tick publishes when now >= next_due */
    int busy;            /* atomic try-lock: the single publisher */
    int mode;            /* enum stats_mode, written under busy */
    int booted;          /* xa_stats_boot ran: the allocator is usable */
    int fork_pending;    /* a fork child that has not made its file yet */
    int thread_running;  /* atomic */
    int thread_failed;   /* do not retry pthread_create on every tick */
    pid_t pid;           /* the process that owns the file */
    struct xalloc_stats_file_header *map;
    size_t map_size;
    struct stats_scratch *scratch;
    char path[320];
} st;

/* ---- helpers ---- */

static bool busy_try(void)
{
    return __atomic_exchange_n(&st.busy, 1, __ATOMIC_ACQUIRE) == 0;
}

static void busy_release(void)
{
    __atomic_store_n(&st.busy, 0, __ATOMIC_RELEASE);
}

static uint64_t interval_ns(void)
{
    int64_t ms = xa_opt.stats_interval_ms;
    if (ms < 1)
        ms = 1;
    return (uint64_t)ms * 1000000u;
}

static void set_next_due(uint64_t when)
{
    __atomic_store_n(&st.next_due, when, __ATOMIC_RELAXED);
}

/* Field 22 (starttime, clock ticks since boot) of /proc/self/stat: with the
 * pid it tells a live process's file from a stale one whose pid was reused. */
static uint64_t self_start_ticks(void)
{
    char buf[1024];
    int fd = xa_os_open_read("/proc/self/stat");
    if (fd < 0)
        return 0;
    ssize_t n = xa_os_read(fd, buf, sizeof buf - 1);
    xa_os_close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    char *p = buf + n;
    while (p > buf && *p != ')') /* comm may hold spaces and parentheses */
        p--;
    if (*p != ')')
        return 0;
    p++;
    for (int field = 2; field < 22 && *p; p++)
        if (*p == ' ')
            field++;
    uint64_t v = 0;
    while (*p >= '0' && *p <= '9')
        v = v * 10 + (uint64_t)(*p++ - '0');
    return v;
}

/* The name ps and pidof show (/proc/self/comm: the name the program was
 * started as, so "redis-server" rather than the "redis-check-rdb" its
 * symlink points to); the executable's name if comm is unreadable. */
static const char *program_name(char *buf, size_t len)
{
    char comm[32];
    int fd = xa_os_open_read("/proc/self/comm");
    ssize_t n = fd >= 0 ? xa_os_read(fd, comm, sizeof comm - 1) : -1;
    if (fd >= 0)
        xa_os_close(fd);
    xa_os_exe_name(buf, len);
    while (n > 0 && (comm[n - 1] == '\n' || comm[n - 1] == '\0'))
        n--;
    /* comm is cut at 15 bytes: keep the executable's full name when comm
     * is just its prefix. */
    if (n > 0 && !(n == 15 && xa_strncmp(buf, comm, 15) == 0)) {
        comm[n] = '\0';
        xa_strlcpy(buf, comm, len);
    }
    return buf;
}

static void *map_scratch(size_t size)
{
    return xa_os_map_aligned(XA_ALIGN_UP(size, XA_OS_PAGE), XA_OS_PAGE);
}

static void unmap_scratch(void *p, size_t size)
{
    xa_os_unmap(p, XA_ALIGN_UP(size, XA_OS_PAGE));
}

static void fill_stats(struct xalloc_stats *s, uint64_t now)
{
    xa_stats_collect(s);
    s->size = (uint32_t)sizeof *s;
    s->version_major = XALLOC_STATS_VERSION_MAJOR;
    s->version_minor = XALLOC_STATS_VERSION_MINOR;
    if (s->timestamp_ns == 0)
        s->timestamp_ns = now;
}

static uint32_t fill_config(struct xalloc_stats_file_config *cfg)
{
    int n = xa_config_option_count();
    uint32_t k = 0;
    for (int i = 0; i < n && k < XALLOC_STATS_FILE_MAX_CONFIG; i++) {
        const char *name = NULL, *source = NULL, *doc = NULL;
        struct xalloc_stats_file_config *c = &cfg[k];
        c->value[0] = '\0';
        if (!xa_config_option_info(i, &name, c->value, sizeof c->value, &source, &doc))
            continue;
        xa_strlcpy(c->name, name ? name : "?", sizeof c->name);
        xa_strlcpy(c->source, source ? source : "?", sizeof c->source);
        k++;
    }
    return k;
}

/* ---- the file ---- */

/* Makes path exclusively. An existing entry is unlinked once and the
 * create retried: it is ours (a previous image of this pid after exec, or a
 * dead process's file whose pid we now have), and since the create never
 * follows a link, a planted symlink is removed, never written through. */
static int create_at(const char *path)
{
    int fd = xa_os_open_create_excl(path, 0600);
    if (fd == -EEXIST && xa_os_unlink(path) == 0)
        fd = xa_os_open_create_excl(path, 0600);
    return fd;
}

static int create_file(pid_t pid)
{
    if (xa_opt.stats_dir[0]) {
        xa_snprintf(st.path, sizeof st.path, "%s/" XALLOC_STATS_FILE_PREFIX "%d",
                    xa_opt.stats_dir, (int)pid);
        return create_at(st.path);
    }
    if (xa_os_dir_writable(XALLOC_STATS_FILE_RUN_DIR) == 0) {
        xa_snprintf(st.path, sizeof st.path, XALLOC_STATS_FILE_RUN_DIR "/%d", (int)pid);
        int fd = create_at(st.path);
        if (fd >= 0)
            return fd;
    }
    xa_snprintf(st.path, sizeof st.path,
                XALLOC_STATS_FILE_SHM_DIR "/" XALLOC_STATS_FILE_PREFIX "%d", (int)pid);
    return create_at(st.path);
}

static bool open_file(uint64_t now)
{
    pid_t pid = xa_os_getpid();
    size_t off = XA_ALIGN_UP(sizeof(struct xalloc_stats_file_header), 64);
    size_t size = XA_ALIGN_UP(off + sizeof(struct xalloc_stats), XA_OS_PAGE);

    if (!st.scratch) {
        st.scratch = map_scratch(sizeof *st.scratch);
        if (!st.scratch)
            return false;
    }
    int fd = create_file(pid);
    if (fd < 0) {
        if (xa_opt.verbose)
            xa_message("stats: cannot create %s (error %d); no live statistics",
                       st.path, -fd);
        return false;
    }
    struct xalloc_stats_file_header *h = NULL;
    if (xa_os_stats_fchmod(fd, 0600) == 0 && xa_os_ftruncate(fd, size) == 0)
        h = xa_os_map_file(fd, size, true);
    xa_os_close(fd);
    if (!h) {
        xa_os_unlink(st.path);
        return false;
    }
    /* The file is fresh (zero-filled): only non-zero fields are written.
     * seq stays 0 until the first publication, which readers wait for. */
    h->version_major = XALLOC_STATS_FILE_VERSION_MAJOR;
    h->version_minor = XALLOC_STATS_FILE_VERSION_MINOR;
    h->header_size = (uint32_t)sizeof *h;
    h->file_size = size;
    h->snapshot_offset = off;
    h->snapshot_size = sizeof(struct xalloc_stats);
    h->pid = (int32_t)pid;
    h->uid = (uint32_t)xa_os_geteuid();
    h->pidns_ino = xa_os_stats_pidns_ino();
    h->start_ticks = self_start_ticks();
    h->start_mono_ns = now;
    program_name(h->program, sizeof h->program);
    xa_strlcpy(h->library_version, STATS_LIB_VERSION, sizeof h->library_version);
    /* Magic last: a reader that sees it sees a complete header. */
    __atomic_store_n(&h->magic, XALLOC_STATS_FILE_MAGIC, __ATOMIC_RELEASE);
    st.map = h;
    st.map_size = size;
    st.pid = pid;
    return true;
}

/* Pre: busy held, st.map valid. */
static void publish(uint64_t now)
{
    struct xalloc_stats_file_header *h = st.map;
    struct stats_scratch *sc = st.scratch;
    fill_stats(&sc->stats, now);
    sc->config_count = fill_config(sc->config);

    xalloc_stats_file_write_begin(h);
    __builtin_memcpy(xalloc_stats_file_snapshot(h), &sc->stats, sizeof sc->stats);
    __builtin_memcpy(h->config, sc->config, sizeof sc->config);
    h->config_count = sc->config_count;
    h->publish_count++;
    h->publish_mono_ns = now;
    h->interval_ms = (uint64_t)xa_opt.stats_interval_ms;
    h->flags = __atomic_load_n(&st.thread_running, __ATOMIC_RELAXED) ? XALLOC_STATS_FILE_F_THREAD : 0;
    xalloc_stats_file_write_end(h);
    set_next_due(now + interval_ns());
}

int (*xa_stats_dump_hook)(char *msg, unsigned long cap);

/* Serves a pending request, if any. Pre: busy held, st.map valid.
 * Returns true when one was served. */
static bool serve_request(void)
{
    struct xalloc_stats_file_request *r = &st.map->request;
    uint32_t seq = __atomic_load_n(&r->seq, __ATOMIC_ACQUIRE);
    if (seq == __atomic_load_n(&r->ack_seq, __ATOMIC_RELAXED))
        return false;
    /* Copy what the client wrote before acting on it: the file is shared
     * and the client could change it under us. */
    uint32_t cmd = __atomic_load_n(&r->command, __ATOMIC_RELAXED);
    uint32_t uid = __atomic_load_n(&r->requester_uid, __ATOMIC_RELAXED);
    char arg[sizeof r->arg];
    __builtin_memcpy(arg, r->arg, sizeof arg);
    arg[sizeof arg - 1] = '\0';
    char msg[sizeof r->message];
    int status = 0;
    uint64_t result = 0;
    uid_t euid = xa_os_geteuid();
    msg[0] = '\0';

    if (uid != 0 && uid != (uint32_t)euid) {
        /* The 0600 file already keeps others out; this is the second lock. */
        status = EPERM;
        xa_snprintf(msg, sizeof msg, "refused: uid %u is neither the owner (uid %u) nor root",
                    uid, (unsigned)euid);
    } else if (cmd == XALLOC_STATS_CMD_PURGE) {
        result = xalloc_purge();
        char b[32];
        xa_snprintf(msg, sizeof msg, "purged %llu bytes (%s)", (unsigned long long)result,
                    xa_stats_report_bytes(b, result));
    } else if (cmd == XALLOC_STATS_CMD_SET) {
        char why[sizeof msg];
        why[0] = '\0';
        if (xalloc_config_set(arg, why, sizeof why) == 0) {
            xa_snprintf(msg, sizeof msg, "set %s", arg);
        } else {
            status = EINVAL;
            xa_snprintf(msg, sizeof msg, "%s", why[0] ? why : "rejected");
        }
    } else if (cmd == XALLOC_STATS_CMD_DUMP) {
        if (xa_stats_dump_hook) {
            status = xa_stats_dump_hook(msg, sizeof msg);
        } else {
            status = ENOTSUP;
            xa_strlcpy(msg, "no profiler in this library: preload libxalloc-prof.so.1 with prof:true",
                       sizeof msg);
        }
    } else if (cmd == XALLOC_STATS_CMD_PUBLISH) {
        xa_strlcpy(msg, "published", sizeof msg);
    } else {
        status = EINVAL;
        xa_snprintf(msg, sizeof msg, "unknown command %u", cmd);
    }
    uint64_t now = xa_os_now_ns();
    /* Refresh before acknowledging, so the client reads the new state. */
    publish(now);
    r->status = status;
    r->result = result;
    r->served_ns = now;
    __builtin_memcpy(r->message, msg, sizeof msg);
    __atomic_store_n(&r->ack_seq, seq, __ATOMIC_RELEASE);
    xa_os_stats_futex_wake(&r->ack_seq);
    return true;
}

/* ---- serving thread ---- */

static void *stats_thread(void *arg)
{
    (void)arg;
    for (;;) {
        struct xalloc_stats_file_header *h = __atomic_load_n(&st.map, __ATOMIC_ACQUIRE);
        if (!h || __atomic_load_n(&st.mode, __ATOMIC_ACQUIRE) != STATS_OPEN)
            break;
        struct xalloc_stats_file_request *r = &h->request;
        uint32_t seq = __atomic_load_n(&r->seq, __ATOMIC_ACQUIRE);
        /* Requests wake the futex at once. The timeout is capped so that
         * a shorter stats_interval_ms set from inside the program (which
         * does not wake us) takes effect within a quarter second. */
        uint64_t now = xa_os_now_ns();
        uint64_t due = __atomic_load_n(&st.next_due, __ATOMIC_RELAXED);
        uint64_t wait = due > now ? due - now : 0;
        wait = XA_MIN(wait, XA_MIN(interval_ns(), STATS_MAX_SLEEP_NS));
        if (wait && seq == __atomic_load_n(&r->ack_seq, __ATOMIC_ACQUIRE))
            (void)xa_os_stats_futex_wait(&r->seq, seq, wait);
        if (!busy_try()) {
            /* A tick is publishing; it takes microseconds. */
            xa_os_sleep_ns(1000000);
            continue;
        }
        if (st.mode != STATS_OPEN || st.map != h) {
            busy_release();
            break;
        }
        now = xa_os_now_ns();
        /* Due: the deadline passed, or the interval shrank below it. */
        due = __atomic_load_n(&st.next_due, __ATOMIC_RELAXED);
        if (!serve_request() && (now >= due || due - now > interval_ns()))
            publish(now);
        busy_release();
    }
    __atomic_store_n(&st.thread_running, 0, __ATOMIC_RELEASE);
    return NULL;
}

static void start_thread(void)
{
    if (__atomic_load_n(&st.thread_running, __ATOMIC_ACQUIRE) || st.thread_failed)
        return;
    __atomic_store_n(&st.thread_running, 1, __ATOMIC_RELEASE);
    int rc = xa_os_stats_thread_start(stats_thread, NULL, "xalloc-stats");
    if (rc != 0) {
        __atomic_store_n(&st.thread_running, 0, __ATOMIC_RELEASE);
        st.thread_failed = 1;
        if (xa_opt.verbose)
            xa_message("stats: no serving thread (error %d); refreshing on slow paths only", rc);
    }
}

/* ---- hooks called by the core ---- */

void xa_stats_boot(void)
{
    st.booted = 1;
    if (!xa_opt.stats) {
        set_next_due(UINT64_MAX);
        return;
    }
    st.mode = STATS_BOOTED;
    set_next_due(0); /* the first tick makes the file */
}

static XA_SLOW_PATH void tick_slow(uint64_t now_ns)
{
    if (!busy_try())
        return; /* another publisher, or re-entry from inside a refresh */
    /* Push the deadline first: whatever happens below, the following
     * ticks stay on the cheap path. */
    set_next_due(now_ns + interval_ns());
    bool start = false;
    if (st.fork_pending) {
        /* The parent's mapping is inherited; drop it without touching the
         * parent's file. */
        if (st.map)
            xa_os_unmap(st.map, st.map_size);
        st.map = NULL;
        st.fork_pending = 0;
        st.mode = STATS_BOOTED;
    }
    if (st.mode == STATS_BOOTED) {
        if (open_file(now_ns)) {
            __atomic_store_n(&st.mode, STATS_OPEN, __ATOMIC_RELEASE);
        } else {
            st.mode = STATS_FAILED;
            set_next_due(UINT64_MAX);
        }
    }
    if (st.mode == STATS_OPEN) {
        if (!serve_request())
            publish(now_ns);
        start = !__atomic_load_n(&st.thread_running, __ATOMIC_ACQUIRE);
    }
    busy_release();
    /* Outside busy: pthread_create allocates, and that may tick. */
    if (start)
        start_thread();
}

void xa_stats_tick(uint64_t now_ns)
{
    if (xa_likely(now_ns < __atomic_load_n(&st.next_due, __ATOMIC_RELAXED)))
        return;
    tick_slow(now_ns);
}

void xa_stats_fork_child(void)
{
    /* The child is single-threaded here: plain stores are enough. The
     * parent's thread, and any busy flag it held, did not survive fork. */
    st.busy = 0;
    st.thread_running = 0;
    st.thread_failed = 0;
    if (st.mode == STATS_OPEN || st.mode == STATS_BOOTED) {
        st.fork_pending = 1;
        st.mode = STATS_BOOTED;
        set_next_due(0);
    }
}

/* ---- exit ---- */

static void stderr_line(void *arg, const char *line)
{
    (void)arg;
    xa_os_write_stderr(line, xa_strlen(line));
}

__attribute__((destructor)) static void stats_fini(void)
{
    if (!st.booted)
        return;
    if (xa_opt.stats_print)
        xalloc_stats_print(NULL, NULL);
    if (st.mode != STATS_OPEN || st.fork_pending || st.pid != xa_os_getpid())
        return;
    /* Wait (bounded) for a publication in flight, then close for good:
     * later ticks (atexit handlers and other destructors still allocate)
     * see STATS_CLOSED and stay cheap. */
    bool held = false;
    for (int i = 0; i < 200 && !(held = busy_try()); i++)
        xa_os_sleep_ns(500000);
    __atomic_store_n(&st.mode, STATS_CLOSED, __ATOMIC_RELEASE);
    set_next_due(UINT64_MAX);
    xa_os_unlink(st.path);
    /* The mapping stays: the thread may still be asleep on its futex. */
    if (held)
        busy_release();
}

/* ---- public API ---- */

XA_EXPORT int xalloc_stats_get(struct xalloc_stats *out)
{
    if (!out)
        return -1;
    fill_stats(out, xa_os_now_ns());
    return 0;
}

XA_EXPORT void xalloc_stats_print(void (*write)(void *arg, const char *line), void *arg)
{
    struct stats_scratch *sc = map_scratch(sizeof *sc);
    if (!write)
        write = stderr_line;
    if (!sc) {
        write(arg, "xalloc: statistics unavailable: out of memory\n");
        return;
    }
    uint64_t now = xa_os_now_ns();
    fill_stats(&sc->stats, now);
    sc->config_count = fill_config(sc->config);
    char program[64];
    struct xa_report_info info = {
        .pid = (long)xa_os_getpid(),
        .program = program_name(program, sizeof program),
        .library_version = STATS_LIB_VERSION,
        .age_ns = UINT64_MAX,
        .config = sc->config,
        .config_count = sc->config_count,
    };
    xa_stats_report_emit(&sc->stats, &info, XA_REPORT_TEXT, write, arg);
    unmap_scratch(sc, sizeof *sc);
}
