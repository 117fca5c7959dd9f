/* fuzz_statfile.c: scribbles on a live process's statistics memory file
 * for tests/stats/fuzz.sh (issue 16). Not run under xalloc.
 *
 * Opens /proc/PID/fd/N read-write (as the process's own user would) and,
 * for SECONDS, overwrites it again and again: random bytes over the whole
 * file, every 32-bit word set to an extreme value, hostile header fields
 * (sizes, offsets, sequence numbers, counts), random bytes over the request
 * area, and valid-looking but hostile requests (unknown commands, foreign
 * uids, unterminated or non-printable arguments, start-up-only options,
 * values out of range), waking the process's futex each time. Every
 * 200 ms it runs XALLOC_STAT on the same process (--json, --prometheus,
 * --config, --purge) and fails if the tool dies of a signal. Also checks
 * that the file cannot be resized (its seals). At the end it clears the
 * request area and exits 0, or 1 at the first failure.
 * Usage: fuzz_statfile PID XALLOC_STAT SECONDS */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "xalloc_stats_file.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int find_memfd(long pid, char *out, size_t len)
{
    char dir[64];
    snprintf(dir, sizeof dir, "/proc/%ld/fd", pid);
    DIR *d = opendir(dir);
    struct dirent *e;
    int found = 0;
    while (d && !found && (e = readdir(d))) {
        char link[256];
        snprintf(out, len, "%s/%s", dir, e->d_name);
        ssize_t n = readlink(out, link, sizeof link - 1);
        if (n > 0) {
            link[n] = '\0';
            found = strcmp(link, "/memfd:" XALLOC_STATS_FILE_MEMFD_NAME " (deleted)") == 0;
        }
    }
    if (d)
        closedir(d);
    return found;
}

/* Runs the tool; returns 0 unless it died of a signal. */
static int run_tool(const char *tool, const char *mode, long pid, unsigned long *runs)
{
    char ps[32];
    snprintf(ps, sizeof ps, "%ld", pid);
    pid_t c = fork();
    if (c == 0) {
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 1);
        dup2(null, 2);
        if (strcmp(mode, "--purge") == 0)
            execl(tool, tool, "--no-kernel", "--timeout", "0.3", mode, ps, (char *)NULL);
        else
            execl(tool, tool, "--no-kernel", mode, ps, (char *)NULL);
        _exit(127);
    }
    int st;
    if (c < 0 || waitpid(c, &st, 0) != c)
        return 0;
    (*runs)++;
    if (WIFSIGNALED(st)) {
        fprintf(stderr, "fuzz: xalloc-stat %s %ld died of signal %d\n", mode, pid, WTERMSIG(st));
        return 1;
    }
    return 0;
}

static const char *hostile_args[] = {
    "thp:always",             /* start-up only */
    "arenas:1",               /* start-up only */
    "stats_dir:/tmp",         /* start-up only */
    "decay_ms:99999999999",   /* out of range */
    "decay_ms:-5",            /* out of range */
    "stats_interval_ms:1",    /* below its minimum */
    "stats_interval_ms:0",    /* below its minimum */
    "background_thread:maybe",/* not a bool */
    "decay_ms:",              /* empty value */
    ":",                      /* no key */
    "decay_ms:10,thp:never",  /* one bad item: all or nothing */
    "%s%s%s%n%n%n",           /* format string */
    "decay_ms:1\nthp:never",  /* control character */
};

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: fuzz_statfile PID XALLOC_STAT SECONDS\n");
        return 2;
    }
    long pid = atol(argv[1]);
    const char *tool = argv[2];
    double end = now_s() + atof(argv[3]);
    char path[PATH_MAX];
    if (!find_memfd(pid, path, sizeof path)) {
        fprintf(stderr, "fuzz: no statistics memory file in /proc/%ld/fd\n", pid);
        return 1;
    }
    int fd = open(path, O_RDWR | O_CLOEXEC);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) != 0) {
        perror("fuzz: open");
        return 1;
    }
    size_t size = (size_t)sb.st_size;
    if (ftruncate(fd, 0) == 0 || ftruncate(fd, (off_t)size * 2) == 0) {
        fprintf(stderr, "fuzz: the statistics file could be resized: it is not sealed\n");
        return 1;
    }
    unsigned char *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) {
        perror("fuzz: mmap");
        return 1;
    }
    rng ^= (uint64_t)getpid() << 32 ^ (uint64_t)time(NULL);
    struct xalloc_stats_file_header *h = (void *)m;
    struct xalloc_stats_file_request *r = &h->request;
    unsigned long writes = 0, requests = 0, runs = 0;
    static const uint32_t extremes[] = {0x7fffffffu, 0xffffffffu, 0x80000000u, 0, 1};
    static const char *modes[] = {"--json", "--prometheus", "--config", "--purge"};
    double next_tool = now_s();
    int fail = 0;
    while (!fail && now_s() < end) {
        switch (next() % 6) {
        case 0: /* random bytes, whole file */
            for (size_t i = 0; i + 8 <= size; i += 8) {
                uint64_t v = next();
                memcpy(m + i, &v, 8);
            }
            break;
        case 1: { /* every word one extreme value */
            uint32_t v = extremes[next() % 5];
            for (size_t i = 0; i + 4 <= size; i += 4)
                memcpy(m + i, &v, 4);
            break;
        }
        case 2: /* hostile header */
            h->header_size = (uint32_t)next();
            h->snapshot_offset = next() % 2 ? next() : size - 8;
            h->snapshot_size = next();
            h->file_size = next();
            h->seq = next() | 1;
            h->config_count = (uint32_t)next();
            if (next() % 2)
                h->magic = next();
            break;
        case 3: /* random bytes over the request area */
            for (size_t i = 0; i < sizeof *r; i++)
                ((unsigned char *)r)[i] = (unsigned char)next();
            __atomic_store_n(&r->seq, (uint32_t)next(), __ATOMIC_RELEASE);
            syscall(SYS_futex, &r->seq, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
            requests++;
            break;
        default: { /* valid-looking, hostile request */
            uint64_t k = next();
            uint32_t cmds[] = {XALLOC_STATS_CMD_SET, XALLOC_STATS_CMD_SET, XALLOC_STATS_CMD_PURGE,
                               XALLOC_STATS_CMD_DUMP, XALLOC_STATS_CMD_PUBLISH, 0, 5, 0xffffffffu};
            r->owner = (int32_t)next();
            r->command = cmds[k % 8];
            uint32_t uids[] = {0, (uint32_t)geteuid(), 12345, (uint32_t)next()};
            r->requester_uid = uids[(k >> 8) % 4];
            if ((k >> 16) % 3 == 0) {
                for (size_t i = 0; i < sizeof r->arg; i++) /* unterminated */
                    r->arg[i] = (char)(0x20 + next() % 0x60);
            } else if ((k >> 16) % 3 == 1) {
                for (size_t i = 0; i < sizeof r->arg; i++) /* any byte */
                    r->arg[i] = (char)next();
            } else {
                memset(r->arg, 0, sizeof r->arg);
                const char *a = hostile_args[(k >> 24) % (sizeof hostile_args / sizeof *hostile_args)];
                memcpy(r->arg, a, strlen(a));
            }
            uint32_t ack = __atomic_load_n(&r->ack_seq, __ATOMIC_ACQUIRE);
            __atomic_store_n(&r->seq, (k >> 32) % 4 ? ack + 1 : (uint32_t)next(), __ATOMIC_RELEASE);
            syscall(SYS_futex, &r->seq, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
            requests++;
            break;
        }
        }
        writes++;
        if (kill((pid_t)pid, 0) != 0) {
            fprintf(stderr, "fuzz: pid %ld died after %lu writes\n", pid, writes);
            fail = 1;
            break;
        }
        if (now_s() >= next_tool) {
            fail = run_tool(tool, modes[next() % 4], pid, &runs);
            next_tool = now_s() + 0.2;
        }
        struct timespec ts = {0, (long)(next() % 2000000)};
        nanosleep(&ts, NULL);
    }
    /* Leave a usable request area; the process rewrites the rest. */
    memset(r, 0, sizeof *r);
    printf("fuzz: %lu writes (%lu requests), %lu xalloc-stat runs, %s\n", writes, requests, runs,
           fail ? "FAILED" : "process and tool alive");
    munmap(m, size);
    close(fd);
    return fail;
}
