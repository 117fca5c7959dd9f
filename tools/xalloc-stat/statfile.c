/* statfile.c: finding, validating and reading xalloc statistics files of
 * other processes, and the client side of the request protocol. See
 * statfile.h. A file is looked for in the target's own mount namespace
 * (/proc/PID/root/...) under the pid the target has in its own pid
 * namespace (NSpid), so processes in containers are found from the host. */
#define _GNU_SOURCE
#include "statfile.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

uint64_t xs_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

static void say(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void say(char *buf, size_t len, const char *fmt, ...)
{
    if (!buf || !len)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, len, fmt, ap);
    va_end(ap);
}

static const char *user_name(uid_t uid, char *buf, size_t len)
{
    struct passwd *pw = getpwuid(uid);
    if (pw)
        snprintf(buf, len, "%s", pw->pw_name);
    else
        snprintf(buf, len, "uid %u", (unsigned)uid);
    return buf;
}

/* Reads a small /proc file into buf; returns length or -errno. */
static ssize_t read_small(const char *path, char *buf, size_t len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    size_t done = 0;
    while (done + 1 < len) {
        ssize_t n = read(fd, buf + done, len - 1 - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        done += (size_t)n;
    }
    close(fd);
    buf[done] = '\0';
    return (ssize_t)done;
}

static bool process_exists(long pid)
{
    char path[64];
    struct stat sb;
    snprintf(path, sizeof path, "/proc/%ld", pid);
    return stat(path, &sb) == 0;
}

/* Field 22 of /proc/PID/stat: start time in clock ticks after boot. */
static uint64_t start_ticks(long pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    if (read_small(path, buf, sizeof buf) <= 0)
        return 0;
    char *p = strrchr(buf, ')');
    if (!p)
        return 0;
    p++;
    for (int field = 2; field < 22 && *p; p++)
        if (*p == ' ')
            field++;
    return strtoull(p, NULL, 10);
}

uint64_t xs_uptime_ns(long pid)
{
    char buf[128];
    uint64_t st = start_ticks(pid);
    long hz = sysconf(_SC_CLK_TCK);
    if (!st || hz <= 0 || read_small("/proc/uptime", buf, sizeof buf) <= 0)
        return 0;
    double up = strtod(buf, NULL) - (double)st / (double)hz;
    return up > 0 ? (uint64_t)(up * 1e9) : 0;
}

bool xs_service(long pid, char *buf, size_t len)
{
    char path[64], cg[4096];
    snprintf(path, sizeof path, "/proc/%ld/cgroup", pid);
    if (read_small(path, cg, sizeof cg) <= 0)
        return false;
    /* cgroup v2 ("0::/system.slice/x.service") first, then v1's
     * name=systemd hierarchy: the unit is the last component that ends in
     * .service or .scope (a service may make sub-cgroups below it). */
    const char *best = NULL;
    size_t best_len = 0;
    for (int pass = 0; pass < 2 && !best; pass++) {
        for (char *line = cg; line && *line;) {
            char *nl = strchr(line, '\n');
            size_t ll = nl ? (size_t)(nl - line) : strlen(line);
            bool want = pass == 0 ? strncmp(line, "0::", 3) == 0
                                  : memmem(line, ll, ":name=systemd:", 14) != NULL;
            const char *p = memchr(line, '/', ll);
            while (want && p && p < line + ll) {
                const char *comp = p + 1, *end = memchr(comp, '/', (size_t)(line + ll - comp));
                if (!end)
                    end = line + ll;
                size_t cl = (size_t)(end - comp);
                if ((cl > 8 && memcmp(end - 8, ".service", 8) == 0) ||
                    (cl > 6 && memcmp(end - 6, ".scope", 6) == 0))
                    best = comp, best_len = cl;
                p = end < line + ll ? end : NULL;
            }
            line = nl ? nl + 1 : NULL;
        }
    }
    if (!best || best_len + 1 > len)
        return false;
    memcpy(buf, best, best_len);
    buf[best_len] = '\0';
    return true;
}

static uint64_t own_pidns(void)
{
    struct stat sb;
    return stat("/proc/self/ns/pid", &sb) == 0 ? (uint64_t)sb.st_ino : 0;
}

/* The pid the process has in its own (innermost) pid namespace. */
static long ns_pid_of(long pid)
{
    char path[64], buf[4096];
    snprintf(path, sizeof path, "/proc/%ld/status", pid);
    if (read_small(path, buf, sizeof buf) <= 0)
        return pid;
    char *line = strstr(buf, "\nNSpid:");
    if (!line)
        return pid;
    line += 7;
    long last = pid;
    char *end;
    for (;;) {
        long v = strtol(line, &end, 10);
        if (end == line)
            break;
        last = v;
        line = end;
        if (*line == '\n')
            break;
    }
    return last;
}

static const char *program_of(long pid, char *buf, size_t len)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/comm", pid);
    if (read_small(path, buf, len) <= 0)
        return "?";
    buf[strcspn(buf, "\n")] = '\0';
    return buf;
}

/* 1: libxalloc is mapped in pid; 0: not; -errno: maps unreadable. */
static int maps_xalloc(long pid)
{
    char path[64], line[4096];
    snprintf(path, sizeof path, "/proc/%ld/maps", pid);
    FILE *fp = fopen(path, "re");
    if (!fp)
        return -errno;
    int found = 0, lines = 0;
    while (fgets(line, sizeof line, fp)) {
        lines++;
        if (strstr(line, "/libxalloc"))
            found = 1;
    }
    int err = ferror(fp) ? errno : 0;
    fclose(fp);
    /* Reading another user's maps can "succeed" with nothing in it. */
    if (!found && lines == 0)
        return err ? -err : -EACCES;
    return found;
}

/* ---- opening one file ---- */

/* Reads exactly len bytes at off; false on a short read (a file cut short
 * under us) or an error. */
static bool pread_all(int fd, void *buf, size_t len, size_t off)
{
    size_t done = 0;
    while (done < len) {
        ssize_t n = pread(fd, (char *)buf + done, len - done, (off_t)(off + done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        done += (size_t)n;
    }
    return true;
}

/* Takes fd (closed on failure). */
static enum xs_status open_fd(int fd, const char *path, bool writable, struct xs_file *f,
                              char *err, size_t err_len)
{
    struct stat sb;
    f->fd = fd;
    snprintf(f->path, sizeof f->path, "%s", path);
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        say(err, err_len, "%s is not a regular file", path);
        xs_close(f);
        return XS_ERROR;
    }
    f->size = (size_t)sb.st_size;
    if (f->size < sizeof(struct xalloc_stats_file_header)) {
        say(err, err_len, "%s is not an xalloc statistics file (%lld bytes)", path,
            (long long)sb.st_size);
        xs_close(f);
        return XS_ERROR;
    }
    /* A file made this instant may not have its magic yet: wait briefly. */
    struct xalloc_stats_file_header *h = &f->ident;
    for (int i = 0; i < 100; i++) {
        if (!pread_all(fd, h, sizeof *h, 0)) {
            say(err, err_len, "%s: cannot read the header: %s", path,
                errno ? strerror(errno) : "file too short");
            xs_close(f);
            return XS_ERROR;
        }
        if (h->magic)
            break;
        sleep_ms(10);
    }
    h->program[sizeof h->program - 1] = '\0';
    h->library_version[sizeof h->library_version - 1] = '\0';
    if (h->magic != XALLOC_STATS_FILE_MAGIC) {
        say(err, err_len, "%s is not an xalloc statistics file (bad magic)", path);
        xs_close(f);
        return XS_ERROR;
    }
    if (h->version_major != XALLOC_STATS_FILE_VERSION_MAJOR) {
        say(err, err_len,
            "%s: incompatible statistics format %u.%u (written by xalloc %.16s); "
            "this xalloc-stat reads format %u.x (format %u.%u)",
            path, h->version_major, h->version_minor, h->library_version,
            XALLOC_STATS_FILE_VERSION_MAJOR, XALLOC_STATS_FILE_VERSION_MAJOR,
            XALLOC_STATS_FILE_VERSION_MINOR);
        xs_close(f);
        return XS_VERSION;
    }
    if (h->header_size > f->size || h->header_size < offsetof(struct xalloc_stats_file_header, request) ||
        h->snapshot_offset > f->size || h->snapshot_size > f->size - h->snapshot_offset ||
        h->snapshot_size < offsetof(struct xalloc_stats, arenas)) {
        say(err, err_len, "%s: malformed statistics file (sizes do not fit)", path);
        xs_close(f);
        return XS_ERROR;
    }
    /* The layout, once: later reads never look at these fields again. */
    f->hsize = h->header_size < sizeof f->ident ? h->header_size : sizeof f->ident;
    f->soff = h->snapshot_offset;
    f->ssize = h->snapshot_size < sizeof(struct xalloc_stats) ? h->snapshot_size
                                                             : sizeof(struct xalloc_stats);
    if (writable) {
        /* The request area needs shared atomics. A memory file is sealed
         * against resizing, so the mapping cannot fault. */
        void *p = mmap(NULL, f->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED) {
            say(err, err_len, "cannot map %s: %s", path, strerror(errno));
            xs_close(f);
            return XS_ERROR;
        }
        f->h = p;
    }
    f->writable = writable;
    return XS_OK;
}

static enum xs_status open_path(const char *path, bool writable, bool follow, struct xs_file *f,
                                char *err, size_t err_len)
{
    memset(f, 0, sizeof *f);
    f->fd = -1;
    int fd = open(path, (writable ? O_RDWR : O_RDONLY) | (follow ? 0 : O_NOFOLLOW) | O_CLOEXEC |
                            O_NONBLOCK);
    if (fd < 0) {
        int e = errno;
        if (e == EACCES || e == EPERM) {
            struct stat sb;
            char who[64];
            if (stat(path, &sb) == 0)
                say(err, err_len,
                    "permission denied: %s belongs to %s (mode %04o); only its owner "
                    "or root may %s it",
                    path, user_name(sb.st_uid, who, sizeof who), (unsigned)(sb.st_mode & 07777),
                    writable ? "send requests through" : "read");
            else
                say(err, err_len, "permission denied: %s", path);
            return XS_PERM;
        }
        if (e == ELOOP) {
            say(err, err_len, "%s is a symbolic link; not followed", path);
            return XS_ERROR;
        }
        say(err, err_len, "cannot open %s: %s", path, strerror(e));
        return e == ENOENT ? XS_NOT_XALLOC : XS_ERROR;
    }
    return open_fd(fd, path, writable, f, err, err_len);
}

enum xs_status xs_open_path(const char *path, bool writable, struct xs_file *f,
                            char *err, size_t err_len)
{
    return open_path(path, writable, false, f, err, err_len);
}

enum xs_status xs_open_file(const char *path, bool writable, struct xs_file *f,
                            char *err, size_t err_len)
{
    return open_path(path, writable, true, f, err, err_len);
}

void xs_close(struct xs_file *f)
{
    if (f->h)
        munmap(f->h, f->size);
    f->h = NULL;
    if (f->fd >= 0)
        close(f->fd);
    f->fd = -1;
}

/* Stale: the file names a process that no longer exists (or whose pid was
 * reused), as far as the caller's pid namespace can tell. */
static bool file_is_stale(const struct xalloc_stats_file_header *h, long host_pid)
{
    uint64_t ns = own_pidns();
    if (host_pid <= 0) {
        /* Found by name only: judge only files of our own namespace. */
        if (!h->pidns_ino || h->pidns_ino != ns)
            return false;
        host_pid = h->pid;
    }
    if (!process_exists(host_pid))
        return true;
    uint64_t st = start_ticks(host_pid);
    return h->start_ticks && st && h->start_ticks != st;
}

/* ---- finding a process's file ---- */

/* The process's memory file: the descriptor in /proc/PID/fd whose link
 * reads "/memfd:xalloc-stats (deleted)" and whose header names the process
 * (a fork child may hold its parent's for an instant). The kernel checks
 * access: the process's own user if it is dumpable, else root only.
 * Returns XS_NOT_XALLOC when there is none. */
static enum xs_status open_memfd(long pid, long nspid, bool writable, struct xs_file *f,
                                 char *err, size_t err_len)
{
    static const char want[] = "/memfd:" XALLOC_STATS_FILE_MEMFD_NAME " (deleted)";
    char dir[64], prog[64];
    snprintf(dir, sizeof dir, "/proc/%ld/fd", pid);
    DIR *d = opendir(dir);
    if (!d) {
        if (errno == EACCES || errno == EPERM) {
            struct stat sb;
            char who[64];
            char path[64];
            snprintf(path, sizeof path, "/proc/%ld", pid);
            if (stat(path, &sb) == 0 && sb.st_uid != geteuid())
                say(err, err_len,
                    "pid %ld (%s): permission denied: the process belongs to %s; only its "
                    "owner or root may read its statistics",
                    pid, program_of(pid, prog, sizeof prog), user_name(sb.st_uid, who, sizeof who));
            else
                say(err, err_len,
                    "pid %ld (%s): permission denied on %s (a process that changed its user "
                    "or is not dumpable can be read by root only)",
                    pid, program_of(pid, prog, sizeof prog), dir);
            return XS_PERM;
        }
        return XS_NOT_XALLOC;
    }
    enum xs_status rc = XS_NOT_XALLOC;
    uint64_t ticks = start_ticks(pid);
    struct dirent *e;
    while ((e = readdir(d))) {
        char path[PATH_MAX], link[256], e2[512];
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        ssize_t n = readlink(path, link, sizeof link - 1);
        if (n != (ssize_t)sizeof want - 1 || memcmp(link, want, sizeof want - 1) != 0)
            continue;
        /* Not O_NOFOLLOW: the /proc link is the way to the file. */
        int fd = open(path, (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC);
        if (fd < 0) {
            if (errno == EACCES || errno == EPERM) {
                say(err, err_len, "pid %ld (%s): permission denied on its statistics (%s); "
                                  "only its owner or root may %s it",
                    pid, program_of(pid, prog, sizeof prog), path,
                    writable ? "send requests through" : "read");
                rc = XS_PERM;
            }
            continue;
        }
        memset(f, 0, sizeof *f);
        enum xs_status orc = open_fd(fd, path, writable, f, e2, sizeof e2);
        if (orc != XS_OK) {
            if (rc != XS_PERM) {
                say(err, err_len, "pid %ld: %s", pid, e2);
                rc = orc;
            }
            continue;
        }
        if (f->ident.pid != nspid ||
            (f->ident.start_ticks && ticks && f->ident.start_ticks != ticks)) {
            xs_close(f); /* a parent's file inherited by fork, on its way out */
            continue;
        }
        f->memfd = true;
        f->pid = pid;
        f->ns_pid = nspid;
        rc = XS_OK;
        break;
    }
    closedir(d);
    return rc;
}

enum xs_status xs_open_pid(long pid, const char *extra_dir, bool writable,
                           struct xs_file *f, char *note, size_t note_len,
                           char *err, size_t err_len)
{
    char paths[8][PATH_MAX];
    int n = 0;
    char prog[64];
    if (note && note_len)
        note[0] = '\0';
    memset(f, 0, sizeof *f);

    if (!process_exists(pid)) {
        /* A dead process may have left its file (killed, _exit). */
        const char *names[3] = {NULL, NULL, NULL};
        char a[PATH_MAX], b[PATH_MAX], c[PATH_MAX];
        snprintf(a, sizeof a, XALLOC_STATS_FILE_RUN_DIR "/%ld", pid);
        snprintf(b, sizeof b, XALLOC_STATS_FILE_SHM_DIR "/" XALLOC_STATS_FILE_PREFIX "%ld", pid);
        names[0] = a;
        names[1] = b;
        if (extra_dir) {
            snprintf(c, sizeof c, "%s/" XALLOC_STATS_FILE_PREFIX "%ld", extra_dir, pid);
            names[2] = c;
        }
        say(err, err_len, "no such process: %ld", pid);
        for (int i = 0; i < 3; i++) {
            struct xs_file g;
            char e2[256];
            if (!names[i] || xs_open_path(names[i], false, &g, e2, sizeof e2) != XS_OK)
                continue;
            bool stale = file_is_stale(&g.ident, 0);
            xs_close(&g);
            if (stale) {
                if (unlink(names[i]) == 0)
                    say(err, err_len,
                        "no such process: %ld; removed the stale statistics file %s it left",
                        pid, names[i]);
                else
                    say(err, err_len,
                        "no such process: %ld; stale statistics file %s left behind (%s)", pid,
                        names[i], strerror(errno));
            }
        }
        return XS_NO_PROCESS;
    }

    long nspid = ns_pid_of(pid);
    enum xs_status mrc = open_memfd(pid, nspid, writable, f, err, err_len);
    if (mrc != XS_NOT_XALLOC)
        return mrc;
    char root[64];
    snprintf(root, sizeof root, "/proc/%ld/root", pid);
    bool root_ok = access(root, X_OK) == 0;
    int root_err = root_ok ? 0 : errno;
    const char *roots[2];
    int nroots = 0;
    if (root_ok)
        roots[nroots++] = root;
    /* Without access to its root, the plain path is right only when the
     * process shares our pid namespace (its name carries our pid). */
    if (nspid == pid)
        roots[nroots++] = "";
    for (int r = 0; r < nroots; r++) {
        if (extra_dir)
            snprintf(paths[n++], PATH_MAX, "%s%s/" XALLOC_STATS_FILE_PREFIX "%ld", roots[r],
                     extra_dir, nspid);
        snprintf(paths[n++], PATH_MAX, "%s" XALLOC_STATS_FILE_RUN_DIR "/%ld", roots[r], nspid);
        snprintf(paths[n++], PATH_MAX,
                 "%s" XALLOC_STATS_FILE_SHM_DIR "/" XALLOC_STATS_FILE_PREFIX "%ld", roots[r],
                 nspid);
    }
    /* A stats_dir we were not told about: the process maps its file, so
     * /proc/PID/maps names it. */
    {
        char mp[64], line[4096], want[64];
        snprintf(mp, sizeof mp, "/proc/%ld/maps", pid);
        snprintf(want, sizeof want, "/" XALLOC_STATS_FILE_PREFIX "%ld", nspid);
        FILE *fp = fopen(mp, "re");
        while (fp && n < 8 && fgets(line, sizeof line, fp)) {
            line[strcspn(line, "\n")] = '\0';
            char *path = strchr(line, '/');
            size_t pl = path ? strlen(path) : 0, wl = strlen(want);
            if (path && pl > wl && strcmp(path + pl - wl, want) == 0 &&
                !strstr(path, " (deleted)"))
                snprintf(paths[n++], PATH_MAX, "%s%s", root_ok ? root : "", path);
        }
        if (fp)
            fclose(fp);
    }

    enum xs_status denied = XS_OK;
    char denied_msg[512] = "";
    for (int i = 0; i < n; i++) {
        char e2[512];
        enum xs_status rc = xs_open_path(paths[i], writable, f, e2, sizeof e2);
        if (rc == XS_NOT_XALLOC)
            continue;
        if (rc == XS_PERM) {
            if (denied == XS_OK) {
                denied = XS_PERM;
                snprintf(denied_msg, sizeof denied_msg, "%s", e2);
            }
            continue;
        }
        if (rc != XS_OK) {
            say(err, err_len, "%s", e2);
            return rc;
        }
        if (f->ident.pid != nspid || file_is_stale(&f->ident, pid)) {
            /* Left by an earlier process that had this pid. */
            xs_close(f);
            if (unlink(paths[i]) == 0 && note)
                say(note, note_len, "removed the stale statistics file %s of an earlier "
                                    "process with pid %ld", paths[i], nspid);
            continue;
        }
        f->pid = pid; /* xs_open_path cleared it */
        f->ns_pid = nspid;
        return XS_OK;
    }
    if (denied == XS_PERM) {
        say(err, err_len, "pid %ld (%s): %s", pid, program_of(pid, prog, sizeof prog), denied_msg);
        return XS_PERM;
    }
    int uses = maps_xalloc(pid);
    if (!root_ok && nspid != pid) {
        say(err, err_len,
            "pid %ld (%s) runs in another pid namespace and its files cannot be reached: "
            "permission denied on %s (%s)",
            pid, program_of(pid, prog, sizeof prog), root, strerror(root_err));
        return XS_PERM;
    }
    if (uses == 1)
        say(err, err_len,
            "pid %ld (%s) uses xalloc but publishes no statistics (stats:off, or no "
            "allocation since it started)",
            pid, program_of(pid, prog, sizeof prog));
    else if (uses == 0)
        say(err, err_len, "pid %ld (%s) does not use xalloc", pid,
            program_of(pid, prog, sizeof prog));
    else
        say(err, err_len, "pid %ld (%s) publishes no xalloc statistics that this user can see",
            pid, program_of(pid, prog, sizeof prog));
    return XS_NOT_XALLOC;
}

/* ---- reading ---- */

enum xs_status xs_read(struct xs_file *f, struct xs_snapshot *snap, int timeout_ms,
                       char *err, size_t err_len)
{
    const size_t seq_off = offsetof(struct xalloc_stats_file_header, seq);
    uint64_t deadline = xs_now_ns() + (uint64_t)timeout_ms * 1000000u;
    for (unsigned tries = 0;; tries++) {
        uint64_t s = 0, s2 = 1;
        bool ok = pread_all(f->fd, &s, sizeof s, seq_off);
        if (ok && s != 0 && !(s & 1)) {
            memset(snap, 0, sizeof *snap);
            ok = pread_all(f->fd, &snap->hdr, f->hsize, 0) &&
                 pread_all(f->fd, &snap->stats, f->ssize, f->soff) &&
                 pread_all(f->fd, &s2, sizeof s2, seq_off);
            if (ok && s2 == s)
                break;
        }
        if (!ok) {
            say(err, err_len, "%s: the file was cut short while being read", f->path);
            return XS_ERROR;
        }
        if (xs_now_ns() > deadline) {
            if (s == 0)
                say(err, err_len, "%s: no statistics published yet", f->path);
            else
                say(err, err_len, "%s: could not copy a consistent snapshot", f->path);
            return XS_TIMEOUT;
        }
        /* Retry at once a few times (a write takes microseconds), then
         * sleep: a file never published waits for the process's first
         * slow path. */
        if (tries > 64)
            sleep_ms(s == 0 ? 10 : 1);
    }
    snap->hdr.seq = 0;
    if (snap->stats.version_major != XALLOC_STATS_VERSION_MAJOR) {
        say(err, err_len,
            "%s: incompatible statistics snapshot %u.%u; this xalloc-stat reads %u.x",
            f->path, snap->stats.version_major, snap->stats.version_minor,
            XALLOC_STATS_VERSION_MAJOR);
        return XS_VERSION;
    }
    if (snap->hdr.config_count > XALLOC_STATS_FILE_MAX_CONFIG)
        snap->hdr.config_count = XALLOC_STATS_FILE_MAX_CONFIG;
    for (unsigned i = 0; i < snap->hdr.config_count; i++) {
        struct xalloc_stats_file_config *c = &snap->hdr.config[i];
        c->name[sizeof c->name - 1] = c->value[sizeof c->value - 1] =
            c->source[sizeof c->source - 1] = '\0';
    }
    snap->hdr.program[sizeof snap->hdr.program - 1] = '\0';
    snap->hdr.library_version[sizeof snap->hdr.library_version - 1] = '\0';
    return XS_OK;
}

/* ---- requests ---- */

static long futex(uint32_t *word, int op, uint32_t val, const struct timespec *ts)
{
    return syscall(SYS_futex, word, op, val, ts, NULL, 0);
}

enum xs_status xs_request(struct xs_file *f, uint32_t command, const char *arg,
                          int timeout_ms, uint64_t *result, char *msg, size_t msg_len)
{
    if (!f->h) {
        say(msg, msg_len, "%s was not opened for requests", f->path);
        return XS_ERROR;
    }
    struct xalloc_stats_file_request *r = &f->h->request;
    uint64_t deadline = xs_now_ns() + (uint64_t)timeout_ms * 1000000u;
    int32_t me = (int32_t)getpid();
    /* Take the area: one client at a time. */
    for (;;) {
        int32_t owner = 0;
        if (__atomic_compare_exchange_n(&r->owner, &owner, me, false, __ATOMIC_ACQUIRE,
                                        __ATOMIC_RELAXED))
            break;
        /* Steal it from a client that died holding it. A pid from another
         * namespace reads as dead here, so stealing waits half the time
         * first. */
        if (kill(owner, 0) != 0 && errno == ESRCH &&
            __atomic_compare_exchange_n(&r->owner, &owner, me, false, __ATOMIC_ACQUIRE,
                                        __ATOMIC_RELAXED))
            break;
        if (xs_now_ns() > deadline) {
            say(msg, msg_len, "the request area of %s is held by pid %d", f->path, owner);
            return XS_TIMEOUT;
        }
        sleep_ms(10);
    }
    r->command = command;
    r->requester_uid = (uint32_t)geteuid();
    memset(r->arg, 0, sizeof r->arg);
    if (arg)
        snprintf(r->arg, sizeof r->arg, "%s", arg);
    uint32_t seq = __atomic_load_n(&r->ack_seq, __ATOMIC_ACQUIRE) + 1;
    if (seq == 0)
        seq = 1;
    __atomic_store_n(&r->seq, seq, __ATOMIC_RELEASE);
    futex(&r->seq, FUTEX_WAKE, INT32_MAX, NULL);

    enum xs_status rc = XS_TIMEOUT;
    for (;;) {
        uint32_t ack = __atomic_load_n(&r->ack_seq, __ATOMIC_ACQUIRE);
        if (ack == seq) {
            rc = r->status == 0 ? XS_OK : XS_REFUSED;
            if (result)
                *result = r->result;
            char m[sizeof r->message];
            memcpy(m, r->message, sizeof m);
            m[sizeof m - 1] = '\0';
            say(msg, msg_len, "%s", m);
            break;
        }
        uint64_t now = xs_now_ns();
        if (now >= deadline) {
            if (f->pid && !process_exists(f->pid))
                say(msg, msg_len, "pid %ld exited before answering", f->pid);
            else
                say(msg, msg_len, "no answer within %d ms (the process serves requests on "
                                  "its statistics thread or next allocator slow path)",
                    timeout_ms);
            /* Withdraw, so a late answer does not confuse the next client. */
            __atomic_store_n(&r->seq, ack, __ATOMIC_RELEASE);
            break;
        }
        uint64_t left = deadline - now;
        if (left > 100000000u)
            left = 100000000u; /* re-check liveness every 100 ms */
        struct timespec ts = {0, (long)left};
        futex(&r->ack_seq, FUTEX_WAIT, ack, &ts);
    }
    __atomic_store_n(&r->owner, 0, __ATOMIC_RELEASE);
    return rc;
}

/* ---- kernel accounting ---- */

static uint64_t kb_field(const char *line, const char *name)
{
    size_t n = strlen(name);
    if (strncmp(line, name, n) != 0)
        return UINT64_MAX;
    return strtoull(line + n, NULL, 10) * 1024;
}

bool xs_kernel(long pid, struct xa_report_kernel *k)
{
    char path[64], line[4096];
    memset(k, 0, sizeof *k);
    snprintf(path, sizeof path, "/proc/%ld/smaps", pid);
    FILE *fp = fopen(path, "re");
    if (fp) {
        bool in = false;
        while (fgets(line, sizeof line, fp)) {
            if (isxdigit((unsigned char)line[0]) && strchr(line, '-') &&
                strchr(line, '-') < strchr(line, ' ')) {
                /* A mapping header: "start-end perms offset dev inode [name]" */
                in = strstr(line, "[anon:xalloc") != NULL;
                k->mappings += in;
                continue;
            }
            if (!in)
                continue;
            uint64_t v;
            if ((v = kb_field(line, "Size:")) != UINT64_MAX)
                k->size += v;
            else if ((v = kb_field(line, "Rss:")) != UINT64_MAX)
                k->rss += v;
            else if ((v = kb_field(line, "AnonHugePages:")) != UINT64_MAX)
                k->anon_huge += v;
            else if ((v = kb_field(line, "Swap:")) != UINT64_MAX)
                k->swap += v;
        }
        fclose(fp);
        if (k->mappings) {
            k->valid = 1;
            k->scope = "xalloc mappings";
            return true;
        }
    }
    /* The kernel names no mapping (no PR_SET_VMA_ANON_NAME): the whole
     * process is the best the kernel can say. */
    snprintf(path, sizeof path, "/proc/%ld/smaps_rollup", pid);
    fp = fopen(path, "re");
    if (!fp)
        return false;
    while (fgets(line, sizeof line, fp)) {
        uint64_t v;
        if ((v = kb_field(line, "Rss:")) != UINT64_MAX)
            k->rss = v, k->valid = 1;
        else if ((v = kb_field(line, "AnonHugePages:")) != UINT64_MAX)
            k->anon_huge = v;
        else if ((v = kb_field(line, "Swap:")) != UINT64_MAX)
            k->swap = v;
    }
    fclose(fp);
    k->scope = "whole process";
    return k->valid;
}

/* ---- every process ---- */

static void sweep_stale(const char *dir, const char *prefix,
                        void (*stale)(void *, const char *), void *arg)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    size_t pl = strlen(prefix);
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, prefix, pl) != 0 || !isdigit((unsigned char)e->d_name[pl]))
            continue;
        char path[PATH_MAX], err[256];
        struct xs_file g;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (xs_open_path(path, false, &g, err, sizeof err) != XS_OK)
            continue;
        bool is_stale = file_is_stale(&g.ident, 0);
        xs_close(&g);
        if (is_stale && unlink(path) == 0 && stale)
            stale(arg, path);
    }
    closedir(d);
}

void xs_for_each(const char *extra_dir, void (*fn)(void *, struct xs_file *), void *arg,
                 int *denied, void (*stale)(void *, const char *))
{
    *denied = 0;
    sweep_stale(XALLOC_STATS_FILE_SHM_DIR, XALLOC_STATS_FILE_PREFIX, stale, arg);
    sweep_stale(XALLOC_STATS_FILE_RUN_DIR, "", stale, arg);
    if (extra_dir)
        sweep_stale(extra_dir, XALLOC_STATS_FILE_PREFIX, stale, arg);

    DIR *d = opendir("/proc");
    if (!d)
        return;
    /* Collect first, then sort: readdir order is not pid order. */
    size_t cap = 1024, n = 0;
    long *pids = malloc(cap * sizeof *pids);
    struct dirent *e;
    while (pids && (e = readdir(d))) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        if (*end || pid <= 0)
            continue;
        if (n == cap) {
            long *np = realloc(pids, 2 * cap * sizeof *pids);
            if (!np)
                break;
            pids = np;
            cap *= 2;
        }
        pids[n++] = pid;
    }
    closedir(d);
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && pids[j - 1] > pids[j]; j--) {
            long t = pids[j];
            pids[j] = pids[j - 1];
            pids[j - 1] = t;
        }
    for (size_t i = 0; i < n; i++) {
        struct xs_file f;
        char err[512];
        if (pids[i] == (long)getpid())
            continue;
        enum xs_status rc = xs_open_pid(pids[i], extra_dir, false, &f, NULL, 0, err, sizeof err);
        if (rc == XS_OK) {
            fn(arg, &f);
            xs_close(&f);
        } else if (rc == XS_PERM) {
            (*denied)++;
        }
    }
    free(pids);
}
