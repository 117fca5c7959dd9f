/* main.c: xalloc-stat, the operator's view of a live process's heap and
 * its remote control (purge, set). Reads the statistics file a process
 * using xalloc publishes (statfile.c), renders it with the library's own
 * report emitter (src/stats_report.c, compiled in), and never links src/
 * otherwise. See man/xalloc-stat.1 for every flag and field. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "statfile.h"
#include "stats_report.h"
#include "xalloc.h"

#define STR2(x) #x
#define STR(x) STR2(x)
#define TOOL_VERSION                                                            \
    STR(XALLOC_VERSION_MAJOR) "." STR(XALLOC_VERSION_MINOR) "." STR(XALLOC_VERSION_PATCH)

enum mode { M_REPORT, M_CONFIG, M_ALL, M_PURGE, M_SET, M_DUMP };

struct opts {
    enum mode mode;
    enum xa_report_format format;
    const char *set_arg;
    const char *dir;
    const char *file;
    double watch;   /* seconds; 0 = no watch */
    long count;     /* --watch iterations; 0 = until interrupted */
    double timeout; /* seconds for requests; 0 = automatic */
    bool kernel;    /* read smaps */
};

static void usage(FILE *fp)
{
    fprintf(fp,
            "usage: xalloc-stat [--json | --prometheus] [--watch [SECONDS]] PID\n"
            "       xalloc-stat --all [--json | --prometheus] [--watch [SECONDS]]\n"
            "       xalloc-stat --config [--json | --prometheus] PID\n"
            "       xalloc-stat --purge [--json] PID\n"
            "       xalloc-stat --set KEY:VALUE [--json] PID\n"
            "       xalloc-stat --dump [--json] PID\n"
            "       xalloc-stat --file PATH [--json | --prometheus | --config]\n"
            "options:\n"
            "  --json              one JSON object\n"
            "  --prometheus        Prometheus text format (node_exporter textfile collector)\n"
            "  --watch [SECONDS]   refresh in place every SECONDS (default 1)\n"
            "  --count N           with --watch: stop after N reports\n"
            "  --all               one line per process using xalloc\n"
            "  --config            effective configuration and the source of each value\n"
            "  --purge             make the process return its free memory now\n"
            "  --set KEY:VALUE     change a run-time option (decay_ms, background_thread,\n"
            "                      stats_interval_ms)\n"
            "  --dump              write a heap profile now (profiling build) and print\n"
            "                      its path\n"
            "  --dir DIR           also look in DIR (the process's stats_dir)\n"
            "  --file PATH         read a statistics file directly\n"
            "  --timeout SECONDS   how long --purge/--set wait for the answer\n"
            "  --no-kernel         skip the kernel's accounting (/proc/PID/smaps)\n"
            "  -h, --help          this help\n"
            "  -V, --version       version\n");
}

static void line_stdout(void *arg, const char *line)
{
    (void)arg;
    fputs(line, stdout);
}

static int exit_code(enum xs_status s)
{
    return (int)s;
}

static void report_to(const struct opts *o, struct xs_file *f, const struct xs_snapshot *snap,
                      enum xa_report_format fmt, int summary_header, xa_report_write_fn out)
{
    struct xa_report_kernel k;
    struct xa_report_info info = {0};
    char service[256];
    info.pid = f->pid ? f->pid : snap->hdr.pid;
    info.program = snap->hdr.program;
    if (f->pid && xs_service(f->pid, service, sizeof service))
        info.service = service;
    info.library_version = snap->hdr.library_version;
    uint64_t now = xs_now_ns();
    info.age_ns = snap->hdr.publish_mono_ns && now > snap->hdr.publish_mono_ns
                      ? now - snap->hdr.publish_mono_ns
                      : 0;
    info.uptime_ns = f->pid ? xs_uptime_ns(f->pid) : 0;
    info.config = snap->hdr.config;
    info.config_count = snap->hdr.config_count;
    info.summary_header = summary_header;
    if (snap->hdr.version_minor >= 1) {
        info.has_requests = 1;
        info.requests_served = snap->hdr.requests_served;
        info.requests_ignored = snap->hdr.requests_ignored;
    }
    if (o->kernel && f->pid &&
        (fmt == XA_REPORT_TEXT || fmt == XA_REPORT_JSON || fmt == XA_REPORT_PROMETHEUS) &&
        xs_kernel(f->pid, &k))
        info.kernel = &k;
    xa_stats_report_emit(&snap->stats, &info, fmt, out, NULL);
}

static void report(const struct opts *o, struct xs_file *f, const struct xs_snapshot *snap,
                   enum xa_report_format fmt, int summary_header)
{
    report_to(o, f, snap, fmt, summary_header, line_stdout);
}

static int open_target(const struct opts *o, long pid, bool writable, struct xs_file *f)
{
    char err[1024], note[1024];
    enum xs_status rc;
    if (o->file)
        rc = xs_open_file(o->file, writable, f, err, sizeof err);
    else
        rc = xs_open_pid(pid, o->dir, writable, f, note, sizeof note, err, sizeof err);
    if (rc != XS_OK) {
        fprintf(stderr, "xalloc-stat: %s\n", err);
        return exit_code(rc);
    }
    if (!o->file && note[0])
        fprintf(stderr, "xalloc-stat: %s\n", note);
    return 0;
}

static int read_snapshot(struct xs_file *f, struct xs_snapshot *snap)
{
    char err[1024];
    /* A new file is published at the process's first slow path or within
     * one interval; wait for a few seconds at most. */
    enum xs_status rc = xs_read(f, snap, 3000, err, sizeof err);
    if (rc != XS_OK) {
        fprintf(stderr, "xalloc-stat: %s\n", err);
        return exit_code(rc);
    }
    return 0;
}

static volatile sig_atomic_t stop;
static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

static int cmd_report(const struct opts *o, long pid)
{
    struct xs_file f;
    static struct xs_snapshot snap;
    int rc = open_target(o, pid, false, &f);
    if (rc)
        return rc;
    enum xa_report_format fmt = o->format;
    if (o->mode == M_CONFIG)
        fmt = o->format == XA_REPORT_JSON         ? XA_REPORT_CONFIG_JSON
              : o->format == XA_REPORT_PROMETHEUS ? XA_REPORT_CONFIG_PROMETHEUS
                                                  : XA_REPORT_CONFIG;
    if (!o->watch) {
        rc = read_snapshot(&f, &snap);
        if (!rc)
            report(o, &f, &snap, fmt, 0);
        xs_close(&f);
        return rc;
    }
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    bool tty = isatty(STDOUT_FILENO);
    if (tty)
        fputs("\033[H\033[2J", stdout);
    for (long i = 0; !stop && (!o->count || i < o->count); i++) {
        rc = read_snapshot(&f, &snap);
        if (rc)
            break;
        if (tty)
            fputs("\033[H", stdout); /* home, overwrite, then clear the rest */
        else if (i)
            fputs("\n", stdout);
        report(o, &f, &snap, fmt, 0);
        if (tty)
            fputs("\033[J", stdout);
        fflush(stdout);
        if (o->count && i + 1 >= o->count)
            break;
        struct timespec ts = {(time_t)o->watch, (long)((o->watch - (double)(time_t)o->watch) * 1e9)};
        while (!stop && nanosleep(&ts, &ts) != 0 && errno == EINTR)
            ;
        if (f.pid && kill((pid_t)f.pid, 0) != 0 && errno == ESRCH) {
            fprintf(stderr, "xalloc-stat: pid %ld exited\n", f.pid);
            rc = XS_NO_PROCESS;
            break;
        }
    }
    xs_close(&f);
    return rc;
}

struct all_ctx {
    const struct opts *o;
    int count;
    int first;
};

/* ---- --all --prometheus: one exposition for every process ----
 * The text format wants each metric family in one block, so the lines of
 * every process's report are gathered by family and printed once. */
struct family {
    char *name, *help, *type;
    char **samples;
    size_t n, cap;
};
static struct family *families;
static size_t nfamilies, capfamilies;

static char *dup_or_die(const char *s)
{
    char *d = strdup(s);
    if (!d) {
        fprintf(stderr, "xalloc-stat: out of memory\n");
        exit(1);
    }
    return d;
}

static struct family *family_of(const char *name, size_t len)
{
    for (size_t i = 0; i < nfamilies; i++)
        if (strlen(families[i].name) == len && memcmp(families[i].name, name, len) == 0)
            return &families[i];
    if (nfamilies == capfamilies) {
        capfamilies = capfamilies ? 2 * capfamilies : 64;
        families = realloc(families, capfamilies * sizeof *families);
        if (!families) {
            fprintf(stderr, "xalloc-stat: out of memory\n");
            exit(1);
        }
    }
    struct family *f = &families[nfamilies++];
    memset(f, 0, sizeof *f);
    f->name = strndup(name, len);
    if (!f->name)
        exit(1);
    return f;
}

static void line_gather(void *arg, const char *line)
{
    (void)arg;
    if (strncmp(line, "# HELP ", 7) == 0 || strncmp(line, "# TYPE ", 7) == 0) {
        const char *n = line + 7;
        struct family *f = family_of(n, strcspn(n, " \n"));
        char **slot = line[2] == 'H' ? &f->help : &f->type;
        if (!*slot)
            *slot = dup_or_die(line);
        return;
    }
    if (line[0] == '#' || line[0] == '\n' || !line[0])
        return;
    struct family *f = family_of(line, strcspn(line, "{ \n"));
    if (f->n == f->cap) {
        f->cap = f->cap ? 2 * f->cap : 16;
        f->samples = realloc(f->samples, f->cap * sizeof *f->samples);
        if (!f->samples)
            exit(1);
    }
    f->samples[f->n++] = dup_or_die(line);
}

static void families_print(void)
{
    for (size_t i = 0; i < nfamilies; i++) {
        struct family *f = &families[i];
        if (f->help)
            fputs(f->help, stdout);
        if (f->type)
            fputs(f->type, stdout);
        for (size_t j = 0; j < f->n; j++) {
            fputs(f->samples[j], stdout);
            free(f->samples[j]);
        }
        free(f->samples);
        free(f->help);
        free(f->type);
        free(f->name);
    }
    free(families);
    families = NULL;
    nfamilies = capfamilies = 0;
}

static void all_one(void *arg, struct xs_file *f)
{
    struct all_ctx *c = arg;
    static struct xs_snapshot snap;
    char err[1024];
    if (xs_read(f, &snap, 1000, err, sizeof err) != XS_OK) {
        fprintf(stderr, "xalloc-stat: %s\n", err);
        return;
    }
    if (c->o->format == XA_REPORT_JSON) {
        fputs(c->count ? ",\n" : "[\n", stdout);
        report(c->o, f, &snap, XA_REPORT_JSON, 0);
    } else if (c->o->format == XA_REPORT_PROMETHEUS) {
        report_to(c->o, f, &snap, XA_REPORT_PROMETHEUS, 0, line_gather);
    } else {
        report(c->o, f, &snap, XA_REPORT_SUMMARY, c->count == 0);
    }
    c->count++;
}

static void all_stale(void *arg, const char *path)
{
    (void)arg;
    fprintf(stderr, "xalloc-stat: removed stale statistics file %s (its process is gone)\n",
            path);
}

static void cmd_all_once(const struct opts *o)
{
    struct all_ctx c = {o, 0, 1};
    int denied = 0;
    xs_for_each(o->dir, all_one, &c, &denied, all_stale);
    if (o->format == XA_REPORT_JSON)
        fputs(c.count ? "]\n" : "[]\n", stdout);
    else if (o->format == XA_REPORT_PROMETHEUS)
        families_print(); /* nothing at all when no process: a valid exposition */
    else if (!c.count)
        printf("no process using xalloc is visible to this user\n");
    if (denied)
        fprintf(stderr, "xalloc-stat: %d more process%s could not be inspected (permission denied)\n",
                denied, denied == 1 ? "" : "es");
}

static int cmd_all(const struct opts *o)
{
    if (!o->watch) {
        cmd_all_once(o);
        return 0;
    }
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    bool tty = isatty(STDOUT_FILENO);
    for (long i = 0; !stop && (!o->count || i < o->count); i++) {
        if (tty)
            fputs("\033[H\033[2J", stdout);
        else if (i)
            fputs("\n", stdout);
        cmd_all_once(o);
        fflush(stdout);
        if (o->count && i + 1 >= o->count)
            break;
        struct timespec ts = {(time_t)o->watch, (long)((o->watch - (double)(time_t)o->watch) * 1e9)};
        while (!stop && nanosleep(&ts, &ts) != 0 && errno == EINTR)
            ;
    }
    return 0;
}

/* A JSON string: quotes, backslashes and every byte outside printable
 * ASCII escaped. */
static void json_out(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c < 0x20 || c >= 0x7f)
            printf("\\u%04x", c);
        else
            putchar(c);
    }
    putchar('"');
}

static int cmd_control(const struct opts *o, long pid)
{
    struct xs_file f;
    static struct xs_snapshot snap;
    int rc = open_target(o, pid, true, &f);
    if (rc) {
        if (rc == XS_PERM)
            fprintf(stderr, "xalloc-stat: request refused: only the owner of the process or "
                            "root may control it\n");
        return rc;
    }
    rc = read_snapshot(&f, &snap);
    if (rc) {
        xs_close(&f);
        return rc;
    }
    double t = o->timeout;
    if (t <= 0) {
        /* Served by the thread at once; without it, by the next slow path. */
        double interval = (double)snap.hdr.interval_ms / 1000.0;
        t = 5.0 + 2 * interval;
        if (!(snap.hdr.flags & XALLOC_STATS_FILE_F_THREAD))
            fprintf(stderr, "xalloc-stat: note: pid %ld has no statistics thread; the request "
                            "waits for its next allocator slow path\n",
                    f.pid);
    }
    char msg[512];
    uint64_t result = 0;
    uint32_t cmd = o->mode == M_PURGE  ? XALLOC_STATS_CMD_PURGE
                   : o->mode == M_DUMP ? XALLOC_STATS_CMD_DUMP
                                       : XALLOC_STATS_CMD_SET;
    enum xs_status st = xs_request(&f, cmd, o->set_arg, (int)(t * 1000), &result, msg, sizeof msg);
    long who = f.pid ? f.pid : snap.hdr.pid;
    if (o->format == XA_REPORT_JSON) {
        /* The answer as one object, on stdout whatever the outcome. */
        static const char *const names[] = {[M_PURGE] = "purge", [M_SET] = "set", [M_DUMP] = "dump"};
        printf("{\"pid\": %ld, \"program\": ", who);
        json_out(snap.hdr.program);
        printf(", \"request\": \"%s\", \"ok\": %s, \"status\": %d, \"result\": %llu, \"message\": ",
               names[o->mode], st == XS_OK ? "true" : "false", (int)st, (unsigned long long)result);
        json_out(msg);
        printf("}\n");
    } else if (st == XS_OK) {
        printf("pid %ld (%s): %s\n", who, snap.hdr.program, msg);
    } else {
        fprintf(stderr, "xalloc-stat: pid %ld (%s): %s%s\n", who, snap.hdr.program,
                st == XS_REFUSED ? "refused: " : "", msg);
    }
    xs_close(&f);
    return exit_code(st);
}

static bool parse_number(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || v < 0)
        return false;
    *out = v;
    return true;
}

int main(int argc, char **argv)
{
    struct opts o = {.mode = M_REPORT, .format = XA_REPORT_TEXT, .kernel = true};
    enum { O_JSON = 256, O_PROM, O_WATCH, O_COUNT, O_ALL, O_CONFIG, O_PURGE, O_SET,
           O_DIR, O_FILE, O_TIMEOUT, O_NOKERNEL, O_DUMP };
    static const struct option longs[] = {
        {"json", no_argument, NULL, O_JSON},
        {"prometheus", no_argument, NULL, O_PROM},
        {"watch", optional_argument, NULL, O_WATCH},
        {"count", required_argument, NULL, O_COUNT},
        {"all", no_argument, NULL, O_ALL},
        {"config", no_argument, NULL, O_CONFIG},
        {"purge", no_argument, NULL, O_PURGE},
        {"set", required_argument, NULL, O_SET},
        {"dump", no_argument, NULL, O_DUMP},
        {"dir", required_argument, NULL, O_DIR},
        {"file", required_argument, NULL, O_FILE},
        {"timeout", required_argument, NULL, O_TIMEOUT},
        {"no-kernel", no_argument, NULL, O_NOKERNEL},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    int c, modes = 0;
    double d;
    while ((c = getopt_long(argc, argv, "hV", longs, NULL)) != -1) {
        switch (c) {
        case O_JSON: o.format = XA_REPORT_JSON; break;
        case O_PROM: o.format = XA_REPORT_PROMETHEUS; break;
        case O_WATCH:
            o.watch = 1;
            if (optarg) {
                if (!parse_number(optarg, &d) || d <= 0)
                    goto bad_number;
                o.watch = d;
            } else if (optind < argc - 1 && parse_number(argv[optind], &d) && d > 0) {
                /* "--watch 2 PID": a number followed by more arguments is
                 * the period; "--watch PID" alone keeps the default. */
                o.watch = d;
                optind++;
            }
            break;
        case O_COUNT:
            if (!parse_number(optarg, &d) || d < 1)
                goto bad_number;
            o.count = (long)d;
            break;
        case O_ALL: o.mode = M_ALL; modes++; break;
        case O_CONFIG: o.mode = M_CONFIG; modes++; break;
        case O_PURGE: o.mode = M_PURGE; modes++; break;
        case O_SET: o.mode = M_SET; o.set_arg = optarg; modes++; break;
        case O_DUMP: o.mode = M_DUMP; modes++; break;
        case O_DIR: o.dir = optarg; break;
        case O_FILE: o.file = optarg; break;
        case O_TIMEOUT:
            if (!parse_number(optarg, &d) || d <= 0)
                goto bad_number;
            o.timeout = d;
            break;
        case O_NOKERNEL: o.kernel = false; break;
        case 'h': usage(stdout); return 0;
        case 'V': printf("xalloc-stat %s (statistics format %d.%d)\n", TOOL_VERSION,
                         XALLOC_STATS_FILE_VERSION_MAJOR, XALLOC_STATS_FILE_VERSION_MINOR);
            return 0;
        default: usage(stderr); return 2;
        }
    }
    if (modes > 1) {
        fprintf(stderr, "xalloc-stat: --all, --config, --purge, --set and --dump exclude each other\n");
        return 2;
    }
    /* Every mode takes every format flag, or says why not. */
    if (o.format == XA_REPORT_PROMETHEUS && (o.mode == M_PURGE || o.mode == M_SET || o.mode == M_DUMP)) {
        fprintf(stderr, "xalloc-stat: --prometheus is a format for statistics; the answer to "
                        "--purge, --set and --dump is text, or JSON with --json\n");
        return 2;
    }
    if (o.watch && (o.mode == M_PURGE || o.mode == M_SET || o.mode == M_DUMP)) {
        fprintf(stderr, "xalloc-stat: --watch repeats a report; it does not repeat --purge, --set "
                        "or --dump\n");
        return 2;
    }
    if (o.watch && o.format == XA_REPORT_PROMETHEUS) {
        fprintf(stderr, "xalloc-stat: --watch --prometheus is not supported: Prometheus scrapes "
                        "(see xalloc-stat-export.timer); watch text or --json\n");
        return 2;
    }
    if (o.mode == M_SET && !strchr(o.set_arg, ':') && !strchr(o.set_arg, '=')) {
        fprintf(stderr, "xalloc-stat: --set wants KEY:VALUE, e.g. --set decay_ms:0\n");
        return 2;
    }
    if (o.mode == M_ALL) {
        if (optind != argc || o.file) {
            usage(stderr);
            return 2;
        }
        return cmd_all(&o);
    }
    long pid = 0;
    if (o.file) {
        if (optind != argc) {
            usage(stderr);
            return 2;
        }
    } else {
        if (optind != argc - 1) {
            usage(stderr);
            return 2;
        }
        char *end;
        pid = strtol(argv[optind], &end, 10);
        if (*end || pid <= 0) {
            fprintf(stderr, "xalloc-stat: '%s' is not a process id\n", argv[optind]);
            return 2;
        }
    }
    if (o.mode == M_PURGE || o.mode == M_SET || o.mode == M_DUMP)
        return cmd_control(&o, pid);
    return cmd_report(&o, pid);

bad_number:
    fprintf(stderr, "xalloc-stat: bad number '%s'\n", optarg ? optarg : "");
    return 2;
}
