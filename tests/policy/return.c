/* return.c: memory-return and footprint probe, run by tests/policy/return.sh
 * under LD_PRELOAD (or without it, for glibc's figures). Modes (argv[1]):
 *   massfree T    T threads allocate 384 MiB of 16-256 KiB blocks and small
 *                 ones; then each frees a random 90%, mostly blocks other
 *                 threads allocated; prints VmRSS right after the last free
 *                 (no sleep, no further allocation)
 *   idle MS       one thread: 256 MiB of 64-byte objects, 90% freed at random,
 *                 128 MiB of 200-byte objects allocated and all freed; then
 *                 sleeps MS + 700 ms without calling the allocator; prints
 *                 VmRSS right after the frees and after the sleep, and the
 *                 number of threads of the process at each point
 *   forkidle MS   the idle case in a forked child of a threaded parent
 *   quiet         a short command: 1 MiB of small blocks allocated and freed,
 *                 then a pause; prints the number of purger threads (it
 *                 must not have been started)
 *   dense         a dense 64 MiB heap of 512-byte blocks; prints the
 *                 AnonHugePages of the mappings that hold it
 *   grow          the string builder: 8 buffers grown side by side with
 *                 realloc, 128 bytes at a time, to 4 MiB each, 3 rounds;
 *                 prints VmHWM and verifies the contents
 *   service T     T threads, each keeping about 400 KiB live in small
 *                 blocks with sparse frees, then all park; prints VmRSS and
 *                 the process's AnonHugePages while they are parked
 * Output lines are "key value" pairs. Pointer arrays are mmap'ed so they do
 * not go through the allocator under test. */
#define _GNU_SOURCE
#include <dirent.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc.h"

/* Threads of this process named xalloc-purger (the purger thread). */
static int task_count(void)
{
    DIR *d = opendir("/proc/self/task");
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char path[300], name[64] = "";
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (f && fgets(name, sizeof name, f) && !strncmp(name, "xalloc-purger", 13))
            n++;
        if (f)
            fclose(f);
    }
    if (d)
        closedir(d);
    return n;
}

static void *map_array(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    return p;
}

static uint64_t xorshift(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void fill(char *p, size_t n, unsigned char v)
{
    memset(p, v, n);
}

static int check(const char *p, size_t n, unsigned char v)
{
    for (size_t k = 0; k < n; k += 512)
        if ((unsigned char)p[k] != v)
            return 0;
    return 1;
}

/* ---- massfree ---- */

static char **mf_ptr;
static uint32_t *mf_size;
static size_t mf_n_per;
static unsigned mf_threads;
static pthread_barrier_t mf_barrier;

static void *mf_main(void *arg)
{
    unsigned t = (unsigned)(uintptr_t)arg;
    uint64_t rng = 0x9e3779b97f4a7c15ULL * (t + 1);
    static const uint32_t big[] = {16384, 24576, 32768, 49152, 65536, 98304, 131072, 262144};
    size_t base = t * mf_n_per;
    for (size_t i = 0; i < mf_n_per; i++) {
        uint64_t r = xorshift(&rng);
        uint32_t s = (r & 3) ? (uint32_t)(32 + (r >> 8) % 1000) : big[(r >> 4) % 8];
        mf_ptr[base + i] = malloc(s);
        mf_size[base + i] = s;
        fill(mf_ptr[base + i], s, (unsigned char)(base + i));
    }
    pthread_barrier_wait(&mf_barrier);
    /* Thread t frees 90% of the blocks of thread (t + 1) % T. */
    size_t victim = ((t + 1) % mf_threads) * mf_n_per;
    for (size_t i = 0; i < mf_n_per; i++) {
        if (xorshift(&rng) % 10 == 0)
            continue;
        size_t k = victim + i;
        if (!check(mf_ptr[k], mf_size[k], (unsigned char)k)) {
            printf("corrupt block %zu\n", k);
            exit(1);
        }
        free(mf_ptr[k]);
        mf_ptr[k] = NULL;
    }
    return NULL;
}

static int mode_massfree(unsigned threads)
{
    mf_threads = threads;
    /* About 384 MiB in all: a quarter of the blocks average 100 KiB. */
    size_t total_n = (384u << 20) / 25000;
    mf_n_per = total_n / threads;
    mf_ptr = map_array(total_n * sizeof *mf_ptr);
    mf_size = map_array(total_n * sizeof *mf_size);
    pthread_barrier_init(&mf_barrier, NULL, threads);
    pthread_t tid[64];
    for (unsigned t = 0; t < threads; t++)
        pthread_create(&tid[t], NULL, mf_main, (void *)(uintptr_t)t);
    for (unsigned t = 0; t < threads; t++)
        pthread_join(tid[t], NULL);
    long after = status_kb("VmRSS");
    size_t live = 0;
    for (size_t k = 0; k < mf_n_per * threads; k++)
        if (mf_ptr[k])
            live += mf_size[k];
    printf("live_kb %zu\npeak_kb %ld\nafter_kb %ld\n", live / 1024, status_kb("VmHWM"), after);
    return 0;
}

/* ---- idle ---- */

static int idle_case(long decay_ms)
{
    uint64_t rng = 12345;
    size_t n64 = (256u << 20) / 64, n200 = (128u << 20) / 200;
    char **p = map_array(n64 * sizeof *p);
    for (size_t i = 0; i < n64; i++) {
        p[i] = malloc(64);
        p[i][0] = (char)i;
    }
    for (size_t i = 0; i < n64; i++)
        if (xorshift(&rng) % 10) {
            free(p[i]);
            p[i] = NULL;
        }
    char **q = map_array(n200 * sizeof *q);
    for (size_t i = 0; i < n200; i++) {
        q[i] = malloc(200);
        memset(q[i], 1, 200);
    }
    long peak = status_kb("VmHWM");
    for (size_t i = 0; i < n200; i++)
        free(q[i]);
    size_t live = 0;
    for (size_t i = 0; i < n64; i++)
        live += p[i] ? 64 : 0;
    long after = status_kb("VmRSS");
    int tasks_busy = task_count();
    /* No allocator call from here on. */
    usleep((useconds_t)(decay_ms + 700) * 1000);
    long idle = status_kb("VmRSS");
    printf("live_kb %zu\npeak_kb %ld\nafter_kb %ld\nidle_kb %ld\ntasks_after %d\ntasks_idle %d\n",
           live / 1024, peak, after, idle, tasks_busy, task_count());
    for (size_t i = 0; i < n64; i++)
        if (p[i] && p[i][0] != (char)i) {
            printf("corrupt block %zu\n", i);
            return 1;
        }
    return 0;
}

static void *spin_alloc(void *arg)
{
    volatile int *stop = arg;
    while (!*stop) {
        void *x = malloc(100);
        free(x);
        usleep(1000);
    }
    return NULL;
}

static int mode_forkidle(long decay_ms)
{
    static volatile int stop;
    pthread_t t;
    pthread_create(&t, NULL, spin_alloc, (void *)&stop);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0)
        _exit(idle_case(decay_ms));
    int st = 0;
    waitpid(pid, &st, 0);
    stop = 1;
    pthread_join(t, NULL);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

static int mode_quiet(void)
{
    void *p[1024];
    for (int i = 0; i < 1024; i++)
        p[i] = malloc(1024);
    for (int i = 0; i < 1024; i++)
        free(p[i]);
    usleep(300 * 1000);
    printf("tasks %d\n", task_count());
    return 0;
}

static int mode_dense(void)
{
    size_t n = (64u << 20) / 512;
    char **p = map_array(n * sizeof *p);
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (size_t i = 0; i < n; i++) {
        p[i] = malloc(512);
        memset(p[i], 3, 512);
        uintptr_t a = (uintptr_t)p[i];
        lo = a < lo ? a : lo;
        hi = a + 512 > hi ? a + 512 : hi;
    }
    printf("anon_huge_kb %ld\n", anon_huge_kb_in(lo, hi));
    return 0;
}

/* ---- grow ---- */

static int mode_grow(void)
{
    enum { B = 8 };
    const size_t target = (size_t)4 << 20;
    for (int round = 0; round < 3; round++) {
        char *buf[B] = {0};
        size_t len[B] = {0};
        for (size_t step = 0; len[B - 1] < target; step++) {
            for (int b = 0; b < B; b++) {
                size_t n = len[b] + 128;
                char *q = realloc(buf[b], n);
                if (!q)
                    return 1;
                memset(q + len[b], (int)(b + step), 128);
                buf[b] = q;
                len[b] = n;
            }
        }
        for (int b = 0; b < B; b++) {
            for (size_t k = 0; k < len[b]; k += 128)
                if (buf[b][k] != (char)(b + k / 128)) {
                    printf("corrupt buffer %d at %zu\n", b, k);
                    return 1;
                }
            free(buf[b]);
        }
    }
    printf("peak_kb %ld\n", status_kb("VmHWM"));
    return 0;
}

/* ---- service ---- */

static pthread_barrier_t sv_parked, sv_done;

static void *sv_main(void *arg)
{
    uint64_t rng = 7 + (uintptr_t)arg;
    enum { N = 2000 };
    char *keep[N];
    /* Rounds of requests: each allocates a few blocks and keeps some;
     * sparse frees leave holes, as a service's caches do. */
    for (int i = 0; i < N; i++) {
        size_t s = 16 + xorshift(&rng) % 400;
        keep[i] = malloc(s);
        memset(keep[i], 1, s);
        void *tmp[4];
        for (int k = 0; k < 4; k++)
            tmp[k] = malloc(16 + xorshift(&rng) % 4000);
        for (int k = 0; k < 4; k++)
            free(tmp[k]);
        if (i % 3 == 0) {
            int j = (int)(xorshift(&rng) % (uint64_t)(i + 1));
            free(keep[j]);
            keep[j] = malloc(16 + xorshift(&rng) % 400);
        }
    }
    pthread_barrier_wait(&sv_parked);
    pthread_barrier_wait(&sv_done);
    for (int i = 0; i < N; i++)
        free(keep[i]);
    return NULL;
}

static int mode_service(unsigned threads, long park_ms)
{
    pthread_t tid[64];
    pthread_barrier_init(&sv_parked, NULL, threads + 1);
    pthread_barrier_init(&sv_done, NULL, threads + 1);
    for (unsigned t = 0; t < threads; t++)
        pthread_create(&tid[t], NULL, sv_main, (void *)(uintptr_t)t);
    pthread_barrier_wait(&sv_parked);
    usleep((useconds_t)park_ms * 1000);
    printf("rss_kb %ld\nanon_huge_kb %ld\n", status_kb("VmRSS"), anon_huge_kb_in(0, UINTPTR_MAX));
    pthread_barrier_wait(&sv_done);
    for (unsigned t = 0; t < threads; t++)
        pthread_join(tid[t], NULL);
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    long arg = argc > 2 ? atol(argv[2]) : 0;
    setvbuf(stdout, NULL, _IONBF, 0);
    if (!strcmp(mode, "massfree"))
        return mode_massfree(arg > 0 && arg <= 64 ? (unsigned)arg : 8);
    if (!strcmp(mode, "idle"))
        return idle_case(arg);
    if (!strcmp(mode, "forkidle"))
        return mode_forkidle(arg);
    if (!strcmp(mode, "quiet"))
        return mode_quiet();
    if (!strcmp(mode, "dense"))
        return mode_dense();
    if (!strcmp(mode, "grow"))
        return mode_grow();
    if (!strcmp(mode, "service"))
        return mode_service(arg > 0 && arg <= 64 ? (unsigned)arg : 32, argc > 3 ? atol(argv[3]) : 1500);
    fprintf(stderr, "usage: return massfree|idle|forkidle|quiet|dense|grow|service [arg]\n");
    return 2;
}
