/* sampled.c: sampled blocks through every entry point (run with
 * prof:true,prof_sample:1, where every allocation after a thread's first
 * is sampled; also under junk:true and prof:false). Checks contents,
 * usable sizes, zeroing and alignment; frees from other threads and from
 * a fork child. "sampled.c: ok" on stdout when every check passed.
 *
 * usage: sampled [--expect-sampled] [double-free|double-free-aligned|realloc-freed]
 *   --expect-sampled: fail unless small blocks are served the sampled way
 *     (usable size: block end minus a pointer 16 bytes in).
 *   double-free...: make that mistake on a sampled block and return 0 if
 *     the allocator did not stop the process (the caller expects an abort
 *     with a message on stderr). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int failures;

#define CHECK(cond, ...)                                                        \
    do {                                                                        \
        if (!(cond)) {                                                          \
            failures++;                                                         \
            fprintf(stderr, "sampled.c:%d: check failed: %s: ", __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                       \
            fputc('\n', stderr);                                                \
        }                                                                       \
    } while (0)

/* Opaque to the compiler: no builtin folding of the malloc family. */
static void *(*volatile use)(void *) = NULL;
static void *keep_(void *p) { return p; }
/* Called through these, the mistakes below compile without warnings. */
static void (*volatile free_v)(void *) = free;
static void *(*volatile realloc_v)(void *, size_t) = realloc;
static volatile size_t huge_count = SIZE_MAX / 2;
static void *(*volatile reallocarray_v)(void *, size_t, size_t) = reallocarray;

static void fill(void *p, size_t n, unsigned seed)
{
    unsigned char *c = p;
    for (size_t i = 0; i < n; i++)
        c[i] = (unsigned char)(seed + i * 7);
}

static int intact(const void *p, size_t n, unsigned seed)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++)
        if (c[i] != (unsigned char)(seed + i * 7))
            return 0;
    return 1;
}

static int zeroed(const void *p, size_t n)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++)
        if (c[i])
            return 0;
    return 1;
}

static const size_t sizes[] = {0,     1,     8,      15,     16,     17,     31,      32,
                               48,    100,   128,    200,    1000,   1024,   4000,    4096,
                               9300,  16384, 65536,  100000, 262128, 262136, 262144,  262145,
                               300000, (size_t)3 << 20};
#define NSIZES (sizeof sizes / sizeof sizes[0])

static void t_malloc(void)
{
    void *p[NSIZES];
    for (unsigned i = 0; i < NSIZES; i++) {
        p[i] = use(malloc(sizes[i]));
        CHECK(p[i] != NULL, "malloc(%zu)", sizes[i]);
        CHECK(((uintptr_t)p[i] & 15) == 0, "malloc(%zu) = %p", sizes[i], p[i]);
        size_t u = malloc_usable_size(p[i]);
        CHECK(u >= sizes[i], "malloc_usable_size(malloc(%zu)) = %zu", sizes[i], u);
        fill(p[i], u, i); /* every usable byte is the program's */
    }
    for (unsigned i = 0; i < NSIZES; i++) {
        CHECK(intact(p[i], malloc_usable_size(p[i]), i), "contents of malloc(%zu)", sizes[i]);
        free(p[i]);
    }
    /* Many live at once, freed in another order. */
    static void *many[4096];
    for (unsigned i = 0; i < 4096; i++) {
        many[i] = use(malloc(1 + i % 300));
        fill(many[i], 1 + i % 300, i);
    }
    for (unsigned i = 0; i < 4096; i += 2)
        free(many[i]);
    for (unsigned i = 1; i < 4096; i += 2) {
        CHECK(intact(many[i], 1 + i % 300, i), "block %u", i);
        free(many[i]);
    }
}

static void t_calloc(void)
{
    for (unsigned i = 0; i < NSIZES; i++) {
        /* Dirty blocks of the class first, so calloc has to zero. */
        void *d = use(malloc(sizes[i]));
        memset(d, 0xff, malloc_usable_size(d));
        free(d);
        unsigned char *p = use(calloc(1, sizes[i]));
        CHECK(p != NULL, "calloc(1, %zu)", sizes[i]);
        CHECK(zeroed(p, sizes[i]), "calloc(1, %zu) zeroed", sizes[i]);
        CHECK(malloc_usable_size(p) >= sizes[i], "usable of calloc(1, %zu)", sizes[i]);
        free(p);
    }
    void *p = use(calloc(100, 37));
    CHECK(p && zeroed(p, 3700), "calloc(100, 37)");
    free(p);
}

static void t_realloc(void)
{
    /* Grows one byte at a time past several classes, then in big steps
     * through large and huge blocks, then shrinks back to small. */
    size_t n = 1;
    unsigned char *p = use(malloc(1));
    p[0] = 0;
    for (; n < 3000; n++) {
        p = realloc(p, n + 1);
        CHECK(p != NULL, "realloc to %zu", n + 1);
        if (!p)
            return;
        p[n] = (unsigned char)n;
    }
    for (size_t i = 0; i < n; i++)
        if (p[i] != (unsigned char)i) {
            CHECK(0, "byte %zu after growing by realloc", i);
            break;
        }
    static const size_t steps[] = {9300, 70000, 262140, 262144, 500000, (size_t)5 << 20,
                                   (size_t)9 << 20, 700000, 200000, 3000, 100, 16, 1};
    size_t have = n;
    for (unsigned k = 0; k < sizeof steps / sizeof steps[0]; k++) {
        size_t m = steps[k];
        unsigned char *q = realloc(p, m);
        CHECK(q != NULL, "realloc to %zu", m);
        if (!q)
            return;
        size_t keep = have < m ? have : m;
        for (size_t i = 0; i < keep; i++)
            if (q[i] != (unsigned char)i) {
                CHECK(0, "byte %zu after realloc to %zu", i, m);
                break;
            }
        for (size_t i = keep; i < m; i++)
            q[i] = (unsigned char)i;
        CHECK(malloc_usable_size(q) >= m, "usable after realloc to %zu", m);
        p = q;
        have = m;
    }
    CHECK(realloc(p, 0) == NULL, "realloc(p, 0) frees");
    /* In place inside the block, and reallocarray. */
    p = use(malloc(200));
    fill(p, 200, 5);
    unsigned char *q = realloc(p, 190);
    CHECK(q && intact(q, 190, 5), "realloc shrinking a little");
    q = reallocarray(q, 30, 10);
    CHECK(q && intact(q, 190, 5), "reallocarray growing");
    CHECK(reallocarray_v(q, huge_count, 3) == NULL, "reallocarray overflow");
    free_v(q); /* (a failed reallocarray leaves q allocated) */
    /* Big sampled blocks resized inside their run, and a huge one (1 MiB
     * alignment) shrunk to slab sizes: each must stay a sampled block. */
    static const size_t big_steps[] = {300000, 290000, 270000, 250000, 200000, 20000, 100};
    for (int huge = 0; huge < 2; huge++) {
        q = huge ? use(memalign((size_t)1 << 20, 262145)) : use(malloc(262145));
        CHECK(q != NULL, "big block %d", huge);
        if (!q)
            break;
        fill(q, 262145, 9);
        size_t held = 262145;
        for (unsigned k = 0; k < sizeof big_steps / sizeof big_steps[0]; k++) {
            size_t m = big_steps[k];
            unsigned char *r = realloc(q, m);
            CHECK(r && intact(r, held < m ? held : m, 9), "big %d realloc to %zu", huge, m);
            if (!r)
                break;
            if (m > held)
                fill(r, m, 9);
            CHECK(malloc_usable_size(r) >= m, "big %d usable after realloc to %zu", huge, m);
            q = r;
            held = m;
        }
        free(q);
    }
    q = realloc(NULL, 77); /* a malloc */
    CHECK(q && malloc_usable_size(q) >= 77, "realloc(NULL, 77)");
    free(q);
}

static void t_aligned(void)
{
    static const size_t aligns[] = {8, 16, 32, 64, 128, 256, 4096, 8192, 65536, 131072};
    static const size_t asz[] = {0, 1, 24, 100, 1000, 5000, 70000, 262000, 300000};
    for (unsigned a = 0; a < sizeof aligns / sizeof aligns[0]; a++) {
        for (unsigned s = 0; s < sizeof asz / sizeof asz[0]; s++) {
            size_t al = aligns[a], sz = asz[s];
            void *p[3] = {0};
            CHECK(posix_memalign(&p[0], al, sz) == 0, "posix_memalign(%zu, %zu)", al, sz);
            p[1] = use(aligned_alloc(al, sz));
            p[2] = use(memalign(al, sz));
            for (int k = 0; k < 3; k++) {
                CHECK(p[k] && ((uintptr_t)p[k] & (al - 1)) == 0, "aligned %d (%zu, %zu) = %p", k,
                      al, sz, p[k]);
                if (!p[k])
                    continue;
                size_t u = malloc_usable_size(p[k]);
                CHECK(u >= sz, "usable of aligned %d (%zu, %zu) = %zu", k, al, sz, u);
                fill(p[k], u, (unsigned)(a + s + k));
            }
            for (int k = 0; k < 3; k++) {
                if (!p[k])
                    continue;
                CHECK(intact(p[k], malloc_usable_size(p[k]), (unsigned)(a + s + k)),
                      "contents of aligned %d (%zu, %zu)", k, al, sz);
                /* grows out of its aligned block: stays a sampled block */
                void *q = realloc(p[k], sz + 3000);
                CHECK(q && intact(q, sz, (unsigned)(a + s + k)), "realloc of aligned (%zu, %zu)",
                      al, sz);
                free(q);
            }
        }
    }
    void *v = use(valloc(100));
    CHECK(v && ((uintptr_t)v & 4095) == 0 && malloc_usable_size(v) >= 100, "valloc");
    free(v);
    v = use(pvalloc(5000));
    CHECK(v && ((uintptr_t)v & 4095) == 0 && malloc_usable_size(v) >= 8192, "pvalloc");
    free(v);
}

static void t_free_variants(void)
{
    void (*free_sized_)(void *, size_t) = (void (*)(void *, size_t))dlsym(RTLD_DEFAULT, "free_sized");
    void (*free_aligned_sized_)(void *, size_t, size_t) =
        (void (*)(void *, size_t, size_t))dlsym(RTLD_DEFAULT, "free_aligned_sized");
    void (*cfree_)(void *) = (void (*)(void *))dlsym(RTLD_DEFAULT, "cfree");
    CHECK(free_sized_ && free_aligned_sized_ && cfree_, "free_sized, free_aligned_sized, cfree");
    if (!free_sized_ || !free_aligned_sized_ || !cfree_)
        return;
    for (int i = 0; i < 100; i++) {
        void *p = use(malloc(100 + i));
        free_sized_(p, 100 + i);
        p = use(aligned_alloc(64, 640));
        free_aligned_sized_(p, 64, 640);
        p = use(malloc(300000));
        free_sized_(p, 300000);
        cfree_(use(malloc(40)));
    }
}

/* Blocks allocated by one thread, freed by another (remote frees). */
#define XN 2000
static void *xfer[XN];
static void *freer(void *arg)
{
    (void)arg;
    for (int i = 0; i < XN; i++) {
        CHECK(intact(xfer[i], 1 + (size_t)i % 500, (unsigned)i), "remote block %d", i);
        free(xfer[i]);
    }
    void *p = use(malloc(10)); /* the thread's first allocation: unsampled */
    free(p);
    return NULL;
}

static void t_threads(void)
{
    for (int i = 0; i < XN; i++) {
        xfer[i] = use(malloc(1 + (size_t)i % 500));
        fill(xfer[i], 1 + (size_t)i % 500, (unsigned)i);
    }
    pthread_t t;
    pthread_create(&t, NULL, freer, NULL);
    pthread_join(t, NULL);
}

static void t_fork(void)
{
    void *p[64];
    for (int i = 0; i < 64; i++) {
        p[i] = use(malloc(64 + (size_t)i * 40));
        fill(p[i], 64 + (size_t)i * 40, (unsigned)i);
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        int bad = 0;
        for (int i = 0; i < 64; i++) {
            bad += !intact(p[i], 64 + (size_t)i * 40, (unsigned)i);
            free(p[i]);
            void *q = use(malloc(100));
            void *r = use(realloc(q, 5000));
            free(r);
        }
        _exit(bad ? 3 : 0);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "fork child freed the parent's blocks (%d)", st);
    for (int i = 0; i < 64; i++)
        free(p[i]);
}

static int mistake(const char *what)
{
    void *p;
    if (!strcmp(what, "double-free")) {
        p = use(malloc(100));
        free_v(p);
        free_v(p);
    } else if (!strcmp(what, "double-free-aligned")) {
        p = use(memalign(64, 100));
        free_v(p);
        free_v(p);
    } else if (!strcmp(what, "realloc-freed")) {
        p = use(malloc(100));
        free_v(p);
        p = realloc_v(p, 200);
    } else {
        fprintf(stderr, "unknown mistake %s\n", what);
        return 2;
    }
    return 0; /* not stopped */
}

int main(int argc, char **argv)
{
    use = keep_;
    int expect_sampled = argc > 1 && !strcmp(argv[1], "--expect-sampled");
    /* The first crossing (before boot: the profiler boots with the first
     * heap) re-checks after a MiB; the next one, after boot, only arms the
     * thread's counter. */
    for (int i = 0; i < 3; i++)
        free(use(malloc((size_t)2 << 20)));
    free(use(malloc(1)));
    if (argc > 1 + expect_sampled)
        return mistake(argv[1 + expect_sampled]);
    if (expect_sampled) {
        /* 1000 bytes: a block of 1024 handed out 16 bytes in. */
        void *p = use(malloc(1000));
        CHECK(malloc_usable_size(p) == 1008, "malloc(1000) sampled: usable %zu, want 1008",
              malloc_usable_size(p));
        CHECK(((uintptr_t)p & 1023) != 0, "malloc(1000) sampled: %p is a block boundary", p);
        free(p);
    }
    t_malloc();
    t_calloc();
    t_realloc();
    t_aligned();
    t_free_variants();
    t_threads();
    t_fork();
    if (failures) {
        printf("sampled.c: %d checks failed\n", failures);
        return 1;
    }
    printf("sampled.c: ok\n");
    return 0;
}
