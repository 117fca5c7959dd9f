/* tests/integration/probe_fork.c: fork from a busy multi-threaded process.
 * Eight threads allocate and free in a loop while main forks 50 times; each
 * child allocates, writes, frees, creates a thread that does the same, and
 * exits 0. A child that deadlocks on a lock held at fork time is killed by
 * an alarm (exit by SIGALRM = failure). Exit 0 on success. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr, RTLD_DEFAULT */
#endif
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/xt.h"

enum { NTHREADS = 8, FORKS = 50 };
static atomic_bool stop;
static atomic_long busy_ops;

static void *busy(void *arg)
{
    uint64_t rng = (uint64_t)(size_t)arg;
    void *slots[64] = {0};
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        size_t i = xt_rand_range(&rng, 0, 63);
        free(slots[i]);
        size_t r = xt_rand(&rng) % 100;
        size_t sz = r < 90 ? xt_rand_range(&rng, 1, 2048)
                    : r < 99 ? xt_rand_range(&rng, 2049, 200000)
                             : xt_rand_range(&rng, 1 << 20, 3 << 20);
        slots[i] = malloc(sz);
        if (slots[i] != NULL)
            memset(slots[i], (int)i, sz < 256 ? sz : 256);
        atomic_fetch_add_explicit(&busy_ops, 1, memory_order_relaxed);
    }
    for (int i = 0; i < 64; i++)
        free(slots[i]);
    return NULL;
}

static int child_work(uint64_t seed)
{
    uint64_t rng = seed;
    void *ps[200];
    size_t sz[200];
    for (int i = 0; i < 200; i++) {
        sz[i] = xt_rand_range(&rng, 1, i % 40 == 0 ? 4 << 20 : 4096);
        ps[i] = malloc(sz[i]);
        if (ps[i] == NULL)
            return 0;
        xt_fill(ps[i], sz[i], seed + (uint64_t)i);
    }
    for (int i = 0; i < 200; i++) {
        if (xt_verify(ps[i], sz[i], seed + (uint64_t)i) != sz[i])
            return 0;
        free(ps[i]);
    }
    return 1;
}

static void *child_thread(void *arg)
{
    return child_work(99) ? arg : NULL;
}

int main(int argc, char **argv)
{
    xt_require_allocator(argv[0]);
    pthread_t th[NTHREADS];
    for (size_t i = 0; i < NTHREADS; i++)
        if (pthread_create(&th[i], NULL, busy, (void *)(i + 1)) != 0)
            return 3;
    int failures = 0;
    for (int f = 0; f < FORKS; f++) {
        /* Let the threads get going between forks, and fork mid-operation. */
        long target = atomic_load(&busy_ops) + 1000;
        double until = xt_now() + 0.2;
        while (atomic_load(&busy_ops) < target && xt_now() < until)
            sched_yield();
        pid_t pid = fork();
        if (pid < 0) {
            perror("fork");
            return 3;
        }
        if (pid == 0) {
            alarm(20);
            if (!child_work((uint64_t)f))
                _exit(10);
            pthread_t t;
            void *res = NULL;
            if (pthread_create(&t, NULL, child_thread, (void *)1) != 0)
                _exit(11);
            pthread_join(t, &res);
            if (res == NULL)
                _exit(12);
            _exit(0);
        }
        int status;
        if (waitpid(pid, &status, 0) != pid) {
            perror("waitpid");
            return 3;
        }
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            if (WIFSIGNALED(status))
                fprintf(stderr, "fork %d: child killed by signal %d%s\n", f, WTERMSIG(status),
                        WTERMSIG(status) == SIGALRM ? " (deadlock?)" : "");
            else
                fprintf(stderr, "fork %d: child exit status %d\n", f, WEXITSTATUS(status));
            failures++;
        }
    }
    atomic_store(&stop, true);
    for (size_t i = 0; i < NTHREADS; i++)
        pthread_join(th[i], NULL);
    printf("%d forks, %ld operations in the busy threads, %d failures\n", FORKS,
           atomic_load(&busy_ops), failures);
    return failures == 0 ? 0 : 1;
}
