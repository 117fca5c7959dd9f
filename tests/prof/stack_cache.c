/* stack_cache.c: the per-thread stack cache charges every sample to its
 * own stack (run.sh stack_cache; run with prof_sample:1, so that every
 * allocation is a sample and each site's live bytes are exact).
 *
 * via_a() and via_b() have the same frame, so leaf() and the recorder
 * below it run at the same stack addresses whichever called them: both
 * paths share one cache key and differ only in a return address further
 * out, which a lookup must catch. They take turns in runs of 64 (each run
 * fills the entry and then hits, and the first call of the next run must
 * miss), then strictly alternately, then at random, in the main thread and
 * in two threads at once. via_sig() allocates from a signal handler, on
 * an alternate signal stack and then on the thread's own stack (a chain
 * through the signal trampoline). Then a longjmp out of a deeper path
 * leaves stale return addresses below the live frames. Last, threads one
 * after another (each on the stack the last one left, whose record and
 * cache it takes over) take one path each, two threads in a row the same:
 * the second hits what the first cached, the next one must miss it.
 *
 * Prints RESULT a_bytes=N b_bytes=N sig_bytes=N deep_bytes=N (the truth);
 * the blocks are kept until exit, for the final dump. */
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SIZE_A 1000
#define SIZE_B 3000
#define SIZE_SIG 500
#define SIZE_DEEP 700
#define CALLS 6000 /* per thread, through via_a or via_b */
#define SIGNALS 200
#define SEQ_THREADS 8
#define SEQ_CALLS 40

struct keep {
    void **p;
    size_t n, cap;
    uint64_t a, b;
};

static void keep(struct keep *k, void *p)
{
    if (!p)
        exit(1);
    if (k->n == k->cap) {
        k->cap = k->cap ? 2 * k->cap : 1024;
        k->p = realloc(k->p, k->cap * sizeof *k->p);
        if (!k->p)
            exit(1);
    }
    k->p[k->n++] = p;
}

void *leaf(size_t size);
void via_a(struct keep *k);
void via_b(struct keep *k);
void via_sig(void);
void deep(int d, jmp_buf *env);

__attribute__((noinline)) void *leaf(size_t size)
{
    void *p = malloc(size);
    __asm__ volatile("" : : "r"(p) : "memory"); /* no tail call */
    return p;
}

/* Same frame, different bodies (so that the compiler does not fold them
 * into one function). */
__attribute__((noinline, noclone)) void via_a(struct keep *k)
{
    keep(k, leaf(SIZE_A));
    k->a += SIZE_A;
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline, noclone)) void via_b(struct keep *k)
{
    keep(k, leaf(SIZE_B));
    k->b += SIZE_B;
    __asm__ volatile("" ::: "memory");
}

/* Which of the two the i-th call takes. */
__attribute__((noinline)) static bool pick_a(int i, uint64_t *seed)
{
    if (i < CALLS / 3)
        return (i / 64) % 2 == 0;
    if (i < 2 * CALLS / 3)
        return i % 2 == 0;
    *seed ^= *seed >> 12, *seed ^= *seed << 25, *seed ^= *seed >> 27;
    return ((*seed * 0x2545f4914f6cdd1dULL) >> 63) != 0;
}

/* One call site for both: the same return address into calls(). */
__attribute__((noinline)) static void calls(struct keep *k, uint64_t seed)
{
    for (int i = 0; i < CALLS; i++) {
        void (*via)(struct keep *) = pick_a(i, &seed) ? via_a : via_b;
        via(k);
        __asm__ volatile("" ::: "memory");
    }
}

static struct keep sig_keep;
static uint64_t sig_bytes;

__attribute__((noinline)) void via_sig(void)
{
    /* (malloc in a handler: the signals are raised by the program itself,
     * never while it is inside the allocator.) */
    keep(&sig_keep, leaf(SIZE_SIG));
    sig_bytes += SIZE_SIG;
    __asm__ volatile("" ::: "memory");
}

static void on_signal(int sig)
{
    (void)sig;
    via_sig();
}

static struct keep deep_keep;
static uint64_t deep_bytes;
static volatile bool jump = true; /* (a way out of deep() the compiler cannot rule out) */

/* Allocates at depth 0 and jumps back out: the next, shallower calls find
 * this path's return addresses below their frames. */
__attribute__((noinline)) void deep(int d, jmp_buf *env)
{
    if (d > 0) {
        deep(d - 1, env);
        __asm__ volatile("" ::: "memory");
        return;
    }
    keep(&deep_keep, leaf(SIZE_DEEP));
    deep_bytes += SIZE_DEEP;
    if (jump)
        longjmp(*env, 1);
}

/* A thread's first crossing of the sample distance only arms it, and the
 * main thread's first MiB may come before the profiler is booted: sample
 * nothing of ours until both are past. */
static void warm_up(void)
{
    for (int i = 0; i < 300; i++) {
        void *volatile p = malloc(4096); /* (volatile: not optimised away) */
        free(p);
    }
}

static void *thread_main(void *arg)
{
    struct keep *k = arg;
    warm_up();
    calls(k, (uint64_t)(uintptr_t)k | 1);
    return NULL;
}

static struct keep seq_k[SEQ_THREADS];

/* Thread i of the sequence: via_a for i = 0, 1, 4, 5; via_b for 2, 3, 6,
 * 7. One call site, as in calls(). */
static void *seq_thread_main(void *arg)
{
    struct keep *k = arg;
    warm_up();
    void (*via)(struct keep *) = ((k - seq_k) / 2) % 2 == 0 ? via_a : via_b;
    for (int i = 0; i < SEQ_CALLS; i++) {
        via(k);
        __asm__ volatile("" ::: "memory");
    }
    return NULL;
}

int main(void)
{
    static struct keep main_k, thread_k[2];
    warm_up();
    calls(&main_k, 0x9e3779b97f4a7c15ULL);
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        if (pthread_create(&t[i], NULL, thread_main, &thread_k[i]) != 0)
            return 1;
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);

    /* Signal handler on an alternate stack, then on the thread's own. */
    stack_t ss = {.ss_sp = malloc(1 << 16), .ss_size = 1 << 16, .ss_flags = 0};
    if (!ss.ss_sp || sigaltstack(&ss, NULL) != 0)
        return 1;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_ONSTACK;
    if (sigaction(SIGUSR1, &sa, NULL) != 0)
        return 1;
    for (int i = 0; i < SIGNALS; i++)
        raise(SIGUSR1);
    sa.sa_flags = 0;
    if (sigaction(SIGUSR1, &sa, NULL) != 0)
        return 1;
    for (int i = 0; i < SIGNALS; i++)
        raise(SIGUSR1);

    /* longjmp out of paths of several depths, in turns. */
    for (int i = 0; i < 300; i++) {
        jmp_buf env;
        if (setjmp(env) == 0)
            deep(i % 3, &env);
    }

    for (int i = 0; i < SEQ_THREADS; i++) {
        pthread_t s;
        if (pthread_create(&s, NULL, seq_thread_main, &seq_k[i]) != 0)
            return 1;
        pthread_join(s, NULL);
    }

    uint64_t a = main_k.a + thread_k[0].a + thread_k[1].a;
    uint64_t b = main_k.b + thread_k[0].b + thread_k[1].b;
    for (int i = 0; i < SEQ_THREADS; i++) {
        a += seq_k[i].a;
        b += seq_k[i].b;
    }
    printf("RESULT a_bytes=%llu b_bytes=%llu sig_bytes=%llu deep_bytes=%llu\n",
           (unsigned long long)a, (unsigned long long)b, (unsigned long long)sig_bytes,
           (unsigned long long)deep_bytes);
    return 0;
}
