/* bench_numa.c: node-local workload for `make bench-numa`, run inside the
 * 4-node qemu guest with each allocator preloaded in turn.
 * - one worker thread pinned to each node: keeps a working set of blocks
 *   (mostly small, some large), replaces random blocks round after round,
 *   touching what it allocates;
 * - a producer (first node) / consumer (last node) pair: the producer
 *   allocates and fills messages, the consumer reads and frees them and
 *   keeps a working set of its own.
 * At the end each thread measures, with move_pages(2) in query mode, the
 * share of the pages of its live blocks that are on its own node. Prints
 * one "BENCH" line per thread and a "SUMMARY" line. Times under TCG are
 * not hardware times: compare placement, not speed. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MAXN 64
#define PAGE 4096UL

static int nnodes;
static cpu_set_t node_cpus[MAXN];
static const char *alloc_name = "?";
static int rounds = 40;

static void read_topology(void)
{
    for (int n = 0; n < MAXN; n++) {
        char path[128], buf[256];
        snprintf(path, sizeof path, "/sys/devices/system/node/node%d/cpulist", n);
        FILE *f = fopen(path, "r");
        if (!f)
            break;
        CPU_ZERO(&node_cpus[n]);
        if (fgets(buf, sizeof buf, f)) {
            char *s = buf;
            while (*s >= '0' && *s <= '9') {
                int a = (int)strtol(s, &s, 10), b = a;
                if (*s == '-')
                    b = (int)strtol(s + 1, &s, 10);
                for (int c = a; c <= b; c++)
                    CPU_SET(c, &node_cpus[n]);
                if (*s == ',')
                    s++;
            }
        }
        fclose(f);
        nnodes = n + 1;
    }
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint32_t rnd(uint32_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

/* Pages of [p, p+size) on node / total resident, added to *on / *tot. */
static void locality(void *const *blocks, const size_t *sizes, int n, int node, long *on, long *tot)
{
    enum { B = 512 };
    void *pages[B];
    int status[B];
    int k = 0;
    for (int i = 0; i <= n; i++) {
        if (i < n && blocks[i]) {
            uintptr_t a = (uintptr_t)blocks[i] & ~(PAGE - 1);
            uintptr_t end = (uintptr_t)blocks[i] + sizes[i];
            for (; a < end; a += PAGE) {
                pages[k++] = (void *)a;
                if (k == B) {
                    if (syscall(SYS_move_pages, 0, (unsigned long)k, pages, NULL, status, 0) == 0)
                        for (int j = 0; j < k; j++)
                            if (status[j] >= 0) {
                                (*tot)++;
                                *on += status[j] == node;
                            }
                    k = 0;
                }
            }
        }
        if (i == n && k) {
            if (syscall(SYS_move_pages, 0, (unsigned long)k, pages, NULL, status, 0) == 0)
                for (int j = 0; j < k; j++)
                    if (status[j] >= 0) {
                        (*tot)++;
                        *on += status[j] == node;
                    }
        }
    }
}

static size_t pick_size(uint32_t *s)
{
    uint32_t r = rnd(s) % 1000;
    if (r < 900)
        return 16 + rnd(s) % 1024;          /* small */
    if (r < 990)
        return 4096 + rnd(s) % (60 * 1024); /* medium */
    return 128 * 1024 + rnd(s) % (384 * 1024); /* large */
}

enum { WS = 6000 };

typedef struct {
    const char *role;
    int node;
    void *b[WS];
    size_t sz[WS];
    long on, tot;
    uint64_t ns;
} worker;

static pthread_barrier_t start;

static void work_set_round(worker *w, uint32_t *seed, int replace)
{
    for (int k = 0; k < replace; k++) {
        int i = (int)(rnd(seed) % WS);
        free(w->b[i]);
        w->sz[i] = pick_size(seed);
        w->b[i] = malloc(w->sz[i]);
        memset(w->b[i], k, w->sz[i]);
    }
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    uint32_t seed = 0x9e3779b9u ^ (uint32_t)(w->node * 7919 + 1);
    pthread_barrier_wait(&start);
    uint64_t t0 = now_ns();
    for (int i = 0; i < WS; i++) {
        w->sz[i] = pick_size(&seed);
        w->b[i] = malloc(w->sz[i]);
        memset(w->b[i], 1, w->sz[i]);
    }
    for (int r = 0; r < rounds; r++)
        work_set_round(w, &seed, WS / 4);
    w->ns = now_ns() - t0;
    locality(w->b, w->sz, WS, w->node, &w->on, &w->tot);
    pthread_barrier_wait(&start); /* measured before anyone frees */
    for (int i = 0; i < WS; i++)
        free(w->b[i]);
    return NULL;
}

/* ---- producer / consumer ---- */

enum { RING = 1024 };
static void *_Atomic ring[RING];
static size_t ring_sz[RING];
static atomic_int done;

static void *producer_main(void *arg)
{
    worker *w = arg;
    uint32_t seed = 12345;
    pthread_barrier_wait(&start);
    uint64_t t0 = now_ns();
    long msgs = (long)rounds * 2000;
    unsigned head = 0;
    /* A working set of its own too, measured like the workers'. */
    for (int i = 0; i < WS; i++) {
        w->sz[i] = 16 + rnd(&seed) % 1024;
        w->b[i] = malloc(w->sz[i]);
        memset(w->b[i], 2, w->sz[i]);
    }
    for (long m = 0; m < msgs; m++) {
        size_t sz = 64 + rnd(&seed) % 2048;
        void *p = malloc(sz);
        memset(p, 3, sz);
        while (atomic_load_explicit(&ring[head % RING], memory_order_acquire))
            sched_yield();
        ring_sz[head % RING] = sz;
        atomic_store_explicit(&ring[head % RING], p, memory_order_release);
        head++;
        if (m % 64 == 0)
            work_set_round(w, &seed, 16);
    }
    atomic_store(&done, 1);
    w->ns = now_ns() - t0;
    locality(w->b, w->sz, WS, w->node, &w->on, &w->tot);
    pthread_barrier_wait(&start);
    for (int i = 0; i < WS; i++)
        free(w->b[i]);
    return NULL;
}

static void *consumer_main(void *arg)
{
    worker *w = arg;
    uint32_t seed = 54321;
    pthread_barrier_wait(&start);
    uint64_t t0 = now_ns();
    for (int i = 0; i < WS; i++) {
        w->sz[i] = 16 + rnd(&seed) % 1024;
        w->b[i] = malloc(w->sz[i]);
        memset(w->b[i], 4, w->sz[i]);
    }
    unsigned tail = 0;
    long got = 0;
    for (;;) {
        void *p = atomic_load_explicit(&ring[tail % RING], memory_order_acquire);
        if (!p) {
            if (atomic_load(&done) && !atomic_load_explicit(&ring[tail % RING], memory_order_acquire))
                break;
            sched_yield();
            continue;
        }
        volatile char c = ((char *)p)[ring_sz[tail % RING] - 1];
        (void)c;
        free(p);
        atomic_store_explicit(&ring[tail % RING], NULL, memory_order_release);
        tail++;
        /* the consumer's own allocations: where remote frees would land
         * if an allocator handed them to it */
        if (++got % 16 == 0)
            work_set_round(w, &seed, 8);
    }
    w->ns = now_ns() - t0;
    locality(w->b, w->sz, WS, w->node, &w->on, &w->tot);
    pthread_barrier_wait(&start);
    for (int i = 0; i < WS; i++)
        free(w->b[i]);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        alloc_name = argv[1];
    if (argc > 2)
        rounds = atoi(argv[2]);
    read_topology();
    int nodes_with_cpus[MAXN], nc = 0;
    for (int n = 0; n < nnodes; n++)
        if (CPU_COUNT(&node_cpus[n]) > 0)
            nodes_with_cpus[nc++] = n;
    if (nc < 2) {
        printf("BENCH-ERROR need >= 2 nodes with CPUs (have %d)\n", nc);
        return 1;
    }
    int nt = nc + 2;
    worker *w = calloc((size_t)nt, sizeof *w);
    pthread_t th[MAXN + 2];
    pthread_barrier_init(&start, NULL, (unsigned)nt);
    uint64_t t0 = now_ns();
    for (int i = 0; i < nt; i++) {
        void *(*fn)(void *) = worker_main;
        if (i < nc) {
            w[i].node = nodes_with_cpus[i];
            w[i].role = "worker";
        } else if (i == nc) {
            w[i].node = nodes_with_cpus[0];
            w[i].role = "producer";
            fn = producer_main;
        } else {
            w[i].node = nodes_with_cpus[nc - 1];
            w[i].role = "consumer";
            fn = consumer_main;
        }
        pthread_attr_t at;
        pthread_attr_init(&at);
        pthread_attr_setaffinity_np(&at, sizeof(cpu_set_t), &node_cpus[w[i].node]);
        pthread_create(&th[i], &at, fn, &w[i]);
        pthread_attr_destroy(&at);
    }
    for (int i = 0; i < nt; i++)
        pthread_join(th[i], NULL);
    uint64_t wall = now_ns() - t0;
    long on = 0, tot = 0;
    double minpct = 100.0;
    for (int i = 0; i < nt; i++) {
        double p = w[i].tot ? 100.0 * (double)w[i].on / (double)w[i].tot : 0.0;
        if (p < minpct)
            minpct = p;
        on += w[i].on;
        tot += w[i].tot;
        printf("BENCH alloc=%s thread=%s node=%d local_pct=%.2f pages=%ld ms=%.0f\n", alloc_name,
               w[i].role, w[i].node, p, w[i].tot, (double)w[i].ns / 1e6);
    }
    printf("SUMMARY alloc=%s local_pct=%.2f min_thread_pct=%.2f pages=%ld wall_ms=%.0f\n",
           alloc_name, tot ? 100.0 * (double)on / (double)tot : 0.0, minpct, tot,
           (double)wall / 1e6);
    return 0;
}
