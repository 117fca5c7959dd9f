/* numa_probe.c: placement checks run inside the multi-node qemu guest
 * (tests/numa/guest-init.sh), with the allocator under test preloaded.
 * Each subcommand prints "CHECK <name> PASS|FAIL <detail>" lines and
 * "INFO ..." lines; the exit status is 1 when a check failed.
 * Needs nothing but libc: node CPUs from sysfs, page nodes from
 * move_pages(2) in query mode.
 *
 *   numa_probe local                 pinned threads get pages of their node
 *   numa_probe remote                remote frees reused only on the home node
 *   numa_probe interleave            pages spread evenly over all nodes
 *   numa_probe allowed LIST NAME     no page outside the node list
 *   numa_probe migrate               a moved thread allocates on its new node
 *   numa_probe hold SECONDS          allocates per node, prints READY, waits
 *   numa_probe unavailable           works when the NUMA syscalls say ENOSYS */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MAXN 64
#define PAGE 4096UL

static int nnodes;            /* online nodes (ids 0..nnodes-1 in qemu) */
static cpu_set_t node_cpus[MAXN];
static int failures;

/* ---- helpers ---- */

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

static void pin(int node)
{
    if (pthread_setaffinity_np(pthread_self(), sizeof(cpu_set_t), &node_cpus[node]) != 0) {
        printf("INFO cannot pin to node %d\n", node);
        return;
    }
    sched_yield();
}

static int current_node(void)
{
    unsigned cpu, node;
    if (syscall(SYS_getcpu, &cpu, &node, NULL) != 0)
        return -1;
    return (int)node;
}

/* Page counts per node of the pages in [p, p+size). */
typedef struct {
    long n[MAXN];
    long total;
} counts;

static void count_range(const void *p, size_t size, counts *c)
{
    enum { B = 512 };
    void *pages[B];
    int status[B];
    uintptr_t a = (uintptr_t)p & ~(PAGE - 1), end = (uintptr_t)p + size;
    while (a < end) {
        unsigned long k = 0;
        for (; k < B && a < end; a += PAGE)
            pages[k++] = (void *)a;
        if (syscall(SYS_move_pages, 0, k, pages, NULL, status, 0) < 0) {
            printf("INFO move_pages: %s\n", strerror(errno));
            return;
        }
        for (unsigned long i = 0; i < k; i++)
            if (status[i] >= 0 && status[i] < MAXN) {
                c->n[status[i]]++;
                c->total++;
            }
    }
}

/* One page per block (the page of its first byte), for small blocks. */
static void count_blocks(void **b, int nb, counts *c)
{
    for (int i = 0; i < nb; i++)
        count_range(b[i], 1, c);
}

static double pct(long part, long total)
{
    return total ? 100.0 * (double)part / (double)total : 0.0;
}

static void check(bool ok, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void check(bool ok, const char *name, const char *fmt, ...)
{
    char detail[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    printf("CHECK %s %s %s\n", name, ok ? "PASS" : "FAIL", detail);
    fflush(stdout);
    if (!ok)
        failures++;
}

static void touch(void *p, size_t size)
{
    memset(p, 0x5a, size);
}

/* ---- local: threads pinned to node k get node k's pages ---- */

enum { SMALL_N = 16384, LARGE_N = 24, HUGE_N = 3 };
static const size_t LARGE_SZ = 192 * 1024, HUGE_SZ = 6 << 20;

typedef struct {
    int node;
    void *small[SMALL_N];
    void *large[LARGE_N];
    void *huge[HUGE_N];
    counts cs, cl, ch;
} local_arg;

static pthread_barrier_t bar;

static void alloc_set(local_arg *a)
{
    for (int i = 0; i < SMALL_N; i++) {
        size_t sz = 16 + (size_t)(i % 32) * 16; /* 16..512 bytes */
        a->small[i] = malloc(sz);
        touch(a->small[i], sz);
    }
    for (int i = 0; i < LARGE_N; i++) {
        a->large[i] = malloc(LARGE_SZ);
        touch(a->large[i], LARGE_SZ);
    }
    for (int i = 0; i < HUGE_N; i++) {
        a->huge[i] = malloc(HUGE_SZ);
        touch(a->huge[i], HUGE_SZ);
    }
}

static void count_set(local_arg *a)
{
    memset(&a->cs, 0, sizeof(counts) * 3);
    count_blocks(a->small, SMALL_N, &a->cs);
    for (int i = 0; i < LARGE_N; i++)
        count_range(a->large[i], LARGE_SZ, &a->cl);
    for (int i = 0; i < HUGE_N; i++)
        count_range(a->huge[i], HUGE_SZ, &a->ch);
}

static void free_set(local_arg *a)
{
    for (int i = 0; i < SMALL_N; i++)
        free(a->small[i]);
    for (int i = 0; i < LARGE_N; i++)
        free(a->large[i]);
    for (int i = 0; i < HUGE_N; i++)
        free(a->huge[i]);
}

static void *local_thread(void *p)
{
    local_arg *a = p;
    pin(a->node);
    pthread_barrier_wait(&bar);
    alloc_set(a);
    count_set(a);
    pthread_barrier_wait(&bar); /* all counted before anything is freed */
    free_set(a);
    return NULL;
}

/* Starts one thread per node with CPUs, already pinned (the attribute), so
 * that its first allocation happens on its node. */
static int run_per_node(void *(*fn)(void *), local_arg **args)
{
    pthread_t th[MAXN];
    int nt = 0;
    for (int n = 0; n < nnodes; n++)
        if (CPU_COUNT(&node_cpus[n]) > 0)
            nt++;
    pthread_barrier_init(&bar, NULL, (unsigned)nt);
    int k = 0;
    for (int n = 0; n < nnodes; n++) {
        if (CPU_COUNT(&node_cpus[n]) == 0)
            continue;
        args[k] = calloc(1, sizeof(local_arg));
        args[k]->node = n;
        pthread_attr_t at;
        pthread_attr_init(&at);
        pthread_attr_setaffinity_np(&at, sizeof(cpu_set_t), &node_cpus[n]);
        pthread_create(&th[k], &at, fn, args[k]);
        pthread_attr_destroy(&at);
        k++;
    }
    for (int i = 0; i < k; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&bar);
    return k;
}

static void cmd_local(void)
{
    local_arg *args[MAXN];
    int k = run_per_node(local_thread, args);
    for (int i = 0; i < k; i++) {
        local_arg *a = args[i];
        const char *kinds[] = {"small", "large", "huge"};
        counts *cc[] = {&a->cs, &a->cl, &a->ch};
        for (int j = 0; j < 3; j++) {
            char name[64];
            snprintf(name, sizeof name, "local_%s_node%d", kinds[j], a->node);
            double p = pct(cc[j]->n[a->node], cc[j]->total);
            check(cc[j]->total > 0 && p >= 99.0, name, "%.2f%% of %ld pages on node %d (need >= 99%%)",
                  p, cc[j]->total, a->node);
        }
        free(a);
    }
}

/* ---- remote: blocks freed on another node are not reused there ---- */

enum { RN = 4096, RL = 16 };
static const size_t RSMALL = 256, RLARGE = 128 * 1024;
static void *rblocks[RN + RL];
static pthread_barrier_t rbar;
static int home_node, other_node;
static counts reuse_counts;
static long reused_by_other;

static bool was_home_block(void *p)
{
    for (int i = 0; i < RN + RL; i++)
        if (rblocks[i] == p)
            return true;
    return false;
}

static void *remote_home(void *arg)
{
    (void)arg;
    for (int i = 0; i < RN; i++) {
        rblocks[i] = malloc(RSMALL);
        touch(rblocks[i], RSMALL);
    }
    for (int i = 0; i < RL; i++) {
        rblocks[RN + i] = malloc(RLARGE);
        touch(rblocks[RN + i], RLARGE);
    }
    pthread_barrier_wait(&rbar); /* 1: blocks ready */
    pthread_barrier_wait(&rbar); /* 2: other thread freed and reallocated */
    return NULL;
}

static void *remote_other(void *arg)
{
    (void)arg;
    void *warm = malloc(64); /* this thread's heap exists before the frees */
    pthread_barrier_wait(&rbar);
    for (int i = 0; i < RN + RL; i++)
        free(rblocks[i]);
    /* Allocate the same sizes several times over: a thread that keeps
     * the remote blocks would hand them out now. */
    void *mine[2 * (RN + RL)];
    int n = 0;
    for (int r = 0; r < 2; r++) {
        for (int i = 0; i < RN; i++)
            mine[n++] = malloc(RSMALL);
        for (int i = 0; i < RL; i++)
            mine[n++] = malloc(RLARGE);
    }
    for (int i = 0; i < n; i++) {
        if (was_home_block(mine[i]))
            reused_by_other++;
        size_t sz = (i % (RN + RL)) < RN ? RSMALL : RLARGE;
        touch(mine[i], sz);
        count_range(mine[i], sz < PAGE ? 1 : sz, &reuse_counts);
    }
    for (int i = 0; i < n; i++)
        free(mine[i]);
    free(warm);
    pthread_barrier_wait(&rbar);
    return NULL;
}

/* Producer on the home node, consumer on the other: the consumer frees
 * each message and allocates blocks of its own of similar sizes, as a
 * queue-fed worker does. None of its own blocks may be a page of the
 * producer's node. */
enum { PC_MSGS = 60000, PC_RING = 256, PC_OWN = 4096 };
static void *_Atomic pc_ring[PC_RING];
static atomic_int pc_done;
static counts pc_own;
static long pc_own_blocks;

static void *pc_producer(void *arg)
{
    (void)arg;
    unsigned head = 0;
    for (long m = 0; m < PC_MSGS; m++) {
        size_t sz = 32 + (size_t)(m * 7919 % 2016);
        char *p = malloc(sz);
        touch(p, sz);
        while (atomic_load_explicit(&pc_ring[head % PC_RING], memory_order_acquire))
            sched_yield();
        atomic_store_explicit(&pc_ring[head % PC_RING], p, memory_order_release);
        head++;
    }
    atomic_store(&pc_done, 1);
    return NULL;
}

static void *pc_consumer(void *arg)
{
    (void)arg;
    static void *own[PC_OWN];
    unsigned tail = 0, k = 0;
    for (;;) {
        void *p = atomic_load_explicit(&pc_ring[tail % PC_RING], memory_order_acquire);
        if (!p) {
            if (atomic_load(&pc_done) &&
                !atomic_load_explicit(&pc_ring[tail % PC_RING], memory_order_acquire))
                break;
            sched_yield();
            continue;
        }
        free(p);
        atomic_store_explicit(&pc_ring[tail % PC_RING], NULL, memory_order_release);
        tail++;
        /* one block of its own per message, replacing an older one */
        size_t sz = 32 + (size_t)(tail * 104729u % 2016);
        free(own[k]);
        own[k] = malloc(sz);
        touch(own[k], sz);
        k = (k + 1) % PC_OWN;
    }
    for (int i = 0; i < PC_OWN; i++)
        if (own[i]) {
            count_range(own[i], 1, &pc_own);
            pc_own_blocks++;
        }
    for (int i = 0; i < PC_OWN; i++)
        free(own[i]);
    return NULL;
}

static void cmd_remote(void)
{
    home_node = 0;
    other_node = nnodes - 1;
    pthread_barrier_init(&rbar, NULL, 2);
    pthread_t a, b;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setaffinity_np(&at, sizeof(cpu_set_t), &node_cpus[home_node]);
    pthread_create(&a, &at, remote_home, NULL);
    pthread_attr_setaffinity_np(&at, sizeof(cpu_set_t), &node_cpus[other_node]);
    pthread_create(&b, &at, remote_other, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    check(reused_by_other == 0, "remote_free_not_reused_off_node",
          "%ld of %d blocks freed by node %d's thread (allocated on node %d) were handed "
          "back to it (need 0)",
          reused_by_other, 2 * (RN + RL), other_node, home_node);
    double p = pct(reuse_counts.n[other_node], reuse_counts.total);
    check(p >= 99.0, "remote_free_then_alloc_local", "%.2f%% of %ld pages of node %d's new blocks on node %d (need >= 99%%)", p,
          reuse_counts.total, other_node, other_node);

    pthread_attr_setaffinity_np(&at, sizeof(cpu_set_t), &node_cpus[home_node]);
    pthread_create(&a, &at, pc_producer, NULL);
    pthread_attr_setaffinity_np(&at, sizeof(cpu_set_t), &node_cpus[other_node]);
    pthread_create(&b, &at, pc_consumer, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    pthread_attr_destroy(&at);
    long off = pc_own.total - pc_own.n[other_node];
    check(pc_own.n[home_node] == 0 && pc_own.total > 0, "remote_queue_consumer_blocks_local",
          "consumer on node %d: %ld of its %ld own blocks on the producer's node %d, %ld off its node "
          "(need 0 on node %d)",
          other_node, pc_own.n[home_node], pc_own_blocks, home_node, off, home_node);
}

/* Counts of each node within 10% of an even share. */
static bool even_enough(const counts *c, const char *what, char *detail, size_t len)
{
    double even = (double)c->total / nnodes;
    bool ok = c->total > 0;
    int at = snprintf(detail, len, "%s: %ld pages:", what, c->total);
    for (int n = 0; n < nnodes; n++) {
        at += snprintf(detail + at, len - (size_t)at, " node%d=%ld", n, c->n[n]);
        if ((double)c->n[n] < 0.9 * even || (double)c->n[n] > 1.1 * even)
            ok = false;
    }
    snprintf(detail + at, len - (size_t)at, " (each within 10%% of %.0f)", even);
    return ok;
}

/* Enough of each kind that chunk granularity (2 MiB, one huge page) does
 * not decide the result: 32 chunks of small blocks, 48 MiB of large. */
static void cmd_interleave(void)
{
    enum { N = 48, NS = 65536 };
    static void *b[N], *s[NS];
    size_t sz = 1 << 20;
    counts c = {{0}, 0}, cs = {{0}, 0};
    for (int i = 0; i < N; i++) {
        b[i] = malloc(sz);
        touch(b[i], sz);
    }
    for (int i = 0; i < NS; i++) {
        s[i] = malloc(1024);
        touch(s[i], 1024);
    }
    for (int i = 0; i < N; i++)
        count_range(b[i], sz, &c);
    /* one page in four holds the start of a 1 KiB block: count each
     * page once */
    for (int i = 0; i < NS; i++)
        if (((uintptr_t)s[i] & (PAGE - 1)) < 1024)
            count_range(s[i], 1, &cs);
    char detail[512];
    check(even_enough(&c, "1 MiB blocks", detail, sizeof detail), "interleave_large_even", "%s", detail);
    check(even_enough(&cs, "1 KiB blocks", detail, sizeof detail), "interleave_small_even", "%s", detail);
    for (int i = 0; i < N; i++)
        free(b[i]);
    for (int i = 0; i < NS; i++)
        free(s[i]);
}

/* ---- allowed: nothing outside the allowed nodes ---- */

static void cmd_allowed(const char *list, const char *name)
{
    bool allowed[MAXN] = {false};
    for (const char *s = list; *s;) {
        char *e;
        int a = (int)strtol(s, &e, 10), b = a;
        if (*e == '-')
            b = (int)strtol(e + 1, &e, 10);
        for (int n = a; n <= b && n < MAXN; n++)
            allowed[n] = true;
        s = *e == ',' ? e + 1 : e + strlen(e);
    }
    local_arg *args[MAXN];
    int k = run_per_node(local_thread, args);
    counts all = {{0}, 0};
    for (int i = 0; i < k; i++) {
        counts *cc[] = {&args[i]->cs, &args[i]->cl, &args[i]->ch};
        for (int j = 0; j < 3; j++)
            for (int n = 0; n < MAXN; n++) {
                all.n[n] += cc[j]->n[n];
                all.total += cc[j]->n[n];
            }
        free(args[i]);
    }
    long outside = 0;
    char detail[512];
    int at = snprintf(detail, sizeof detail, "allowed %s, %ld pages:", list, all.total);
    for (int n = 0; n < nnodes; n++) {
        at += snprintf(detail + at, sizeof detail - (size_t)at, " node%d=%ld", n, all.n[n]);
        if (!allowed[n])
            outside += all.n[n];
    }
    check(all.total > 0 && outside == 0, name, "%s; %ld outside (need 0)", detail, outside);
}

/* ---- migrate: a thread moved to another node allocates there ---- */

static void *migrate_thread(void *arg)
{
    (void)arg;
    int from = 0, to = nnodes - 1;
    pin(from);
    void *before[4096];
    for (int i = 0; i < 4096; i++) {
        before[i] = malloc(128);
        touch(before[i], 128);
    }
    void *lb = malloc(LARGE_SZ);
    touch(lb, LARGE_SZ);
    if (sched_setaffinity(0, sizeof(cpu_set_t), &node_cpus[to]) != 0)
        printf("INFO sched_setaffinity: %s\n", strerror(errno));
    for (int i = 0; i < 1000 && current_node() != to; i++)
        sched_yield();
    printf("INFO migrate: now on node %d\n", current_node());
    /* A bounded number of slow paths to notice the move: 1 MiB of the same
     * class and one large block, kept (not measured). */
    void *warm[8192];
    for (int i = 0; i < 8192; i++) {
        warm[i] = malloc(128);
        touch(warm[i], 128);
    }
    void *wl = malloc(LARGE_SZ);
    touch(wl, LARGE_SZ);
    void *after[16384];
    for (int i = 0; i < 16384; i++) {
        after[i] = malloc(128);
        touch(after[i], 128);
    }
    void *la[8];
    counts cl = {{0}, 0}, cs = {{0}, 0};
    for (int i = 0; i < 8; i++) {
        la[i] = malloc(LARGE_SZ);
        touch(la[i], LARGE_SZ);
        count_range(la[i], LARGE_SZ, &cl);
    }
    count_blocks(after, 16384, &cs);
    double ps = pct(cs.n[to], cs.total), pl = pct(cl.n[to], cl.total);
    check(ps >= 99.0, "migrate_small", "after moving node %d -> %d: %.2f%% of %ld pages on node %d (need >= 99%%)", from, to,
          ps, cs.total, to);
    check(pl >= 99.0, "migrate_large", "after moving node %d -> %d: %.2f%% of %ld pages on node %d (need >= 99%%)", from, to,
          pl, cl.total, to);
    for (int i = 0; i < 4096; i++)
        free(before[i]);
    for (int i = 0; i < 8192; i++)
        free(warm[i]);
    for (int i = 0; i < 16384; i++)
        free(after[i]);
    for (int i = 0; i < 8; i++)
        free(la[i]);
    free(lb);
    free(wl);
    return NULL;
}

static void cmd_migrate(void)
{
    pthread_t t;
    pthread_create(&t, NULL, migrate_thread, NULL);
    pthread_join(t, NULL);
}

/* ---- hold: memory on every node, for xalloc-stat vs numa_maps ---- */

static int hold_seconds;

static void *hold_thread(void *p)
{
    local_arg *a = p;
    alloc_set(a);
    pthread_barrier_wait(&bar);
    sleep((unsigned)hold_seconds);
    return NULL;
}

static void *hold_main(void *p)
{
    (void)p;
    return NULL;
}

static void cmd_hold(int seconds)
{
    hold_seconds = seconds;
    pthread_t th[MAXN];
    int k = 0;
    for (int n = 0; n < nnodes; n++)
        if (CPU_COUNT(&node_cpus[n]) > 0)
            k++;
    pthread_barrier_init(&bar, NULL, (unsigned)k + 1);
    int i = 0;
    for (int n = 0; n < nnodes; n++) {
        if (CPU_COUNT(&node_cpus[n]) == 0)
            continue;
        local_arg *a = calloc(1, sizeof(local_arg));
        a->node = n;
        pthread_attr_t at;
        pthread_attr_init(&at);
        pthread_attr_setaffinity_np(&at, sizeof(cpu_set_t), &node_cpus[n]);
        pthread_create(&th[i++], &at, hold_thread, a);
        pthread_attr_destroy(&at);
    }
    pthread_barrier_wait(&bar);
    printf("READY %d\n", (int)getpid());
    fflush(stdout);
    (void)hold_main;
    for (int j = 0; j < i; j++)
        pthread_join(th[j], NULL);
}

/* ---- NUMA unavailable: the NUMA system calls fail with ENOSYS ---- */

/* A kernel without NUMA support, as libnuma sees it (numa_available() is
 * -1 when get_mempolicy says ENOSYS), on a machine whose sysfs still shows
 * nodes: a seccomp filter makes the NUMA system calls fail, then the probe
 * runs itself again with the allocator preloaded (argv[2..]). */
static int cmd_unavailable(char **argv)
{
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_get_mempolicy, 4, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_set_mempolicy, 3, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_mbind, 2, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_move_pages, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA)),
    };
    struct sock_fprog prog = {(unsigned short)(sizeof f / sizeof f[0]), f};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
        syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0) {
        check(false, "numa_unavailable_works", "cannot install the seccomp filter: %s", strerror(errno));
        return 1;
    }
    const char *lib = getenv("XA_PRELOAD_CHILD");
    if (lib)
        setenv("LD_PRELOAD", lib, 1);
    execv(argv[0], (char *[]){argv[0], "unavailable-child", NULL});
    check(false, "numa_unavailable_works", "exec: %s", strerror(errno));
    return 1;
}

/* Threads on every node allocate, fill and verify blocks of all kinds. */
static void *unavail_thread(void *p)
{
    local_arg *a = p;
    alloc_set(a);
    long bad = 0;
    for (int i = 0; i < SMALL_N; i++)
        bad += ((unsigned char *)a->small[i])[0] != 0x5a;
    for (int i = 0; i < LARGE_N; i++)
        bad += ((unsigned char *)a->large[i])[LARGE_SZ - 1] != 0x5a;
    for (int i = 0; i < HUGE_N; i++)
        bad += ((unsigned char *)a->huge[i])[HUGE_SZ - 1] != 0x5a;
    free_set(a);
    a->cs.total = bad;
    return NULL;
}

static void cmd_unavailable_child(void)
{
    int mode;
    long rc = syscall(SYS_get_mempolicy, &mode, NULL, 0, NULL, 0);
    printf("INFO get_mempolicy in the child: %ld (%s)\n", rc, rc ? strerror(errno) : "ok");
    local_arg *args[MAXN];
    int k = run_per_node(unavail_thread, args);
    long bad = 0;
    for (int i = 0; i < k; i++) {
        bad += args[i]->cs.total;
        free(args[i]);
    }
    check(rc != 0 && errno == ENOSYS && bad == 0, "numa_unavailable_works",
          "NUMA system calls fail with ENOSYS; %d threads allocated, filled and checked small, "
          "large and huge blocks: %ld bad",
          k, bad);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    read_topology();
    if (argc < 2 || nnodes < 2) {
        printf("CHECK probe_setup FAIL need a subcommand and >= 2 nodes (have %d)\n", nnodes);
        return 1;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "local"))
        cmd_local();
    else if (!strcmp(cmd, "remote"))
        cmd_remote();
    else if (!strcmp(cmd, "interleave"))
        cmd_interleave();
    else if (!strcmp(cmd, "allowed") && argc == 4)
        cmd_allowed(argv[2], argv[3]);
    else if (!strcmp(cmd, "migrate"))
        cmd_migrate();
    else if (!strcmp(cmd, "unavailable"))
        return cmd_unavailable(argv);
    else if (!strcmp(cmd, "unavailable-child"))
        cmd_unavailable_child();
    else if (!strcmp(cmd, "hold") && argc == 3)
        cmd_hold(atoi(argv[2]));
    else {
        printf("CHECK probe_usage FAIL unknown subcommand %s\n", cmd);
        return 2;
    }
    return failures ? 1 : 0;
}
