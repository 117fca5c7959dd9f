/* check_stats_live.c: the library's statistics, run under
 * LD_PRELOAD=build/libxalloc.so.1 (make check-stats-live): exact counts
 * after known allocations, resident against VmRSS, the published file
 * (mode, owner, contents, fork, exit), a reader hammering the file while
 * four threads allocate, xalloc_stats_print, mallinfo2. Each Check test
 * runs in its own forked process, which exercises the fork child path. */
#define _GNU_SOURCE
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "statfile.h"
#include "xalloc.h"
#include "xalloc_stats.h"

static struct xalloc_stats before, after; /* 40 KiB each: static */

static int class_of(const struct xalloc_stats *s, size_t size)
{
    for (unsigned i = 0; i < s->classes_count && i < XALLOC_STATS_MAX_CLASSES; i++)
        if (s->classes[i].size == size)
            return (int)i;
    return -1;
}

static uint64_t vmrss_bytes(void)
{
    char line[256];
    uint64_t kb = 0;
    FILE *f = fopen("/proc/self/status", "re");
    ck_assert_ptr_nonnull(f);
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %lu kB", &kb) == 1)
            break;
    fclose(f);
    return kb * 1024;
}

/* Enough slow-path allocations for the core to tick (it ticks every few
 * refills), so a fresh fork child makes its file. */
static void churn(void)
{
    static void *p[4096];
    for (int r = 0; r < 4; r++) {
        for (int i = 0; i < 4096; i++)
            p[i] = malloc((size_t)(16 + (i % 64) * 48));
        for (int i = 0; i < 4096; i++)
            free(p[i]);
    }
}

static bool wait_for_file(pid_t pid, struct xs_file *f, int ms)
{
    char err[512];
    for (int i = 0; i < ms / 10; i++) {
        if (xs_open_pid(pid, NULL, false, f, NULL, 0, err, sizeof err) == XS_OK)
            return true;
        churn();
        usleep(10000);
    }
    return false;
}

START_TEST(test_library_is_preloaded)
{
    /* Guards against a run without LD_PRELOAD that would test glibc. */
    char line[4096];
    bool found = false;
    FILE *f = fopen("/proc/self/maps", "re");
    ck_assert_ptr_nonnull(f);
    while (fgets(line, sizeof line, f))
        found |= strstr(line, "libxalloc.so.1") && strstr(line, " r-xp ");
    fclose(f);
    ck_assert_msg(found, "libxalloc.so.1 is not mapped: run under LD_PRELOAD");
    ck_assert_int_eq(xalloc_stats_get(NULL), -1);
    ck_assert_int_eq(xalloc_stats_get(&before), 0);
    ck_assert_uint_eq(before.size, sizeof before);
    ck_assert_uint_eq(before.version_major, XALLOC_STATS_VERSION_MAJOR);
}
END_TEST

/* The arenas' allocated bytes add up to the total. */
static void assert_arenas_add_up(const struct xalloc_stats *s, const char *why)
{
    uint64_t arena_sum = 0;
    for (unsigned a = 0; a < s->arenas_count; a++)
        arena_sum += s->arenas[a].allocated;
    ck_assert_msg(arena_sum == s->allocated, "sum of arena allocated %lu != total allocated %lu%s",
                  (unsigned long)arena_sum, (unsigned long)s->allocated, why);
}

START_TEST(test_exact_counts)
{
    enum { N_SMALL = 1000, N_MED = 300 };
    static void *small[N_SMALL], *med[N_MED];
    struct xs_file f;
    /* File and thread made (their creation allocates), caches settled. */
    ck_assert(wait_for_file(getpid(), &f, 3000));
    xs_close(&f);
    churn();
    /* No ck_assert between the two snapshots: Check allocates to record
     * every passing assertion. */
    int rc1 = xalloc_stats_get(&before);
    for (int i = 0; i < N_SMALL; i++)
        small[i] = malloc(40);
    for (int i = 0; i < N_MED; i++)
        med[i] = malloc(1000);
    int rc2 = xalloc_stats_get(&after);
    ck_assert_int_eq(rc1, 0);
    ck_assert_int_eq(rc2, 0);

    size_t cs = malloc_usable_size(small[0]), cm = malloc_usable_size(med[0]);
    ck_assert_uint_ge(cs, 40);
    ck_assert_uint_ge(cm, 1000);
    int ks = class_of(&after, cs), km = class_of(&after, cm);
    ck_assert_int_ge(ks, 0);
    ck_assert_int_ge(km, 0);
    ck_assert_uint_eq(after.allocated - before.allocated, (uint64_t)N_SMALL * cs + N_MED * cm);
    ck_assert_uint_eq(after.classes[ks].live - before.classes[ks].live, N_SMALL);
    ck_assert_uint_eq(after.classes[km].live - before.classes[km].live, N_MED);
    char extra[512] = "";
    for (unsigned i = 0; i < after.classes_count && i < XALLOC_STATS_MAX_CLASSES; i++) {
        uint64_t d = after.classes[i].nmalloc - before.classes[i].nmalloc;
        if (d && (int)i != ks && (int)i != km)
            snprintf(extra + strlen(extra), sizeof extra - strlen(extra), " class %u (%lu B): %lu",
                     i, (unsigned long)after.classes[i].size, (unsigned long)d);
    }
    ck_assert_msg(after.nmalloc - before.nmalloc == N_SMALL + N_MED,
                  "nmalloc grew by %lu, expected %d; other classes:%s",
                  (unsigned long)(after.nmalloc - before.nmalloc), N_SMALL + N_MED, extra);
    ck_assert_uint_eq(after.classes[ks].nmalloc - before.classes[ks].nmalloc, N_SMALL);
    /* Small blocks count at their class size in requested (their request
     * is not kept). */
    ck_assert_uint_eq(after.requested - before.requested, (uint64_t)N_SMALL * cs + N_MED * cm);
    ck_assert_uint_le(after.allocated, after.active);
    ck_assert_uint_le(after.active, after.mapped);
    assert_arenas_add_up(&after, "");

    rc1 = xalloc_stats_get(&before);
    for (int i = 0; i < N_SMALL; i++)
        free(small[i]);
    for (int i = 0; i < N_MED; i++)
        free(med[i]);
    rc2 = xalloc_stats_get(&after);
    ck_assert(rc1 == 0 && rc2 == 0);
    ck_assert_uint_eq(before.allocated - after.allocated, (uint64_t)N_SMALL * cs + N_MED * cm);
    ck_assert_uint_eq(before.classes[ks].live - after.classes[ks].live, N_SMALL);
    ck_assert_uint_eq(after.nfree - before.nfree, N_SMALL + N_MED);
}
END_TEST

/* Frees by another thread are counted by that thread (no atomic per
 * free): while it is still running, the totals and the owner's arena must
 * already show them. */
enum { N_REMOTE = 3000 };
static void *remote_blocks[N_REMOTE];

/* A thread that frees blocks main allocated (after an allocation of its
 * own, which gives it a heap, when own_heap), then waits at freer_bar
 * until main has looked at the statistics. */
struct freer {
    void **blocks;
    int n;
    bool own_heap;
};
static pthread_barrier_t freer_bar;
static void *freer_main(void *arg)
{
    const struct freer *f = arg;
    if (f->own_heap) {
        void *volatile own = malloc(1);
        free(own);
    }
    for (int i = 0; i < f->n; i++)
        free(f->blocks[i]);
    pthread_barrier_wait(&freer_bar); /* freed */
    pthread_barrier_wait(&freer_bar); /* main has looked */
    return NULL;
}

START_TEST(test_remote_frees_counted)
{
    pthread_barrier_init(&freer_bar, NULL, 2);
    for (int i = 0; i < N_REMOTE; i++)
        remote_blocks[i] = malloc(200);
    size_t cs = malloc_usable_size(remote_blocks[0]);
    int rc1 = xalloc_stats_get(&before);
    pthread_t t;
    struct freer f = {remote_blocks, N_REMOTE, false};
    ck_assert_int_eq(pthread_create(&t, NULL, freer_main, &f), 0);
    pthread_barrier_wait(&freer_bar);
    int rc2 = xalloc_stats_get(&after);
    pthread_barrier_wait(&freer_bar);
    pthread_join(t, NULL);
    ck_assert(rc1 == 0 && rc2 == 0);
    int k = class_of(&after, cs);
    ck_assert_int_ge(k, 0);
    /* pthread_create allocates a little itself (the new thread's TLS
     * vector): the class count is exact, the byte total within a page. */
    ck_assert_uint_eq(before.classes[k].live - after.classes[k].live, N_REMOTE);
    ck_assert_uint_le(before.allocated - after.allocated, (uint64_t)N_REMOTE * cs);
    ck_assert_uint_ge(before.allocated - after.allocated, (uint64_t)N_REMOTE * cs - 4096);
    ck_assert_uint_ge(after.nfree - before.nfree, N_REMOTE);
    assert_arenas_add_up(&after, " (remote frees not attributed)");
}
END_TEST

/* One thread frees blocks of several arenas in turn (each producer is
 * bound to an arena of its own): every arena's live bytes drop by its own
 * blocks, while the freeing thread still runs. */
enum { N_ARENAS_USED = 4, N_PER_PRODUCER = 500 };
static void *multi_blocks[N_ARENAS_USED][N_PER_PRODUCER];
static pthread_barrier_t multi_made, multi_freed, multi_done;
static void *multi_producer(void *arg)
{
    uintptr_t k = (uintptr_t)arg;
    for (int i = 0; i < N_PER_PRODUCER; i++)
        multi_blocks[k][i] = malloc(200);
    pthread_barrier_wait(&multi_made); /* allocated */
    pthread_barrier_wait(&multi_done); /* freed and looked at: exit */
    return NULL;
}
static void *multi_freer(void *arg)
{
    (void)arg;
    /* Interleaved: every free is of another arena than the last one. */
    for (int i = 0; i < N_PER_PRODUCER; i++)
        for (int k = 0; k < N_ARENAS_USED; k++)
            free(multi_blocks[k][i]);
    pthread_barrier_wait(&multi_freed);
    pthread_barrier_wait(&multi_done); /* main has looked */
    return NULL;
}

START_TEST(test_remote_frees_of_many_arenas_counted)
{
    pthread_barrier_init(&multi_made, NULL, N_ARENAS_USED + 1);
    pthread_barrier_init(&multi_freed, NULL, 2);
    pthread_barrier_init(&multi_done, NULL, N_ARENAS_USED + 2);
    pthread_t prod[N_ARENAS_USED], freer;
    for (uintptr_t k = 0; k < N_ARENAS_USED; k++)
        ck_assert_int_eq(pthread_create(&prod[k], NULL, multi_producer, (void *)k), 0);
    pthread_barrier_wait(&multi_made);
    ck_assert_int_eq(xalloc_stats_get(&before), 0);
    ck_assert_uint_ge(before.arenas_count, N_ARENAS_USED + 1);
    ck_assert_int_eq(pthread_create(&freer, NULL, multi_freer, NULL), 0);
    pthread_barrier_wait(&multi_freed);
    ck_assert_int_eq(xalloc_stats_get(&after), 0);
    /* Arenas whose live bytes dropped by the producers' blocks, exactly
     * (up to the freeing thread's own start-up allocations). */
    unsigned dropped = 0;
    for (unsigned a = 0; a < after.arenas_count; a++) {
        uint64_t b = before.arenas[a].allocated, x = after.arenas[a].allocated;
        if (b > x && b - x >= (uint64_t)N_PER_PRODUCER * 200)
            dropped++;
    }
    ck_assert_uint_eq(dropped, N_ARENAS_USED);
    assert_arenas_add_up(&after, " (frees of several arenas by one thread)");
    pthread_barrier_wait(&multi_done);
    pthread_join(freer, NULL);
    for (int k = 0; k < N_ARENAS_USED; k++)
        pthread_join(prod[k], NULL);
}
END_TEST

/* A thread that frees another arena's blocks keeps them for its own next
 * allocations of the class (its foreign stack), hands them out, and frees
 * them again: through all of it each arena's live bytes are those of its
 * own blocks. Once every block is freed, the producer's arena has dropped
 * by its blocks and the consumer's arena is where it was (it allocated
 * nothing of its own: every block it handed out was the producer's). */
enum { N_HANDOFF = 200, HANDOFF_ROUNDS = 4 };
static void *handoff_blocks[N_HANDOFF];
static pthread_barrier_t handoff_made, handoff_done;
static void *handoff_producer(void *arg)
{
    (void)arg;
    for (int i = 0; i < N_HANDOFF; i++)
        handoff_blocks[i] = malloc(200);
    pthread_barrier_wait(&handoff_made); /* allocated */
    pthread_barrier_wait(&handoff_done); /* consumer done, main has looked */
    return NULL;
}
static void *handoff_consumer(void *arg)
{
    (void)arg;
    /* A heap first: a thread without one hands every free to the owner. */
    void *volatile own = malloc(1);
    free(own);
    for (int r = 0; r < HANDOFF_ROUNDS; r++) {
        for (int i = 0; i < N_HANDOFF; i++)
            free(handoff_blocks[i]);
        if (r + 1 < HANDOFF_ROUNDS)
            for (int i = 0; i < N_HANDOFF; i++) {
                handoff_blocks[i] = malloc(200);
                memset(handoff_blocks[i], r, 200);
            }
    }
    return NULL;
}

START_TEST(test_handed_off_blocks_stay_with_their_arena)
{
    pthread_barrier_init(&handoff_made, NULL, 2);
    pthread_barrier_init(&handoff_done, NULL, 2);
    pthread_t prod, cons;
    ck_assert_int_eq(pthread_create(&prod, NULL, handoff_producer, NULL), 0);
    pthread_barrier_wait(&handoff_made);
    size_t cs = malloc_usable_size(handoff_blocks[0]);
    int rc1 = xalloc_stats_get(&before);
    ck_assert_int_eq(pthread_create(&cons, NULL, handoff_consumer, NULL), 0);
    pthread_join(cons, NULL); /* exited: its heap's counters are retired */
    int rc2 = xalloc_stats_get(&after);
    pthread_barrier_wait(&handoff_done);
    pthread_join(prod, NULL);
    ck_assert(rc1 == 0 && rc2 == 0);
    uint64_t blocks = (uint64_t)N_HANDOFF * cs;
    unsigned dropped = 0;
    for (unsigned a = 0; a < after.arenas_count; a++) {
        uint64_t b = before.arenas[a].allocated, x = after.arenas[a].allocated;
        /* The consumer's thread start allocates a little of its own (its
         * TLS vector), freed at its exit: within a page either way. */
        if (b > x && b - x >= blocks - 4096 && b - x <= blocks + 4096)
            dropped++;
        else
            ck_assert_msg(b - x + 4096 <= 8192,
                          "arena %u: allocated %lu -> %lu, only the producer's arena should "
                          "change (by %lu)",
                          a, (unsigned long)b, (unsigned long)x, (unsigned long)blocks);
    }
    ck_assert_uint_eq(dropped, 1);
    assert_arenas_add_up(&after, " (blocks handed between arenas)");
}
END_TEST

/* A thread with a heap keeps the blocks of others that it frees (its
 * foreign stack; past its limit, about 300 blocks of this class, chains
 * in its outbox) and counts them as freed only when they leave the stack
 * or their chain goes to the slab: while it holds them, the class and
 * arena totals still agree (both lag by the held blocks); once it exits,
 * both show every block freed. */
enum { N_HELD = 1000 };
static void *held_blocks[N_HELD];

START_TEST(test_held_remote_frees_keep_totals_consistent)
{
    pthread_barrier_init(&freer_bar, NULL, 2);
    for (int i = 0; i < N_HELD; i++)
        held_blocks[i] = malloc(200);
    size_t cs = malloc_usable_size(held_blocks[0]);
    ck_assert_int_eq(xalloc_stats_get(&before), 0);
    pthread_t t;
    struct freer f = {held_blocks, N_HELD, true}; /* (a heap: it holds what it frees) */
    ck_assert_int_eq(pthread_create(&t, NULL, freer_main, &f), 0);
    pthread_barrier_wait(&freer_bar);
    ck_assert_int_eq(xalloc_stats_get(&after), 0);
    assert_arenas_add_up(&after, " (blocks held in a foreign stack)");
    int k = class_of(&after, cs);
    ck_assert_int_ge(k, 0);
    ck_assert_uint_le(before.classes[k].live - after.classes[k].live, N_HELD);
    pthread_barrier_wait(&freer_bar);
    pthread_join(t, NULL);
    ck_assert_int_eq(xalloc_stats_get(&after), 0);
    assert_arenas_add_up(&after, " (after the holder exited)");
    ck_assert_uint_eq(before.classes[k].live - after.classes[k].live, N_HELD);
    ck_assert_uint_ge(before.allocated - after.allocated, (uint64_t)N_HELD * cs - 4096);
}
END_TEST

START_TEST(test_large_counts)
{
    static void *p[8];
    int rc1 = xalloc_stats_get(&before);
    for (int i = 0; i < 8; i++)
        p[i] = malloc(1u << 20);
    int rc2 = xalloc_stats_get(&after);
    ck_assert(rc1 == 0 && rc2 == 0);
    uint64_t got = (after.large_bytes - before.large_bytes) + (after.huge_bytes - before.huge_bytes);
    uint64_t n = (after.large_count - before.large_count) + (after.huge_count - before.huge_count);
    ck_assert_uint_eq(n, 8);
    ck_assert_uint_eq(got, 8 * malloc_usable_size(p[0]));
    ck_assert_uint_eq(after.allocated - before.allocated, 8 * malloc_usable_size(p[0]));
    for (int i = 0; i < 8; i++)
        free(p[i]);
    /* Large and huge blocks count at the size asked for in requested. */
    static const size_t sizes[3] = {300000, 1000001, 5u << 20};
    /* volatile: the compiler may drop a malloc whose block is never used. */
    char *volatile q[3];
    ck_assert_int_eq(xalloc_stats_get(&before), 0);
    for (int i = 0; i < 3; i++) {
        q[i] = malloc(sizes[i]);
        ck_assert_ptr_nonnull(q[i]);
        q[i][0] = 1;
    }
    ck_assert_int_eq(xalloc_stats_get(&after), 0);
    ck_assert_uint_eq(after.requested - before.requested, 300000 + 1000001 + (5u << 20));
    q[1] = realloc(q[1], 1200000);
    ck_assert_int_eq(xalloc_stats_get(&after), 0);
    ck_assert_uint_eq(after.requested - before.requested, 300000 + 1200000 + (5u << 20));
    for (int i = 0; i < 3; i++)
        free(q[i]);
    /* Freed blocks parked in the thread's cache are not requested. */
    ck_assert_int_eq(xalloc_stats_get(&after), 0);
    ck_assert_uint_eq(after.requested, before.requested);
    /* A cycle through the cache (no arena counter on that path) keeps
     * the count exact. */
    for (int k = 0; k < 3; k++) {
        q[0] = malloc(700000);
        ck_assert_ptr_nonnull(q[0]);
        q[0][0] = 1;
        ck_assert_int_eq(xalloc_stats_get(&after), 0);
        ck_assert_uint_eq(after.requested - before.requested, 700000);
        free(q[0]);
    }
    ck_assert_int_eq(xalloc_stats_get(&after), 0);
    ck_assert_uint_eq(after.requested, before.requested);
}
END_TEST

START_TEST(test_resident_close_to_vmrss)
{
    enum { MIB = 1 << 20, N = 256 };
    static char *p[N];
    for (int i = 0; i < N; i++) {
        p[i] = malloc(MIB);
        ck_assert_ptr_nonnull(p[i]);
        memset(p[i], 0x5a, MIB);
    }
    ck_assert_int_eq(xalloc_stats_get(&after), 0);
    uint64_t rss = vmrss_bytes();
    uint64_t res = after.resident;
    uint64_t diff = res > rss ? res - rss : rss - res;
    ck_assert_msg(diff * 10 <= rss, "resident %lu vs VmRSS %lu: off by more than 10%%",
                  (unsigned long)res, (unsigned long)rss);
    ck_assert_uint_ge(after.allocated, (uint64_t)N * MIB);
    for (int i = 0; i < N; i++)
        free(p[i]);
}
END_TEST

/* Statistics memory files among pid's descriptors. */
static int count_memfds(pid_t pid)
{
    char dir[64], path[PATH_MAX], link[256];
    snprintf(dir, sizeof dir, "/proc/%d/fd", (int)pid);
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        ssize_t ln = readlink(path, link, sizeof link - 1);
        if (ln > 0) {
            link[ln] = '\0';
            n += strcmp(link, "/memfd:xalloc-stats (deleted)") == 0;
        }
    }
    if (d)
        closedir(d);
    return n;
}

START_TEST(test_file_published)
{
    struct xs_file f;
    static struct xs_snapshot snap;
    char err[512];
    ck_assert_msg(wait_for_file(getpid(), &f, 3000), "no statistics file for pid %d", getpid());
    struct stat sb;
    /* The memory file, reached through /proc/PID/fd: a regular 0600 file of
     * ours, sealed against resizing, that no directory names. */
    ck_assert(f.memfd);
    ck_assert_msg(strncmp(f.path, "/proc/", 6) == 0 && strstr(f.path, "/fd/"), "%s", f.path);
    char link[256];
    ssize_t ln = readlink(f.path, link, sizeof link - 1);
    ck_assert_int_gt(ln, 0);
    link[ln] = '\0';
    ck_assert_str_eq(link, "/memfd:xalloc-stats (deleted)");
    /* Moved out of the small numbers a program expects from its next open,
     * but not past the 64 descriptors a table starts with: growing the
     * table of a process with threads waits for an RCU grace period, in
     * the malloc that made the file. (This process holds fewer than 48.) */
    long fdnum = strtol(strrchr(f.path, '/') + 1, NULL, 10);
    ck_assert_int_ge(fdnum, 48);
    ck_assert_int_lt(fdnum, 64);
    ck_assert_int_eq(fstat(f.fd, &sb), 0);
    ck_assert(S_ISREG(sb.st_mode));
    ck_assert_uint_eq(sb.st_mode & 0777, 0600);
    ck_assert_uint_eq(sb.st_uid, geteuid());
    ck_assert_uint_eq(sb.st_nlink, 0);
    ck_assert_int_eq(fcntl(f.fd, F_GET_SEALS) & (F_SEAL_SHRINK | F_SEAL_GROW),
                     F_SEAL_SHRINK | F_SEAL_GROW);
    ck_assert_int_eq(ftruncate(f.fd, 0), -1); /* sealed even for its owner */
    ck_assert_int_eq(xs_read(&f, &snap, 3000, err, sizeof err), XS_OK);
    ck_assert_int_eq(snap.hdr.pid, getpid());
    ck_assert_str_eq(snap.hdr.program, "check_stats_live");
    ck_assert_uint_gt(snap.stats.nmalloc, 0);
    ck_assert_uint_gt(snap.stats.mapped, 0);
    ck_assert_uint_ge(snap.stats.narenas, 1);
    bool has_interval = false;
    for (unsigned i = 0; i < snap.hdr.config_count; i++)
        has_interval |= strcmp(snap.hdr.config[i].name, "stats_interval_ms") == 0;
    ck_assert(has_interval);
    /* The Check runner (our parent) keeps its own file. */
    struct xs_file pf;
    ck_assert_int_eq(xs_open_pid(getppid(), NULL, false, &pf, NULL, 0, err, sizeof err), XS_OK);
    ck_assert_str_ne(pf.path, f.path);
    xs_close(&pf);
    xs_close(&f);
}
END_TEST

START_TEST(test_refreshed_without_allocation)
{
    struct xs_file f;
    static struct xs_snapshot a, b;
    char err[512], msg[256];
    ck_assert(wait_for_file(getpid(), &f, 3000));
    xs_close(&f);
    ck_assert_int_eq(xalloc_config_set("stats_interval_ms:50", msg, sizeof msg), 0);
    ck_assert(wait_for_file(getpid(), &f, 3000));
    ck_assert_int_eq(xs_read(&f, &a, 3000, err, sizeof err), XS_OK);
    usleep(700000); /* no allocation here: only the thread can publish */
    ck_assert_int_eq(xs_read(&f, &b, 3000, err, sizeof err), XS_OK);
    ck_assert_uint_ge(b.hdr.publish_count, a.hdr.publish_count + 3);
    ck_assert(b.hdr.flags & XALLOC_STATS_FILE_F_THREAD);
    ck_assert_uint_eq(b.hdr.interval_ms, 50);
    xs_close(&f);
}
END_TEST

START_TEST(test_fork_child_own_file_removed_at_exit)
{
    struct xs_file f;
    char err[512];
    ck_assert(wait_for_file(getpid(), &f, 3000));
    char mine[PATH_MAX];
    snprintf(mine, sizeof mine, "%s", f.path);
    xs_close(&f);
    int pipefd[2];
    ck_assert_int_eq(pipe(pipefd), 0);
    pid_t c = fork();
    ck_assert_int_ge(c, 0);
    if (c == 0) {
        struct xs_file cf;
        char path[PATH_MAX] = "";
        int rc = 0;
        /* The parent's descriptor went in the fork handler: before any
         * allocation the child holds no statistics file at all. */
        if (count_memfds(getpid()) != 0)
            rc = 5;
        if (!wait_for_file(getpid(), &cf, 3000))
            rc = 1;
        else {
            snprintf(path, sizeof path, "%s", cf.path);
            if (cf.ident.pid != getpid())
                rc = 2;
            xs_close(&cf);
            if (count_memfds(getpid()) != 1) /* ours, once our reader closed */
                rc = 6;
        }
        if (access(mine, F_OK) != 0) /* the parent's file is untouched */
            rc = 3;
        if (write(pipefd[1], path, sizeof path) != (ssize_t)sizeof path)
            rc = 4;
        exit(rc); /* exit, not _exit: the destructor removes the file */
    }
    close(pipefd[1]);
    char childpath[PATH_MAX];
    ck_assert_int_eq(read(pipefd[0], childpath, sizeof childpath), (ssize_t)sizeof childpath);
    int st;
    ck_assert_int_eq(waitpid(c, &st, 0), c);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %d", st);
    ck_assert_str_ne(childpath, "");
    ck_assert_msg(access(childpath, F_OK) != 0, "%s left behind", childpath);
    ck_assert_int_eq(count_memfds(getpid()), 1);
    ck_assert_int_eq(xs_open_pid(getpid(), NULL, false, &f, NULL, 0, err, sizeof err), XS_OK);
    xs_close(&f);
}
END_TEST

/* ---- reader against 4 allocating threads ---- */

static volatile int hammer_stop;

static void *allocator_thread(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg;
    enum { SLOTS = 2048 };
    void **slot = calloc(SLOTS, sizeof *slot);
    while (!hammer_stop) {
        for (int i = 0; i < 4096; i++) {
            unsigned r = rand_r(&seed);
            unsigned k = r % SLOTS;
            free(slot[k]);
            /* mostly small, some large */
            size_t sz = (r >> 12) % 64 == 0 ? 65536 + (r >> 4) % 300000 : 8 + (r >> 8) % 2048;
            slot[k] = malloc(sz);
        }
    }
    for (int k = 0; k < SLOTS; k++)
        free(slot[k]);
    free(slot);
    return NULL;
}

START_TEST(test_reader_never_sees_inconsistent_snapshot)
{
    char msg[256], err[512];
    struct xs_file f;
    static struct xs_snapshot snap;
    ck_assert_int_eq(xalloc_config_set("stats_interval_ms:10", msg, sizeof msg), 0);
    ck_assert(wait_for_file(getpid(), &f, 3000));
    pthread_t t[4];
    hammer_stop = 0;
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(pthread_create(&t[i], NULL, allocator_thread, (void *)(uintptr_t)(i + 1)), 0);
    uint64_t reads = 0, first = 0, last_count = 0, last_ts = 0;
    uint64_t end = xs_now_ns() + 2000000000u;
    while (xs_now_ns() < end) {
        ck_assert_int_eq(xs_read(&f, &snap, 2000, err, sizeof err), XS_OK);
        const struct xalloc_stats *s = &snap.stats;
        ck_assert_uint_eq(s->size, sizeof *s);
        ck_assert_uint_le(s->allocated, s->mapped);
        ck_assert_uint_le(s->active, s->mapped);
        ck_assert_uint_le(s->dirty, s->mapped);
        ck_assert_uint_le(s->large_bytes + s->huge_bytes, s->allocated);
        ck_assert_uint_le(s->arenas_count, XALLOC_STATS_MAX_ARENAS);
        ck_assert_uint_ge(snap.hdr.publish_count, last_count);
        ck_assert_uint_ge(s->timestamp_ns, last_ts);
        if (!first)
            first = snap.hdr.publish_count;
        last_count = snap.hdr.publish_count;
        last_ts = s->timestamp_ns;
        reads++;
        usleep(200);
    }
    hammer_stop = 1;
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    ck_assert_uint_gt(reads, 100);
    ck_assert_msg(last_count - first >= 20, "only %lu publications in 2 s",
                  (unsigned long)(last_count - first));
    xs_close(&f);
}
END_TEST

struct capture {
    char buf[1 << 16];
    size_t len;
    int lines;
};

static void capture_line(void *arg, const char *line)
{
    struct capture *c = arg;
    size_t n = strlen(line);
    if (c->len + n < sizeof c->buf) {
        memcpy(c->buf + c->len, line, n + 1);
        c->len += n;
    }
    c->lines++;
}

START_TEST(test_stats_print)
{
    static struct capture c;
    static void *p[100];
    for (int i = 0; i < 100; i++)
        p[i] = malloc(24);
    xalloc_stats_print(capture_line, &c);
    ck_assert_int_gt(c.lines, 20);
    ck_assert_ptr_nonnull(strstr(c.buf, "(check_stats_live)"));
    ck_assert_ptr_nonnull(strstr(c.buf, "\nTotals\n"));
    ck_assert_ptr_nonnull(strstr(c.buf, "\n  allocated "));
    ck_assert_ptr_nonnull(strstr(c.buf, "\nArenas: "));
    ck_assert_ptr_nonnull(strstr(c.buf, "\nSize classes: "));
    ck_assert_ptr_nonnull(strstr(c.buf, "\nConfiguration\n"));
    for (int i = 0; i < 100; i++)
        free(p[i]);
}
END_TEST

START_TEST(test_mallinfo2_same_figures)
{
    static void *p[64];
    for (int i = 0; i < 64; i++)
        p[i] = malloc(200);
    int rc = xalloc_stats_get(&after);
    struct mallinfo2 mi = mallinfo2();
    ck_assert_int_eq(rc, 0);
    ck_assert_uint_eq(mi.uordblks, after.allocated);
    for (int i = 0; i < 64; i++)
        free(p[i]);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("stats_live");
    TCase *t = tcase_create("live");
    tcase_set_timeout(t, 30);
    tcase_add_test(t, test_library_is_preloaded);
    tcase_add_test(t, test_exact_counts);
    tcase_add_test(t, test_remote_frees_counted);
    tcase_add_test(t, test_remote_frees_of_many_arenas_counted);
    tcase_add_test(t, test_handed_off_blocks_stay_with_their_arena);
    tcase_add_test(t, test_held_remote_frees_keep_totals_consistent);
    tcase_add_test(t, test_large_counts);
    tcase_add_test(t, test_resident_close_to_vmrss);
    tcase_add_test(t, test_file_published);
    tcase_add_test(t, test_refreshed_without_allocation);
    tcase_add_test(t, test_fork_child_own_file_removed_at_exit);
    tcase_add_test(t, test_reader_never_sees_inconsistent_snapshot);
    tcase_add_test(t, test_stats_print);
    tcase_add_test(t, test_mallinfo2_same_figures);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    churn(); /* the runner makes its file before forking the tests */
    SRunner *r = srunner_create(suite());
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? 1 : 0;
}
