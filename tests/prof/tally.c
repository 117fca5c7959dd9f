/* tally.c: the threads' tallies of sampled blocks (prof.c) under
 * load, meant for prof_sample:1 (every allocation sampled, estimates equal
 * to the sizes). Workers in two waves (the first exits, its tallies are
 * folded and reused by the second) allocate from keep_site (kept), from
 * pass_site (freed by a consumer thread that allocates nothing sampled
 * itself; now and then a big block, whose record its run descriptor
 * holds), from gone_site (freed at once) and through 0..23 frames of
 * deep() to deep_site (more stacks than a tally has slots; one in five
 * depths kept), and grow buffers from grow_site by realloc (a sampled
 * big block resized in place); a thread forks children that allocate,
 * free and exit (their final dumps fold tallies of threads that no longer
 * exist). Runs
 * about `secs` seconds (argv[1], default 2) after printing "ready PID", so
 * that dumps can be requested meanwhile; prints the live bytes that must
 * be charged to each site at exit. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

void *keep_site(size_t size);
void *pass_site(size_t size);
void *gone_site(size_t size);
void *deep_site(size_t size);
void *grow_site(size_t size);
void *deep(unsigned d, size_t size);

#define WORKERS 6
#define QCAP 4096

/* A call site of its own: a function that only allocates. */
#define SITE(name)                                                                             \
    __attribute__((noinline)) void *name(size_t size)                                          \
    {                                                                                          \
        void *p = malloc(size);                                                                \
        __asm__ volatile("" ::: "memory");                                                     \
        return p;                                                                              \
    }
SITE(keep_site)
SITE(pass_site)
SITE(gone_site)
SITE(deep_site)
SITE(grow_site)

__attribute__((noinline)) void *deep(unsigned d, size_t size)
{
    void *p = d ? deep(d - 1, size) : deep_site(size);
    __asm__ volatile("" ::: "memory");
    return p;
}

static pthread_mutex_t qlock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t qcond = PTHREAD_COND_INITIALIZER;
static void *queue[QCAP];
static unsigned qn;
static int done;
static double secs = 2.0;

static pthread_mutex_t tlock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long long keep_bytes, deep_bytes, grow_bytes;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void push(void *p)
{
    pthread_mutex_lock(&qlock);
    while (qn == QCAP)
        pthread_cond_wait(&qcond, &qlock);
    queue[qn++] = p;
    pthread_cond_broadcast(&qcond);
    pthread_mutex_unlock(&qlock);
}

static void *consumer(void *arg)
{
    (void)arg;
    void *batch[QCAP];
    for (;;) {
        pthread_mutex_lock(&qlock);
        while (qn == 0 && !done)
            pthread_cond_wait(&qcond, &qlock);
        unsigned n = qn;
        memcpy(batch, queue, n * sizeof *batch);
        qn = 0;
        int end = done;
        pthread_cond_broadcast(&qcond);
        pthread_mutex_unlock(&qlock);
        for (unsigned i = 0; i < n; i++)
            free(batch[i]);
        if (end && n == 0)
            return NULL;
    }
}

static void *worker(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg * 2654435761u + 1;
    double end = now() + secs / 2;
    unsigned long long kb = 0, db = 0, gb = 0;
    unsigned i = 0;
    free(gone_site(1)); /* (a thread's first allocation only arms its sampler) */
    while (now() < end || i < 2000) {
        seed = seed * 1103515245u + 12345u;
        size_t size = 16 + (seed >> 16) % 2000;
        char *p;
        switch (i % 4) {
        case 0:
            if (i % 64 == 0) {
                p = keep_site(size);
                memset(p, 1, size);
                kb += size;
            } else {
                free(gone_site(size));
            }
            break;
        case 1: /* (now and then a big block: its record in its descriptor) */
            push(pass_site(i % 128 == 1 ? size << 9 : size));
            break;
        case 2:
            if (i % 1024 == 2) {
                /* A buffer grown by realloc 128 bytes at a time: a sampled
                 * slab block, moved to a large run, which then grows in
                 * place (its record resized where it is); one in eight kept. */
                size_t len = 20000, last = len + 128 * (size_t)((seed >> 4) % 800);
                p = grow_site(len);
                while (len < last) {
                    len += 128;
                    p = realloc(p, len);
                }
                if (i % 8192 == 2)
                    gb += len;
                else
                    free(p);
            } else {
                free(gone_site(size));
            }
            break;
        default: {
            unsigned d = (seed >> 8) % 24;
            p = deep(d, size);
            if (d % 5 == 0 && i % 16 == 3)
                db += size;
            else
                free(p);
        }
        }
        i++;
    }
    pthread_mutex_lock(&tlock);
    keep_bytes += kb;
    deep_bytes += db;
    grow_bytes += gb;
    pthread_mutex_unlock(&tlock);
    return NULL;
}

static void *forker(void *arg)
{
    (void)arg;
    double end = now() + secs;
    while (now() < end) {
        pid_t pid = fork();
        if (pid == 0) {
            for (int i = 0; i < 200; i++)
                free(gone_site(64 + (size_t)i));
            exit(0); /* (a final dump in the child) */
        }
        if (pid > 0)
            waitpid(pid, NULL, 0);
        usleep(100000);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        secs = atof(argv[1]);
    printf("ready %d\n", (int)getpid());
    fflush(stdout);
    pthread_t cons, fk, w[WORKERS];
    pthread_create(&cons, NULL, consumer, NULL);
    pthread_create(&fk, NULL, forker, NULL);
    for (int wave = 0; wave < 2; wave++) {
        for (uintptr_t k = 0; k < WORKERS; k++)
            pthread_create(&w[k], NULL, worker, (void *)(k + 1 + (uintptr_t)wave * WORKERS));
        for (int k = 0; k < WORKERS; k++)
            pthread_join(w[k], NULL);
    }
    pthread_mutex_lock(&qlock);
    done = 1;
    pthread_cond_broadcast(&qcond);
    pthread_mutex_unlock(&qlock);
    pthread_join(cons, NULL);
    pthread_join(fk, NULL);
    printf("RESULT keep_bytes=%llu deep_bytes=%llu grow_bytes=%llu\n", keep_bytes, deep_bytes,
           grow_bytes);
    return 0;
}
