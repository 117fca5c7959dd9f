/* runchild.c: the runner's exec helper, not a workload.
 *
 *   runchild REPORT_FILE PROGRAM [ARGS...]
 *
 * Forks and execs PROGRAM, waits for it with wait4() and writes
 *   maxrss_kb=N wall_s=S utime_s=U stime_s=T minflt=F exit=E signal=G
 * to REPORT_FILE (minflt: minor page faults, pages faulted in, again too
 * after a purge). It exists because ru_maxrss is the high-water mark of
 * every address space the process has had: a child forked or vforked from
 * the Python runner starts out with the interpreter's ~20 MiB recorded,
 * while a child of this small program does not. If XBENCH_PRELOAD is set,
 * it becomes the child's LD_PRELOAD (this helper itself runs without the
 * allocator under test). Exit status: PROGRAM's, or 128+signal. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: runchild REPORT_FILE PROGRAM [ARGS...]\n");
        return 2;
    }
    double t0 = now();
    pid_t pid = fork();
    if (pid < 0) {
        perror("runchild: fork");
        return 2;
    }
    if (pid == 0) {
        const char *pre = getenv("XBENCH_PRELOAD");
        if (pre && *pre)
            setenv("LD_PRELOAD", pre, 1);
        unsetenv("XBENCH_PRELOAD");
        execvp(argv[2], argv + 2);
        fprintf(stderr, "runchild: exec %s: %s\n", argv[2], strerror(errno));
        _exit(127);
    }
    int status;
    struct rusage ru;
    while (wait4(pid, &status, 0, &ru) < 0) {
        if (errno != EINTR) {
            perror("runchild: wait4");
            return 2;
        }
    }
    double wall = now() - t0;
    FILE *f = fopen(argv[1], "w");
    if (!f) {
        perror("runchild: report file");
        return 2;
    }
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    fprintf(f, "maxrss_kb=%ld wall_s=%.6f utime_s=%.6f stime_s=%.6f minflt=%ld exit=%d signal=%d\n",
            ru.ru_maxrss, wall, (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6,
            (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6, ru.ru_minflt,
            WIFEXITED(status) ? WEXITSTATUS(status) : -1,
            WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    fclose(f);
    return code;
}
