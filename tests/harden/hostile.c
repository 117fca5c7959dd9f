/* tests/harden/hostile.c: one wrong or hostile call per run, named by
 * argv[1]; tests/harden/hostile.sh runs every case of hostile.tsv under
 * LD_PRELOAD and compares the outcome with the documented one: death by
 * SIGABRT with a given message, or a return with the given error code
 * (then this program checks the code and exits 0). Exit 2: case unknown;
 * exit 3: the call returned although it must not have. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Through volatile pointers: the compiler must not see (or fold) misuse. */
static void (*volatile free_fn)(void *) = free;
static void *(*volatile malloc_fn)(size_t) = malloc;
static void *(*volatile realloc_fn)(void *, size_t) = realloc;
static void *(*volatile calloc_fn)(size_t, size_t) = calloc;
static void *(*volatile reallocarray_fn)(void *, size_t, size_t) = reallocarray;
static size_t volatile big_size = SIZE_MAX;
static char global_buf[256] __attribute__((aligned(64)));
static void *shared;

static int expect_null(void *p, int err, const char *what)
{
    if (p || errno != err) {
        printf("%s: got %p errno %d, want NULL errno %d\n", what, p, errno, err);
        return 1;
    }
    return 0;
}

static void *thread_free(void *arg)
{
    (void)arg;
    free_fn(shared);
    return NULL;
}

static void free_in_thread(void)
{
    pthread_t t;
    pthread_create(&t, NULL, thread_free, NULL);
    pthread_join(t, NULL);
}

/* Frees shared and stays alive (its heap keeps the block for its next
 * malloc) until main has made its own free. */
static pthread_barrier_t kept_bar;
static void *thread_free_and_stay(void *arg)
{
    (void)arg;
    free_fn(shared);
    pthread_barrier_wait(&kept_bar);
    pthread_barrier_wait(&kept_bar);
    return NULL;
}

static void *thread_malloc(void *arg)
{
    (void)arg;
    shared = malloc_fn(48);
    return NULL;
}

int main(int argc, char **argv)
{
    const char *c = argc > 1 ? argv[1] : "";
    char stack_buf[128] __attribute__((aligned(64)));
    memset(stack_buf, 1, sizeof stack_buf);
    /* A running program has allocated before: the allocator is initialised
     * (before that, foreign pointers are let go: see free-before-init). */
    if (strcmp(c, "free-before-init"))
        free_fn(malloc_fn(1));
    errno = 0;
    if (!strcmp(c, "free-before-init")) {
        free_fn(stack_buf);
        return 0;
    } else if (!strcmp(c, "copy-stale-bytes")) {
        /* Regression (prof deadlock test, prof_sample:1): realloc of a large
         * block to a small one copied bytes the program never wrote, from a
         * run that had held freed small blocks, and their free marks with
         * them: the new block's free was then taken for a double free.
         * Fill a run with 3 KiB blocks, free them, take a large block
         * (likely that run), copy its unwritten bytes into small blocks
         * and free those: all of it must pass. */
        enum { NB = 200 };
        static void *b[NB];
        for (int i = 0; i < NB; i++)
            b[i] = malloc_fn(3072);
        for (int i = 0; i < NB; i++)
            free_fn(b[i]);
        int stale = 0;
        for (int round = 0; round < 8; round++) {
            unsigned char *big = malloc_fn(256 * 1024);
            for (size_t o = 0; o + 3072 <= 256 * 1024; o += 3072) {
                stale += big[o + 8] != 0;
                void *q = malloc_fn(3000);
                memcpy(q, big + o, 3000);
                free_fn(q);
            }
            void *r = realloc_fn(big, 3000); /* large to small: a copy */
            free_fn(r);
        }
        printf("copy-stale-bytes: %d copies carried stale bytes\n", stale);
        return 0;
    } else if (!strcmp(c, "free-stack")) {
        free_fn(stack_buf);
    } else if (!strcmp(c, "free-global")) {
        free_fn(global_buf);
    } else if (!strcmp(c, "free-mmap")) {
        char *m = mmap(NULL, 4u << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        free_fn(m + (2u << 20) - ((uintptr_t)m & ((2u << 20) - 1))); /* 2 MiB-aligned inside */
    } else if (!strcmp(c, "free-glibc")) {
        void *(*libc_malloc)(size_t) = (void *(*)(size_t))dlvsym(RTLD_NEXT, "malloc", "GLIBC_2.2.5");
        if (!libc_malloc)
            return 2;
        free_fn(libc_malloc(100));
    } else if (!strcmp(c, "free-low-address")) {
        free_fn((void *)0x1000);
    } else if (!strcmp(c, "free-interior-small")) {
        char *p = malloc_fn(64);
        free_fn(p + 16);
    } else if (!strcmp(c, "free-interior-small-unaligned")) {
        char *p = malloc_fn(100);
        free_fn(p + 8);
    } else if (!strcmp(c, "free-interior-large")) {
        char *p = malloc_fn(300000);
        free_fn(p + 65536);
    } else if (!strcmp(c, "free-interior-huge")) {
        char *p = malloc_fn(8u << 20);
        free_fn(p + 4096);
    } else if (!strcmp(c, "free-interior-huge-far")) {
        char *p = malloc_fn(8u << 20);
        free_fn(p + (5u << 20)); /* in a later 2 MiB region of the mapping */
    } else if (!strcmp(c, "free-unmapped-huge")) {
        char *p = malloc_fn(64u << 20); /* too big for the huge cache */
        free_fn(p);
        free_fn(p);
    } else if (!strcmp(c, "double-free-small")) {
        void *p = malloc_fn(32);
        free_fn(p);
        free_fn(p);
    } else if (!strcmp(c, "double-free-small-between")) {
        void *p = malloc_fn(32), *q = malloc_fn(32), *r = malloc_fn(32);
        free_fn(p);
        free_fn(q);
        free_fn(r);
        free_fn(p);
    } else if (!strcmp(c, "double-free-large")) {
        void *p = malloc_fn(500000);
        free_fn(p);
        free_fn(p);
    } else if (!strcmp(c, "double-free-large-between")) {
        void *p = malloc_fn(500000), *q = malloc_fn(700000);
        free_fn(p);
        free_fn(q);
        free_fn(p);
    } else if (!strcmp(c, "double-free-huge")) {
        void *p = malloc_fn(4u << 20);
        free_fn(p);
        free_fn(p);
    } else if (!strcmp(c, "double-free-remote-remote")) {
        /* Owner allocates; two other threads free the same block. */
        shared = malloc_fn(48);
        free_in_thread();
        free_in_thread();
    } else if (!strcmp(c, "double-free-remote-owner")) {
        shared = malloc_fn(48);
        free_in_thread();
        free_fn(shared);
    } else if (!strcmp(c, "double-free-kept-owner")) {
        /* Thread B frees the owner's block and keeps it for its own next
         * malloc (a stack no other thread can walk); the owner frees it. */
        shared = malloc_fn(48);
        pthread_t t;
        pthread_barrier_init(&kept_bar, NULL, 2);
        pthread_create(&t, NULL, thread_free_and_stay, NULL);
        pthread_barrier_wait(&kept_bar);
        free_fn(shared);
        pthread_barrier_wait(&kept_bar);
        pthread_join(t, NULL);
    } else if (!strcmp(c, "free-never-allocated")) {
        /* The next block of the slab: carved, never handed out. */
        char *p = malloc_fn(64);
        free_fn(p + 64);
    } else if (!strcmp(c, "double-free-owner-remote")) {
        shared = malloc_fn(48);
        free_fn(shared);
        free_in_thread();
    } else if (!strcmp(c, "double-free-foreign-local")) {
        /* A block of a thread that exited, freed twice by main. */
        pthread_t t;
        pthread_create(&t, NULL, thread_malloc, NULL);
        pthread_join(t, NULL);
        free_fn(shared);
        free_fn(shared);
    } else if (!strcmp(c, "realloc-freed-small")) {
        void *p = malloc_fn(64);
        free_fn(p);
        realloc_fn(p, 200);
    } else if (!strcmp(c, "realloc-freed-small-same-class")) {
        void *p = malloc_fn(64);
        free_fn(p);
        realloc_fn(p, 60);
    } else if (!strcmp(c, "realloc-freed-large")) {
        void *p = malloc_fn(500000);
        free_fn(p);
        realloc_fn(p, 600000);
    } else if (!strcmp(c, "realloc-freed-large-same-run")) {
        void *p = malloc_fn(500000);
        free_fn(p);
        realloc_fn(p, 500100);
    } else if (!strcmp(c, "realloc-interior-large")) {
        char *p = malloc_fn(500000);
        realloc_fn(p + 65536, 500100);
    } else if (!strcmp(c, "realloc-freed-huge")) {
        void *p = malloc_fn(64u << 20);
        free_fn(p);
        realloc_fn(p, 100);
    } else if (!strcmp(c, "realloc-stack")) {
        realloc_fn(stack_buf, 100);
    } else if (!strcmp(c, "usable-size-stack")) {
        malloc_usable_size(stack_buf);
    } else if (!strcmp(c, "usable-size-interior-small")) {
        char *p = malloc_fn(64);
        malloc_usable_size(p + 16);
    } else if (!strcmp(c, "malloc-size-max")) {
        return expect_null(malloc_fn(big_size), ENOMEM, "malloc(SIZE_MAX)");
    } else if (!strcmp(c, "malloc-ptrdiff-max-plus-1")) {
        return expect_null(malloc_fn((size_t)PTRDIFF_MAX + 1), ENOMEM, "malloc(PTRDIFF_MAX+1)");
    } else if (!strcmp(c, "malloc-2-pow-47")) {
        return expect_null(malloc_fn((size_t)1 << 47), ENOMEM, "malloc(2^47)");
    } else if (!strcmp(c, "calloc-overflow")) {
        return expect_null(calloc_fn(big_size / 2, 3), ENOMEM, "calloc overflow");
    } else if (!strcmp(c, "realloc-size-max")) {
        char *p = malloc_fn(100);
        memset(p, 7, 100);
        if (expect_null(realloc_fn(p, big_size), ENOMEM, "realloc(p, SIZE_MAX)"))
            return 1;
        for (int i = 0; i < 100; i++)
            if (p[i] != 7)
                return 1;
        free_fn(p);
        return 0;
    } else if (!strcmp(c, "reallocarray-overflow")) {
        char *p = malloc_fn(100);
        if (expect_null(reallocarray_fn(p, big_size / 2, 3), ENOMEM, "reallocarray overflow"))
            return 1;
        free_fn(p);
        return 0;
    } else if (!strcmp(c, "posix-memalign-non-pow2")) {
        void *p = stack_buf;
        return posix_memalign(&p, 48, 16) == EINVAL && p == stack_buf ? 0 : 1;
    } else if (!strcmp(c, "posix-memalign-zero")) {
        void *p = stack_buf;
        return posix_memalign(&p, 0, 16) == EINVAL && p == stack_buf ? 0 : 1;
    } else if (!strcmp(c, "posix-memalign-2-pow-62")) {
        void *p = stack_buf;
        return posix_memalign(&p, (size_t)1 << 62, 16) == ENOMEM && p == stack_buf ? 0 : 1;
    } else if (!strcmp(c, "posix-memalign-1-gib")) {
        void *p = NULL;
        if (posix_memalign(&p, (size_t)1 << 30, 100) || ((uintptr_t)p & ((1u << 30) - 1)))
            return 1;
        free_fn(p);
        return 0;
    } else if (!strcmp(c, "memalign-above-ptrdiff")) {
        return expect_null(memalign((size_t)PTRDIFF_MAX + 2, 16), EINVAL, "memalign(2^63+1)");
    } else if (!strcmp(c, "aligned-alloc-non-pow2")) {
        char *p = aligned_alloc(48, 96); /* rounded up to 64, as glibc < 2.38 */
        if (!p || ((uintptr_t)p & 63))
            return 1;
        free_fn(p);
        return 0;
    } else if (!strcmp(c, "junk-overflow-1")) {
        char *p = malloc_fn(100);
        p[100] = 1;
        free_fn(p);
    } else if (!strcmp(c, "junk-overflow-large")) {
        char *p = malloc_fn(100000);
        p[100000] = 1;
        free_fn(p);
    } else if (!strcmp(c, "junk-overflow-huge")) {
        char *p = malloc_fn((3u << 20) + 100);
        p[(3u << 20) + 100] = 1;
        free_fn(p);
    } else if (!strcmp(c, "junk-in-bounds")) {
        /* Writing every byte of the request is fine, also after realloc. */
        char *p = malloc_fn(100);
        memset(p, 0xa5 ^ 0xff, 100);
        p = realloc_fn(p, 102); /* same class: may stay in place */
        memset(p, 1, 102);
        p = realloc_fn(p, 110);
        memset(p, 1, 110);
        p = realloc_fn(p, 50);
        memset(p, 2, 50);
        free_fn(p);
        p = calloc_fn(10, 10);
        memset(p, 3, 100);
        free_fn(p);
        /* malloc_usable_size bytes are the program's to use. */
        p = malloc_fn(200);
        memset(p, 4, malloc_usable_size(p) - 9);
        free_fn(p);
        return 0;
    } else if (!strcmp(c, "junk-stale-tag")) {
        /* A big block of the same usable size at the same address as a
         * freed one, from an entry point that does not junk-fill (aligned,
         * calloc): the old block's redzone tag is no tag of the new one. */
        char *a = malloc_fn(265000);
        free_fn(a);
        void *q = NULL;
        if (posix_memalign(&q, 32, 300000) || malloc_usable_size(q) < 300000)
            return 3;
        memset(q, 1, 300000);
        free_fn(q);
        a = malloc_fn(265000);
        free_fn(a);
        char *z = calloc_fn(1, 300000);
        if (!z || malloc_usable_size(z) < 300000)
            return 3;
        memset(z, 2, 300000);
        free_fn(z);
        return 0;
    } else {
        return 2;
    }
    return 3;
}
