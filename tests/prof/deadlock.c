/* deadlock.c: the profiler must not deadlock or recurse. With
 * prof:true,prof_sample:1 (every allocation unwinds), worker threads
 * allocate and free, one thread loops dlopen/dlclose of an object whose
 * constructor allocates (unwinding while the loader's lock is held), one
 * thread forks (the child allocates and frees), and interval dumps run
 * meanwhile. Every fourth child exits through exit(), so that a final dump
 * runs in the child: for those forks the loader thread pauses between two
 * dlopen calls, because dlclose holds glibc's atexit lock (__cxa_finalize)
 * and a child forked then could never run exit() (glibc's limit, not the
 * allocator's: the other children _exit()).
 * Usage: deadlock SECONDS PATH_TO_dl_obj.so. Exits 0 when everything
 * finished; the caller bounds it with timeout(1). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static atomic_int stop;
static const char *obj_path;
static atomic_long allocs, loads, forks;
static atomic_int pause_req, paused;

static void *worker(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg;
    enum { N = 4096 };
    void **v = calloc(N, sizeof *v);
    while (!atomic_load(&stop)) {
        for (int i = 0; i < N; i++) {
            size_t s = 16 + (size_t)(rand_r(&seed) % 4096);
            if (rand_r(&seed) % 64 == 0)
                s = 100000 + (size_t)(rand_r(&seed) % 300000);
            free(v[i]);
            v[i] = (i & 7) ? malloc(s) : realloc(v[i ^ 1], s);
            if (i & 7 && v[i])
                ((char *)v[i])[0] = 1;
            else if (!(i & 7))
                v[i ^ 1] = NULL;
        }
        atomic_fetch_add(&allocs, N);
    }
    for (int i = 0; i < N; i++)
        free(v[i]);
    free(v);
    return NULL;
}

static void *loader(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop)) {
        if (atomic_load(&pause_req)) {
            atomic_store(&paused, 1);
            while (atomic_load(&pause_req))
                usleep(100);
            atomic_store(&paused, 0);
        }
        void *h = dlopen(obj_path, RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            fprintf(stderr, "deadlock: dlopen %s: %s\n", obj_path, dlerror());
            exit(2);
        }
        int (*fn)(void) = (int (*)(void))dlsym(h, "dl_obj_value");
        if (!fn || fn() != 42) {
            fprintf(stderr, "deadlock: dl_obj_value failed\n");
            exit(2);
        }
        dlclose(h);
        atomic_fetch_add(&loads, 1);
    }
    return NULL;
}

static void *forker(void *arg)
{
    (void)arg;
    for (long n = 0; !atomic_load(&stop); n++) {
        bool full_exit = n % 4 == 0;
        if (full_exit) {
            atomic_store(&pause_req, 1);
            while (!atomic_load(&paused) && !atomic_load(&stop))
                usleep(100);
        }
        pid_t pid = fork();
        if (full_exit && pid != 0)
            atomic_store(&pause_req, 0);
        if (pid < 0) {
            perror("deadlock: fork");
            exit(2);
        }
        if (pid == 0) {
            /* The child keeps allocating: its allocator and profiler locks
             * were released or reset by the fork handlers. */
            void *p[256];
            for (int i = 0; i < 256; i++)
                p[i] = malloc(32 + (size_t)i * 16);
            for (int i = 0; i < 256; i++)
                free(p[i]);
            if (full_exit)
                exit(0);
            _exit(0);
        }
        int st;
        if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "deadlock: child %d failed (status %d)\n", (int)pid, st);
            exit(2);
        }
        atomic_fetch_add(&forks, 1);
        usleep(20000);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: deadlock SECONDS DL_OBJ\n");
        return 2;
    }
    int seconds = atoi(argv[1]);
    obj_path = argv[2];
    enum { WORKERS = 3 };
    pthread_t w[WORKERS], l, f;
    for (int i = 0; i < WORKERS; i++)
        pthread_create(&w[i], NULL, worker, (void *)(uintptr_t)(i + 1));
    pthread_create(&l, NULL, loader, NULL);
    pthread_create(&f, NULL, forker, NULL);
    sleep((unsigned)seconds);
    atomic_store(&stop, 1);
    for (int i = 0; i < WORKERS; i++)
        pthread_join(w[i], NULL);
    pthread_join(l, NULL);
    pthread_join(f, NULL);
    printf("allocs %ld loads %ld forks %ld\n", atomic_load(&allocs), atomic_load(&loads),
           atomic_load(&forks));
    if (atomic_load(&allocs) == 0 || atomic_load(&loads) == 0 || atomic_load(&forks) == 0) {
        fprintf(stderr, "deadlock: a thread made no progress\n");
        return 1;
    }
    return 0;
}
