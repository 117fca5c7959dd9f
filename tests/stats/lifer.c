/* lifer.c: a short-lived process for tests/stats/lifetime.sh, run under
 * LD_PRELOAD of xalloc. It allocates until its statistics memory file
 * appears in /proc/self/fd, lets more than one stats_interval_ms pass
 * (allocating, so the file is republished), then reports "up" by writing
 * one byte to fd 3 (when open) and ends as MODE says:
 *   wait            pause() until a signal ends it (SIGKILL, SIGTERM's
 *                   default action: no exit handler runs)
 *   _exit           _exit(0): no exit handler runs
 *   exec PROG ARGV0 ARGS...  execv(PROG, {ARGV0, ARGS...}): the new image
 *                   replaces this one
 * Usage: lifer MS MODE [PROG ARGV0 ARGS...]   (MS: time to stay up first) */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int has_memfd(void)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    int found = 0;
    while (d && !found && (e = readdir(d))) {
        char path[300], link[256];
        snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
        ssize_t n = readlink(path, link, sizeof link - 1);
        if (n > 0) {
            link[n] = '\0';
            found = strcmp(link, "/memfd:xalloc-stats (deleted)") == 0;
        }
    }
    if (d)
        closedir(d);
    return found;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Slow-path allocations of many small classes: the library's upkeep (and
 * its statistics tick) runs on those. */
static void churn(void)
{
    enum { N = 2048 };
    static void *p[N];
    for (int i = 0; i < N; i++)
        p[i] = malloc(16 + (size_t)(i % 64) * 48);
    for (int i = 0; i < N; i++)
        free(p[i]);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: lifer MS wait|_exit|exec PROG ARGV0 ARGS...\n");
        return 2;
    }
    double ms = atof(argv[1]), t0 = now_ms();
    while (!has_memfd()) {
        churn();
        if (now_ms() - t0 > 5000) {
            fprintf(stderr, "lifer: no statistics memory file after 5 s\n");
            return 1;
        }
        usleep(1000);
    }
    t0 = now_ms();
    while (now_ms() - t0 < ms) {
        churn();
        usleep(2000);
    }
    if (write(3, "u", 1) < 0) {
        /* fd 3 not given: nobody waits for us */
    }
    close(3);
    if (strcmp(argv[2], "_exit") == 0)
        _exit(0);
    if (strcmp(argv[2], "exec") == 0 && argc > 4) {
        execv(argv[3], argv + 4);
        perror("lifer: execv");
        return 1;
    }
    for (;;)
        pause();
}
