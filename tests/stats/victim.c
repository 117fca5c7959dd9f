/* victim.c: a content-verified workload for tests/stats/fuzz.sh, run under
 * LD_PRELOAD of xalloc while another process scribbles on its statistics
 * file. Two threads allocate, fill with a pattern derived from the block's
 * own seed, verify the whole block before freeing or reallocating it, and
 * free some of each other's blocks; writes "ready" once running. Ends on
 * SIGTERM or after SECONDS: verifies every block left, prints "verified N
 * operations" and exits 0, or exits 3 at the first wrong byte.
 * Usage: victim SECONDS */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { SLOTS = 4096, THREADS = 2 };

struct slot {
    unsigned char *p;
    size_t size;
    uint32_t seed;
    pthread_mutex_t lock;
};

static struct slot slots[SLOTS];
static volatile sig_atomic_t stop;
static double deadline;
static unsigned long ops[THREADS];

static void on_term(int sig) { (void)sig; stop = 1; }

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static unsigned char byte_at(uint32_t seed, size_t i)
{
    return (unsigned char)((seed * 2654435761u + i * 40503u) >> 11);
}

static void fill(struct slot *s)
{
    for (size_t i = 0; i < s->size; i++)
        s->p[i] = byte_at(s->seed, i);
}

static void verify(const struct slot *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s->p[i] != byte_at(s->seed, i)) {
            fprintf(stderr, "victim: block %p of %zu bytes: byte %zu is %#x, expected %#x\n",
                    (void *)s->p, s->size, i, s->p[i], byte_at(s->seed, i));
            exit(3);
        }
}

static size_t pick_size(uint32_t r)
{
    switch (r % 16) {
    case 0: return 65536 + r % 400000;  /* large */
    case 1: return 4096 + r % 60000;    /* medium */
    default: return 1 + r % 1024;       /* small */
    }
}

static void *worker(void *arg)
{
    unsigned id = (unsigned)(uintptr_t)arg;
    unsigned seed = 12345u + id;
    while (!stop && now_s() < deadline) {
        for (int k = 0; k < 1000; k++) {
            uint32_t r = (uint32_t)rand_r(&seed) * 2654435761u ^ (uint32_t)rand_r(&seed);
            struct slot *s = &slots[r % SLOTS];
            pthread_mutex_lock(&s->lock);
            if (s->p) {
                verify(s, s->size);
                if (r & 0x10000) {
                    /* realloc keeps the common prefix */
                    size_t ns = pick_size(r >> 3);
                    unsigned char *q = realloc(s->p, ns);
                    if (!q)
                        exit(4);
                    s->p = q;
                    size_t keep = ns < s->size ? ns : s->size;
                    s->size = keep;
                    verify(s, keep);
                    s->size = ns;
                    fill(s);
                } else {
                    free(s->p);
                    s->p = NULL;
                }
            } else {
                s->size = pick_size(r >> 5);
                s->seed = r;
                s->p = malloc(s->size);
                if (!s->p)
                    exit(4);
                fill(s);
            }
            pthread_mutex_unlock(&s->lock);
            ops[id]++;
        }
    }
    return NULL;
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 10;
    signal(SIGTERM, on_term);
    for (int i = 0; i < SLOTS; i++)
        pthread_mutex_init(&slots[i].lock, NULL);
    deadline = now_s() + seconds;
    pthread_t t[THREADS];
    for (unsigned i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)i);
    printf("ready\n");
    fflush(stdout);
    for (unsigned i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    unsigned long total = 0;
    for (int i = 0; i < SLOTS; i++)
        if (slots[i].p) {
            verify(&slots[i], slots[i].size);
            free(slots[i].p);
        }
    for (unsigned i = 0; i < THREADS; i++)
        total += ops[i];
    printf("verified %lu operations\n", total);
    return 0;
}
