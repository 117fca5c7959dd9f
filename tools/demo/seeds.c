/* seeds.c: the situations xalloc was written for (DESIGN.md, "What the field
 * taught us"), small enough for `make demo`. Runs under whatever malloc is
 * preloaded and prints one line of "key=value" results.
 *
 *   table THREADS ROWS UPDATES [HOLD_S]
 *       A table server: ROWS rows of 64..1 KiB, THREADS threads each
 *       replacing UPDATES random rows (a row freed by whichever thread
 *       replaces it), then 90% of the rows deleted. Reports peak RSS, RSS
 *       right after the delete, and RSS after one idle second with no
 *       allocator call. With HOLD_S, prints "deleted" and idles that long
 *       (for a live xalloc-stat).
 *   queue PRODUCERS MESSAGES BURST
 *       Producer threads allocate messages (64 B..4 KiB) that one consumer
 *       frees, in bursts of up to BURST queued messages. Reports peak RSS
 *       and RSS after the queue drained and after an idle second.
 *   latency REQUESTS
 *       A request loop: each request allocates and fills 12 buffers of
 *       1..256 KiB, sums them and frees them. Reports mean, p50 and p99
 *       latency in microseconds and the huge-page-backed bytes (meant to
 *       run with each allocator's huge-page switch on).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* kB from /proc/self/status ("VmRSS:", "VmHWM:") or smaps_rollup. */
static long proc_kb(const char *file, const char *key)
{
    char line[256];
    long v = -1;
    size_t kl = strlen(key);
    FILE *f = fopen(file, "r");
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, key, kl) == 0) {
            v = atol(line + kl);
            break;
        }
    if (f)
        fclose(f);
    return v;
}
static double rss_mib(void) { return proc_kb("/proc/self/status", "VmRSS:") / 1024.0; }
static double peak_mib(void) { return proc_kb("/proc/self/status", "VmHWM:") / 1024.0; }

static uint32_t xorshift(uint32_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

/* ---- table ---- */

enum { SHARDS = 256 };
static char **rows;
static long nrows, nupdates;
static pthread_mutex_t shard[SHARDS];

static void *updater(void *arg)
{
    uint32_t seed = 2463534242u + (uint32_t)(uintptr_t)arg * 7919u;
    for (long i = 0; i < nupdates; i++) {
        long r = xorshift(&seed) % nrows;
        size_t sz = 64 + xorshift(&seed) % 960;
        char *n = malloc(sz);
        memset(n, (int)(r & 0x7f), sz);
        pthread_mutex_t *m = &shard[r % SHARDS];
        pthread_mutex_lock(m);
        char *old = rows[r];
        rows[r] = n;
        pthread_mutex_unlock(m);
        free(old);
    }
    return NULL;
}

static int table(int threads, long n, long updates, double hold)
{
    double t0 = now_s();
    nrows = n;
    nupdates = updates;
    rows = calloc((size_t)n, sizeof *rows);
    for (int i = 0; i < SHARDS; i++)
        pthread_mutex_init(&shard[i], NULL);
    uint32_t seed = 88172645u;
    for (long r = 0; r < n; r++) {
        size_t sz = 64 + xorshift(&seed) % 960;
        rows[r] = malloc(sz);
        memset(rows[r], 1, sz);
    }
    pthread_t t[64];
    for (int i = 0; i < threads; i++)
        pthread_create(&t[i], NULL, updater, (void *)(uintptr_t)i);
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    double peak = peak_mib();
    for (long r = 0; r < n; r++)
        if (r % 10 != 0) {
            free(rows[r]);
            rows[r] = NULL;
        }
    double after = rss_mib();
    double secs = now_s() - t0;
    sleep(1);
    double idle = rss_mib();
    printf("peak_mib=%.1f after_delete_mib=%.1f after_idle_mib=%.1f seconds=%.3f\n", peak, after,
           idle, secs);
    fflush(stdout);
    if (hold > 0) {
        printf("deleted\n");
        fflush(stdout);
        usleep((useconds_t)(hold * 1e6));
    }
    return 0;
}

/* ---- queue ---- */

struct msg {
    struct msg *next;
    size_t len;
};
static struct msg *head, *tail;
static long queued, produced_total, target, burst;
static int producing;
static pthread_mutex_t qlock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t qcond = PTHREAD_COND_INITIALIZER;

static void *producer(void *arg)
{
    uint32_t seed = 1234567u + (uint32_t)(uintptr_t)arg;
    for (;;) {
        struct msg *batch = NULL, *last = NULL;
        int k = 0;
        for (; k < 64; k++) {
            size_t len = 64 + xorshift(&seed) % 4032;
            struct msg *m = malloc(sizeof *m + len);
            memset(m + 1, 7, len);
            m->len = len;
            m->next = NULL;
            if (last)
                last->next = m;
            else
                batch = m;
            last = m;
        }
        pthread_mutex_lock(&qlock);
        /* bursts: producers run ahead until BURST messages wait */
        while (queued > burst && produced_total < target)
            pthread_cond_wait(&qcond, &qlock);
        if (produced_total >= target) {
            pthread_mutex_unlock(&qlock);
            for (struct msg *m = batch; m;) {
                struct msg *nx = m->next;
                free(m);
                m = nx;
            }
            break;
        }
        if (tail)
            tail->next = batch;
        else
            head = batch;
        tail = last;
        queued += k;
        produced_total += k;
        pthread_cond_broadcast(&qcond);
        pthread_mutex_unlock(&qlock);
    }
    return NULL;
}

static int queue(int producers, long messages, long burst_)
{
    double t0 = now_s();
    target = messages;
    burst = burst_;
    producing = producers;
    pthread_t t[64];
    for (int i = 0; i < producers; i++)
        pthread_create(&t[i], NULL, producer, (void *)(uintptr_t)i);
    long consumed = 0;
    while (consumed < messages) {
        pthread_mutex_lock(&qlock);
        /* the consumer lags: it starts on a burst once it is big */
        while (queued < burst * 3 / 4 && produced_total < target)
            pthread_cond_wait(&qcond, &qlock);
        struct msg *m = head;
        head = tail = NULL;
        long got = queued;
        queued = 0;
        pthread_cond_broadcast(&qcond);
        pthread_mutex_unlock(&qlock);
        while (m) {
            struct msg *nx = m->next;
            free(m);
            m = nx;
        }
        consumed += got;
        if (got == 0 && produced_total >= target)
            break;
    }
    for (int i = 0; i < producers; i++)
        pthread_join(t[i], NULL);
    double peak = peak_mib(), after = rss_mib(), secs = now_s() - t0;
    sleep(1);
    printf("peak_mib=%.1f after_drain_mib=%.1f after_idle_mib=%.1f seconds=%.3f\n", peak, after,
           rss_mib(), secs);
    return 0;
}

/* ---- latency ---- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int latency(long requests)
{
    double *lat = malloc((size_t)requests * sizeof *lat);
    uint32_t seed = 42u;
    volatile uint64_t sink = 0;
    double sum = 0;
    for (long r = 0; r < requests; r++) {
        double t0 = now_s();
        enum { N = 12 };
        unsigned char *b[N];
        size_t len[N];
        for (int i = 0; i < N; i++) {
            len[i] = 1024 + xorshift(&seed) % (256 * 1024);
            b[i] = malloc(len[i]);
            memset(b[i], i, len[i]);
        }
        uint64_t s = 0;
        for (int i = 0; i < N; i++)
            for (size_t j = 0; j < len[i]; j += 64)
                s += b[i][j];
        for (int i = 0; i < N; i++)
            free(b[i]);
        sink += s;
        lat[r] = (now_s() - t0) * 1e6;
        sum += lat[r];
    }
    long huge = proc_kb("/proc/self/smaps_rollup", "AnonHugePages:");
    qsort(lat, (size_t)requests, sizeof *lat, cmp_double);
    printf("mean_us=%.1f p50_us=%.1f p99_us=%.1f huge_mib=%.1f\n", sum / requests,
           lat[requests / 2], lat[requests * 99 / 100], huge / 1024.0);
    free(lat);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 5 && strcmp(argv[1], "table") == 0)
        return table(atoi(argv[2]), atol(argv[3]), atol(argv[4]), argc > 5 ? atof(argv[5]) : 0);
    if (argc == 5 && strcmp(argv[1], "queue") == 0)
        return queue(atoi(argv[2]), atol(argv[3]), atol(argv[4]));
    if (argc == 3 && strcmp(argv[1], "latency") == 0)
        return latency(atol(argv[2]));
    fprintf(stderr, "usage: seeds table THREADS ROWS UPDATES [HOLD_S] | queue PRODUCERS MESSAGES BURST | "
                    "latency REQUESTS\n");
    return 2;
}
