/* stats.c: publishes the process's statistics in a shared-memory file for
 * xalloc-stat, serves the file's request area (purge, set, dump), and
 * implements xalloc_stats_get() and xalloc_stats_print(). Side module
 * (stats).
 *
 * The file is a sealed memfd (os_stats.c), so it dies with the process;
 * see src/README.md, "Statistics file". Anyone who can open it can write
 * it, so the process never trusts what it reads back: the layout (sizes,
 * offsets), the sequence number and the counters are private copies here,
 * the constant header is rewritten at every publication, and a request is
 * copied out, validated and answered without any size or pointer taken
 * from the file.
 *
 * Calls: xa_stats_collect (core), xalloc_config_set and xa_config_option_*
 * (config), xa_stats_purge_hook (xalloc_purge, set by init), os, os_stats,
 * util, stats_report.
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
#include "numa.h"
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
    STATS_CLOSED = 4, /* closed at exit */
};

/* Our own copy of the layout: nothing of it is read from the file. */
#define STATS_SNAPSHOT_OFFSET XA_ALIGN_UP(sizeof(struct xalloc_stats_file_header), 64)
#define STATS_FILE_SIZE XA_ALIGN_UP(STATS_SNAPSHOT_OFFSET + sizeof(struct xalloc_stats), XA_OS_PAGE)
#define STATS_IDENT_SIZE offsetof(struct xalloc_stats_file_header, seq)

/* The descriptor is moved up here, out of the way of programs that expect
 * small numbers (dup2 onto 3, closing 3..N before exec of a helper), but
 * inside the 64 descriptors every process's table starts with: a move
 * past them grows the table, and growing the table of a process with
 * threads waits out an RCU grace period (20 ms measured) inside the
 * malloc that made the file, the first slow path of the process. With
 * 100 it did so in every program whose first allocation came from a
 * thread and whose parent closed its descriptors (a Python launcher). */
#define STATS_MIN_FD 48

/* Least time between two requests served: a client that rewrites the
 * request area in a loop gets at most this rate of work out of us. */
#define STATS_REQUEST_GAP_NS 1000000u

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
    int thread_running;  /* atomic */
    int thread_failed;   /* do not retry pthread_create on every tick */
    pid_t pid;           /* the process that owns the file */
    int fd;              /* the memfd, -1 when none */
    struct xa_os_stats_fileid id; /* what fd must still be */
    struct xalloc_stats_file_header *map; /* STATS_FILE_SIZE bytes */
    struct stats_scratch *scratch;
    uint64_t seq;        /* private sequence number (even when idle) */
    uint64_t publish_count;
    uint64_t served, ignored; /* requests acted on / not */
    uint64_t last_request_ns;
    /* The constant part of the header, rewritten at every publication so
     * that a scribbled file heals itself. */
    union {
        struct xalloc_stats_file_header h;
        char bytes[sizeof(struct xalloc_stats_file_header)];
    } *ident;
} st = {.fd = -1};

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
    /* What the numa option made of this machine: the mode in effect, the
     * nodes arenas live on, the allowed and online nodes, libnuma. */
    if (k < XALLOC_STATS_FILE_MAX_CONFIG) {
        struct xalloc_stats_file_config *c = &cfg[k++];
        xa_strlcpy(c->name, "numa_nodes", sizeof c->name);
        xa_numa_describe(c->value, sizeof c->value);
        xa_strlcpy(c->source, "detected", sizeof c->source);
    }
    return k;
}

/* ---- the file ---- */

static void fill_ident(struct xalloc_stats_file_header *h, pid_t pid, uint64_t now)
{
    h->magic = XALLOC_STATS_FILE_MAGIC;
    h->version_major = XALLOC_STATS_FILE_VERSION_MAJOR;
    h->version_minor = XALLOC_STATS_FILE_VERSION_MINOR;
    h->header_size = (uint32_t)sizeof *h;
    h->file_size = STATS_FILE_SIZE;
    h->snapshot_offset = STATS_SNAPSHOT_OFFSET;
    h->snapshot_size = sizeof(struct xalloc_stats);
    h->pid = (int32_t)pid;
    h->uid = (uint32_t)xa_os_geteuid();
    h->pidns_ino = xa_os_stats_pidns_ino();
    h->start_ticks = self_start_ticks();
    h->start_mono_ns = now;
    program_name(h->program, sizeof h->program);
    xa_strlcpy(h->library_version, STATS_LIB_VERSION, sizeof h->library_version);
}

/* Writes the constant header from our copy; magic last, so a reader that
 * sees it sees a complete header. */
static void write_ident(struct xalloc_stats_file_header *h)
{
    const struct xalloc_stats_file_header *c = &st.ident->h;
    __atomic_store_n(&h->magic, 0, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    __builtin_memcpy((char *)h + sizeof h->magic, (const char *)c + sizeof c->magic,
                     STATS_IDENT_SIZE - sizeof h->magic);
    __atomic_store_n(&h->magic, c->magic, __ATOMIC_RELEASE);
}

static bool open_file(uint64_t now)
{
    st.served = st.ignored = 0;
    pid_t pid = xa_os_getpid();
    if (!st.scratch) {
        st.scratch = map_scratch(sizeof *st.scratch);
        if (!st.scratch)
            return false;
    }
    if (!st.ident) {
        st.ident = map_scratch(sizeof *st.ident);
        if (!st.ident)
            return false;
    }
    int fd = xa_os_stats_memfd(XALLOC_STATS_FILE_MEMFD_NAME, STATS_FILE_SIZE, STATS_MIN_FD, &st.id);
    if (fd < 0) {
        if (xa_opt.verbose)
            xa_message("stats: cannot create the statistics memory file (error %d); "
                       "no live statistics", -fd);
        return false;
    }
    struct xalloc_stats_file_header *h = xa_os_stats_map(fd, STATS_FILE_SIZE, NULL);
    if (!h) {
        xa_os_close(fd);
        if (xa_opt.verbose)
            xa_message("stats: cannot map the statistics memory file; no live statistics");
        return false;
    }
    fill_ident(&st.ident->h, pid, now);
    /* The file is fresh (zero-filled). seq stays 0 until the first
     * publication, which readers wait for. */
    write_ident(h);
    st.seq = 0;
    st.publish_count = 0;
    st.fd = fd;
    st.map = h;
    st.pid = pid;
    return true;
}

/* The program may have closed our descriptor (daemons close 3..N; a dup2
 * may land on it): readers could no longer find the file. Make a new one
 * and put it in place of the old mapping, at the same address, so the
 * serving thread's pointer stays valid. The old descriptor number is not
 * ours any more and is left alone. Pre: busy held, st.map valid. */
static void check_fd(void)
{
    if (xa_os_stats_fd_is(st.fd, &st.id))
        return;
    struct xa_os_stats_fileid id;
    int fd = xa_os_stats_memfd(XALLOC_STATS_FILE_MEMFD_NAME, STATS_FILE_SIZE, STATS_MIN_FD, &id);
    if (fd < 0)
        return; /* keep publishing into the old mapping; retried next time */
    void *tmp = xa_os_stats_map(fd, STATS_FILE_SIZE, NULL);
    if (tmp) {
        __builtin_memcpy(tmp, st.map, STATS_FILE_SIZE);
        if (xa_os_stats_map(fd, STATS_FILE_SIZE, st.map)) {
            st.fd = fd;
            st.id = id;
            fd = -1;
        }
        xa_os_unmap(tmp, STATS_FILE_SIZE);
    }
    if (fd >= 0)
        xa_os_close(fd);
}

/* Pre: busy held, st.map valid. */
static void publish(uint64_t now)
{
    check_fd();
    struct xalloc_stats_file_header *h = st.map;
    struct stats_scratch *sc = st.scratch;
    fill_stats(&sc->stats, now);
    sc->config_count = fill_config(sc->config);

    write_ident(h);
    /* The sequence lock, from our own counter: the file's seq may have
     * been scribbled on, and a reader only needs to see it change. */
    __atomic_store_n(&h->seq, ++st.seq | 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    /* The entries in use only: the file's others stay zero, and untouched
     * (a 52 KiB file then keeps about four resident pages). */
    struct xalloc_stats *fs = (struct xalloc_stats *)((char *)h + STATS_SNAPSHOT_OFFSET);
    __builtin_memcpy(fs, &sc->stats, offsetof(struct xalloc_stats, arenas));
    __builtin_memcpy(fs->arenas, sc->stats.arenas,
                     sc->stats.arenas_count * sizeof sc->stats.arenas[0]);
    __builtin_memcpy(fs->classes, sc->stats.classes, sizeof sc->stats.classes);
    __builtin_memcpy(h->config, sc->config, sizeof sc->config);
    h->config_count = sc->config_count;
    h->publish_count = ++st.publish_count;
    h->publish_mono_ns = now;
    h->interval_ms = (uint64_t)xa_opt.stats_interval_ms;
    h->flags = __atomic_load_n(&st.thread_running, __ATOMIC_RELAXED) ? XALLOC_STATS_FILE_F_THREAD : 0;
    h->requests_served = st.served;
    h->requests_ignored = st.ignored;
    st.seq = (st.seq | 1) + 1;
    __atomic_store_n(&h->seq, st.seq, __ATOMIC_RELEASE);
    /* The scratch is only needed during a publication: between two (a
     * second apart by default) its pages go back, a few page faults a
     * second against 20 KiB resident in every process. */
    (void)xa_os_purge_dontneed(sc, XA_ALIGN_UP(sizeof *sc, XA_OS_PAGE));
    set_next_due(now + interval_ns());
}

int (*xa_stats_dump_hook)(char *msg, unsigned long cap);
size_t (*xa_stats_purge_hook)(void);

/* True if arg is a "key:value" list of printable ASCII: everything else is
 * refused before the option parser sees it. */
static bool arg_printable(const char *arg)
{
    if (!arg[0])
        return false;
    for (const char *p = arg; *p; p++)
        if (*p < 0x20 || *p > 0x7e)
            return false;
    return true;
}

/* Serves a pending request, if any. Pre: busy held, st.map valid.
 * Everything is copied out of the shared area first and validated; only
 * fixed-size fields at our own offsets are written back. Returns true when
 * a request was answered. */
static bool serve_request(void)
{
    struct xalloc_stats_file_request *r = &st.map->request;
    uint32_t seq = __atomic_load_n(&r->seq, __ATOMIC_ACQUIRE);
    if (seq == __atomic_load_n(&r->ack_seq, __ATOMIC_RELAXED))
        return false;
    uint32_t cmd = __atomic_load_n(&r->command, __ATOMIC_RELAXED);
    uint32_t uid = __atomic_load_n(&r->requester_uid, __ATOMIC_RELAXED);
    char arg[sizeof r->arg];
    __builtin_memcpy(arg, r->arg, sizeof arg);
    arg[sizeof arg - 1] = '\0';
    char msg[sizeof r->message];
    int status = 0;
    uint64_t result = 0;
    uid_t euid = xa_os_geteuid();
    bool acted = false;
    msg[0] = '\0';

    if (uid != 0 && uid != (uint32_t)euid) {
        /* The kernel already keeps others out (0600, /proc/PID/fd needs
         * ptrace access); this is the second lock. */
        status = EPERM;
        xa_snprintf(msg, sizeof msg, "refused: uid %u is neither the owner (uid %u) nor root",
                    uid, (unsigned)euid);
    } else if (cmd == XALLOC_STATS_CMD_PURGE) {
        result = xa_stats_purge_hook ? xa_stats_purge_hook() : 0;
        char b[32];
        xa_snprintf(msg, sizeof msg, "purged %llu bytes (%s)", (unsigned long long)result,
                    xa_stats_report_bytes(b, result));
        acted = true;
    } else if (cmd == XALLOC_STATS_CMD_SET) {
        char why[sizeof msg];
        why[0] = '\0';
        /* xalloc_config_set() accepts only run-time options, within their
         * ranges, all or nothing. */
        if (!arg_printable(arg)) {
            status = EINVAL;
            xa_strlcpy(msg, "refused: the argument is empty or not printable ASCII", sizeof msg);
        } else if (xalloc_config_set(arg, why, sizeof why) == 0) {
            xa_snprintf(msg, sizeof msg, "set %s", arg);
            acted = true;
        } else {
            status = EINVAL;
            xa_snprintf(msg, sizeof msg, "%s", why[0] ? why : "rejected");
        }
    } else if (cmd == XALLOC_STATS_CMD_DUMP) {
        int (*hook)(char *, unsigned long) = __atomic_load_n(&xa_stats_dump_hook, __ATOMIC_ACQUIRE);
        if (hook) {
            status = hook(msg, sizeof msg);
            msg[sizeof msg - 1] = '\0';
            acted = status == 0;
        } else {
            status = ENOTSUP;
            xa_strlcpy(msg, "no profiler in this library: preload libxalloc-prof.so.1 with prof:true",
                       sizeof msg);
        }
    } else if (cmd == XALLOC_STATS_CMD_PUBLISH) {
        xa_strlcpy(msg, "published", sizeof msg);
        acted = true;
    } else {
        status = EINVAL;
        xa_snprintf(msg, sizeof msg, "unknown command %u", cmd);
    }
    if (acted)
        st.served++;
    else
        st.ignored++;
    uint64_t now = xa_os_now_ns();
    st.last_request_ns = now;
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
    xa_os_set_thread_name("xalloc-stats");
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
        bool served = serve_request();
        if (!served && (now >= due || due - now > interval_ns()))
            publish(now);
        busy_release();
        if (served)
            xa_os_sleep_ns(STATS_REQUEST_GAP_NS);
    }
    __atomic_store_n(&st.thread_running, 0, __ATOMIC_RELEASE);
    return NULL;
}

static void start_thread(void)
{
    if (__atomic_load_n(&st.thread_running, __ATOMIC_ACQUIRE) || st.thread_failed)
        return;
    __atomic_store_n(&st.thread_running, 1, __ATOMIC_RELEASE);
    int rc = xa_os_stats_thread_start(stats_thread, NULL);
    if (rc == 0)
        set_next_due(0); /* republish at once: readers learn there is a thread */
    if (rc != 0) {
        __atomic_store_n(&st.thread_running, 0, __ATOMIC_RELEASE);
        st.thread_failed = 1;
        if (xa_opt.verbose)
            xa_message("stats: no serving thread (error %d); refreshing on slow paths only", rc);
    }
}

/* ---- hooks called by the core ---- */

/* In a child: forgets the parent's file (mapping and descriptor). */
static void drop_inherited(void)
{
    if (st.map)
        xa_os_unmap(st.map, STATS_FILE_SIZE);
    st.map = NULL;
    if (st.fd >= 0 && xa_os_stats_fd_is(st.fd, &st.id))
        xa_os_close(st.fd);
    st.fd = -1;
}

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
    if (st.mode == STATS_OPEN && st.pid != xa_os_getpid()) {
        /* A child made by a raw fork or clone, which ran no atfork
         * handler: the mapping and descriptor are the parent's. */
        drop_inherited();
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
     * parent's thread, and any busy flag it held, did not survive fork.
     * The parent's file is dropped at once, so the child never shows it
     * in /proc/PID/fd nor keeps it alive after the parent has gone; the
     * child's own file is made at its next tick. */
    st.busy = 0;
    st.thread_running = 0;
    st.thread_failed = 0;
    if (st.mode == STATS_OPEN || st.mode == STATS_BOOTED) {
        drop_inherited();
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
    if (st.mode != STATS_OPEN || st.pid != xa_os_getpid())
        return;
    /* Wait (bounded) for a publication in flight, then close for good:
     * later ticks (atexit handlers and other destructors still allocate)
     * see STATS_CLOSED and stay cheap. */
    bool held = false;
    for (int i = 0; i < 200 && !(held = busy_try()); i++)
        xa_os_sleep_ns(500000);
    __atomic_store_n(&st.mode, STATS_CLOSED, __ATOMIC_RELEASE);
    set_next_due(UINT64_MAX);
    /* Readers stop finding the file now; the memory goes with the
     * process. The mapping stays: the thread may still be asleep on its
     * futex. */
    if (st.fd >= 0 && xa_os_stats_fd_is(st.fd, &st.id))
        xa_os_close(st.fd);
    st.fd = -1;
    if (held)
        busy_release();
}

/* ---- public API ---- */

XA_EXPORT int xalloc_stats_get(struct xalloc_stats *out)
{
    if (!out)
        return -1;
    __builtin_memset(out, 0, sizeof *out); /* the arena entries not in use too */
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
