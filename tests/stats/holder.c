/* holder.c: a test process for tests/stats/tool.sh, run under LD_PRELOAD of
 * xalloc. Usage: holder LIVE_MIB CACHED_MIB SECONDS. Keeps LIVE_MIB of
 * touched 64 KiB blocks, allocates, touches and frees CACHED_MIB in 1 MiB
 * blocks (memory the allocator then caches until decay or purge), writes
 * "ready" on stdout, and idles without allocating for at most SECONDS. On
 * SIGUSR1 it repeats the allocate-and-free cycle and writes "cycled";
 * SIGTERM ends it through exit(). */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t cycle_requested, stop_requested;

static void on_usr1(int sig) { (void)sig; cycle_requested = 1; }
static void on_term(int sig) { (void)sig; stop_requested = 1; }

static void cycle(long mib)
{
    enum { MAXB = 4096 };
    static char *b[MAXB];
    long n = mib < MAXB ? mib : MAXB;
    for (long i = 0; i < n; i++) {
        b[i] = malloc(1 << 20);
        if (!b[i])
            abort();
        memset(b[i], 0x33, 1 << 20);
    }
    for (long i = 0; i < n; i++)
        free(b[i]);
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: holder LIVE_MIB CACHED_MIB SECONDS\n");
        return 2;
    }
    long live = atol(argv[1]), cached = atol(argv[2]), seconds = atol(argv[3]);
    signal(SIGUSR1, on_usr1);
    signal(SIGTERM, on_term);
    for (long i = 0; i < live * 16; i++) {
        char *p = malloc(65536);
        if (!p)
            abort();
        memset(p, 0x11, 65536); /* kept: the live heap */
    }
    cycle(cached);
    printf("ready\n");
    fflush(stdout);
    struct timespec t0, now, tick = {0, 50000000};
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        nanosleep(&tick, NULL);
        if (cycle_requested) {
            cycle_requested = 0;
            cycle(cached);
            printf("cycled\n");
            fflush(stdout);
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while (!stop_requested && now.tv_sec - t0.tv_sec < seconds);
    exit(0);
}
