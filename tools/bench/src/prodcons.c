/* prodcons.c: producer/consumer with frees on another thread. `pairs`
 * producer threads each allocate `items` blocks (min..max bytes) and pass
 * them, `batch` at a time, through a bounded queue to their consumer, which
 * reads and frees them. Every free is remote, so this measures how the
 * allocator returns memory freed by a foreign thread to its owner and
 * whether it reuses it (RSS) instead of growing. fill=1: the producer
 * writes every byte of each block (buffers it fills for the consumer),
 * so pages the allocator purged on the way back fault in again. */
#include "bench.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct batch {
    struct batch *next;
    uint32_t n;
    char *item[]; /* `batch_size` pointers */
};

struct pair {
    pthread_mutex_t m;
    pthread_cond_t not_empty, not_full;
    struct batch *head, *tail;
    uint64_t queued;
    /* The producer's rng and the consumer's checksum, each written on
     * every item by one side only: lines of their own, apart from the
     * queue both sides lock. */
    uint64_t rng BENCH_OWN_LINE;
    uint64_t checksum BENCH_OWN_LINE;
} BENCH_OWN_LINE;

static uint64_t items, batch_size, max_queued, fill;
static size_t min_sz, max_sz;
static pthread_barrier_t start_line;

static void *xmalloc(size_t n)
{
    void *p = malloc(n);
    if (!p) {
        fprintf(stderr, "prodcons: malloc(%zu) failed\n", n);
        exit(1);
    }
    return p;
}

static void *producer(void *arg)
{
    struct pair *q = arg;
    pthread_barrier_wait(&start_line);
    for (uint64_t done = 0; done < items;) {
        struct batch *b = xmalloc(sizeof *b + batch_size * sizeof(char *));
        b->n = 0;
        b->next = NULL;
        for (; b->n < batch_size && done < items; b->n++, done++) {
            size_t n = (size_t)bench_rand_range(&q->rng, min_sz, max_sz);
            char *p = xmalloc(n);
            if (fill)
                memset(p, 0x5a, n);
            p[0] = (char)n;
            p[n - 1] = 1;
            b->item[b->n] = p;
        }
        pthread_mutex_lock(&q->m);
        while (q->queued >= max_queued)
            pthread_cond_wait(&q->not_full, &q->m);
        if (q->tail)
            q->tail->next = b;
        else
            q->head = b;
        q->tail = b;
        q->queued++;
        pthread_cond_signal(&q->not_empty);
        pthread_mutex_unlock(&q->m);
    }
    return NULL;
}

static void *consumer(void *arg)
{
    struct pair *q = arg;
    pthread_barrier_wait(&start_line);
    for (uint64_t got = 0; got < items;) {
        pthread_mutex_lock(&q->m);
        while (!q->head)
            pthread_cond_wait(&q->not_empty, &q->m);
        struct batch *b = q->head;
        q->head = b->next;
        if (!q->head)
            q->tail = NULL;
        q->queued--;
        pthread_cond_signal(&q->not_full);
        pthread_mutex_unlock(&q->m);
        for (uint32_t i = 0; i < b->n; i++) {
            q->checksum += (unsigned char)b->item[i][0];
            free(b->item[i]);
        }
        got += b->n;
        free(b);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    bench_args(argc, argv,
               "prodcons pairs=1 items=2000000 batch=64 queue=64 min=16 max=512 fill=0 seed=1");
    unsigned pairs = (unsigned)bench_arg_u64("pairs", 1);
    items = bench_arg_u64("items", 2000000);
    batch_size = bench_arg_u64("batch", 64);
    max_queued = bench_arg_u64("queue", 64);
    min_sz = (size_t)bench_arg_u64("min", 16);
    max_sz = (size_t)bench_arg_u64("max", 512);
    fill = bench_arg_u64("fill", 0);
    uint64_t seed = bench_arg_u64("seed", 1);
    bench_args_done();
    if (pairs < 1 || pairs > 128 || batch_size < 1 || max_queued < 1 || min_sz < 2 ||
        max_sz < min_sz) {
        fprintf(stderr, "prodcons: bad arguments\n");
        return 2;
    }
    struct pair *q = bench_calloc_lines(pairs, sizeof *q);
    pthread_t tid[256];
    pthread_barrier_init(&start_line, NULL, 2 * pairs + 1);
    for (unsigned i = 0; i < pairs; i++) {
        pthread_mutex_init(&q[i].m, NULL);
        pthread_cond_init(&q[i].not_empty, NULL);
        pthread_cond_init(&q[i].not_full, NULL);
        q[i].rng = seed * 1000003u + i;
        if (pthread_create(&tid[2 * i], NULL, producer, &q[i]) ||
            pthread_create(&tid[2 * i + 1], NULL, consumer, &q[i])) {
            perror("pthread_create");
            return 1;
        }
    }
    double t0 = bench_now();
    pthread_barrier_wait(&start_line);
    for (unsigned i = 0; i < 2 * pairs; i++)
        pthread_join(tid[i], NULL);
    double secs = bench_now() - t0;
    uint64_t sum = 0;
    for (unsigned i = 0; i < pairs; i++)
        sum += q[i].checksum;
    free(q);

    uint64_t ops = items * pairs;
    bench_result_begin("prodcons");
    bench_kv_u64("pairs", pairs);
    bench_kv_u64("ops", ops);
    bench_kv_f("secs", secs);
    bench_kv_f("ops_per_sec", (double)ops / secs);
    bench_kv_u64("checksum", sum);
    bench_kv_u64("rss_final_kb", (uint64_t)bench_rss_kb());
    bench_result_end();
    return 0;
}
