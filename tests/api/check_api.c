/* tests/api/check_api.c: API conformance of the malloc family as exported by
 * libxalloc.so.1 (Check suite). Runs against the real library, preloaded or
 * linked (-DXT_LINKED builds call xalloc_version() directly), and also
 * against glibc (XT_ALLOCATOR=glibc, make check-api-glibc) to prove that
 * what it requires is what glibc 2.36 does. Semantics: C11/C23, POSIX, and
 * glibc where the standards leave a choice (aligned_alloc with a bad
 * alignment, realloc(p, 0)). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr, mallinfo2, memalign */
#endif
#include <check.h>
#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdalign.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/xt.h"
#include "common/xt_check.h"
#include "xalloc.h"

/* glibc exports these internal names and some programs call them directly;
 * a drop-in allocator must provide them as the same allocator. */
extern void *__libc_malloc(size_t size);
extern void __libc_free(void *p);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t size);
extern void *__libc_memalign(size_t align, size_t size);
extern void *__libc_valloc(size_t size);
extern void *__libc_pvalloc(size_t size);

/* C23 functions glibc 2.36 lacks: looked up at run time so that the same
 * binary runs under glibc. */
typedef void free_sized_fn(void *p, size_t size);
typedef void free_aligned_sized_fn(void *p, size_t align, size_t size);
typedef size_t purge_fn(void);
typedef const char *version_fn(void);

static size_t page_size(void)
{
    return (size_t)sysconf(_SC_PAGESIZE);
}

static bool aligned_to(const void *p, size_t align)
{
    return ((uintptr_t)p & (align - 1)) == 0;
}

/* ---- the checker itself ---- */

/* The pattern checker used by every content check must catch a single
 * changed byte at any offset and any alignment, and tell blocks apart. */
START_TEST(test_pattern_selfcheck)
{
    static unsigned char buf[300];
    for (size_t start = 0; start < 8; start++) {
        unsigned char *p = buf + start;
        size_t n = sizeof buf - 8;
        uint64_t tag = xt_tag(p, n, 3);
        xt_fill(p, n, tag);
        XT_ASSERT(xt_verify(p, n, tag) == n, "fresh fill does not verify");
        XT_ASSERT(xt_verify(p, n, tag + 1) < 8, "another tag verifies");
        for (size_t off = 0; off < n; off++) {
            p[off] ^= 0x10;
            XT_ASSERT(xt_verify(p, n, tag) == off, "flip at %zu (start %zu) not found", off,
                      start);
            p[off] ^= 0x10;
        }
        xt_fill_from(p, n / 2, n, tag ^ 1);
        XT_ASSERT(xt_verify(p, n, tag) >= n / 2 && xt_verify(p, n, tag) < n,
                  "partial refill not detected");
    }
    XT_ASSERT(xt_tag(buf, 64, 1) != xt_tag(buf + 64, 64, 1), "tags of neighbours equal");
    XT_ASSERT(xt_tag(buf, 64, 1) != xt_tag(buf, 80, 1), "tags of sizes equal");
}
END_TEST

/* ---- the allocator under test ---- */

START_TEST(test_active_allocator)
{
    const char *why = xt_allocator_problem();
    XT_ASSERT(why == NULL, "%s", why ? why : "");
}
END_TEST

START_TEST(test_xalloc_version)
{
    version_fn *v = (version_fn *)dlsym(RTLD_DEFAULT, "xalloc_version");
    if (!xt_expect_xalloc()) {
        ck_assert_ptr_null((void *)v);
        return;
    }
    XT_ASSERT(((void *)v) != NULL, "unexpected NULL");
#ifdef XT_LINKED
    /* The linked build calls it directly: proves -lxalloc resolves it. */
    ck_assert_ptr_eq((void *)v, (void *)xalloc_version);
    const char *s = xalloc_version();
#else
    const char *s = v();
#endif
    char want[64];
    snprintf(want, sizeof want, "%d.%d.%d", XALLOC_VERSION_MAJOR,
             XALLOC_VERSION_MINOR, XALLOC_VERSION_PATCH);
    XT_ASSERT((s) != NULL, "unexpected NULL");
    ck_assert_str_eq(s, want);
}
END_TEST

START_TEST(test_libc_aliases)
{
    static const char *const names[] = {
        "__libc_malloc",  "__libc_free",   "__libc_calloc", "__libc_realloc",
        "__libc_memalign", "__libc_valloc", "__libc_pvalloc"};
    const char *lib = xt_expect_xalloc() ? "libxalloc.so.1" : "libc.so";
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        XT_ASSERT(xt_symbol_from(names[i], lib), "%s does not resolve to %s",
                      names[i], lib);

    /* Mixed use: each alias's memory is released by the standard name and
     * the other way round, and malloc_usable_size knows it. */
    char *p = __libc_malloc(100);
    XT_ASSERT((p) != NULL, "unexpected NULL");
    XT_ASSERT((malloc_usable_size(p)) >= (100), "%zu < %zu", (size_t)(malloc_usable_size(p)), (size_t)(100));
    memset(p, 0xab, 100);
    free(p);

    p = malloc(200);
    XT_ASSERT((p) != NULL, "unexpected NULL");
    __libc_free(p);

    unsigned char *z = __libc_calloc(50, 20);
    XT_ASSERT((z) != NULL, "unexpected NULL");
    for (size_t i = 0; i < 1000; i++)
        XT_ASSERT((z[i]) == (0), "%zu != %zu", (size_t)(z[i]), (size_t)(0));
    XT_ASSERT((malloc_usable_size(z)) >= (1000), "%zu < %zu", (size_t)(malloc_usable_size(z)), (size_t)(1000));
    free(z);

    p = malloc(64);
    XT_ASSERT((p) != NULL, "unexpected NULL");
    xt_fill(p, 64, 7);
    p = __libc_realloc(p, 100000);
    XT_ASSERT((p) != NULL, "unexpected NULL");
    XT_ASSERT((xt_verify(p, 64, 7)) == (64), "%zu != %zu", (size_t)(xt_verify(p, 64, 7)), (size_t)(64));
    XT_ASSERT((malloc_usable_size(p)) >= (100000), "%zu < %zu", (size_t)(malloc_usable_size(p)), (size_t)(100000));
    free(p);

    p = __libc_memalign(4096, 300);
    XT_ASSERT((p) != NULL, "unexpected NULL");
    XT_ASSERT(aligned_to(p, 4096), "check failed");
    XT_ASSERT((malloc_usable_size(p)) >= (300), "%zu < %zu", (size_t)(malloc_usable_size(p)), (size_t)(300));
    free(p);

    p = __libc_valloc(10);
    XT_ASSERT((p) != NULL, "unexpected NULL");
    XT_ASSERT(aligned_to(p, page_size()), "check failed");
    __libc_free(p);

    p = __libc_pvalloc(10);
    XT_ASSERT((p) != NULL, "unexpected NULL");
    XT_ASSERT(aligned_to(p, page_size()), "check failed");
    XT_ASSERT((malloc_usable_size(p)) >= (page_size()), "%zu < %zu", (size_t)(malloc_usable_size(p)), (size_t)(page_size()));
    memset(p, 1, page_size());
    free(p);
}
END_TEST

/* ---- malloc, free, malloc_usable_size ---- */

/* Every size from 0 to 1 MiB: aligned to 16 (and to max_align_t), usable
 * size at least the request, first and last usable byte writable. A ring of
 * live blocks keeps several classes and addresses in play at once. */
START_TEST(test_every_size_aligned)
{
    enum { RING = 64 };
    void *ring[RING] = {0};
    size_t maxal = alignof(max_align_t) > 16 ? alignof(max_align_t) : 16;
    for (size_t size = 0; size <= XT_MiB; size++) {
        unsigned char *p = malloc(size);
        XT_ASSERT(p != NULL, "malloc(%zu) returned NULL", size);
        XT_ASSERT(aligned_to(p, maxal), "malloc(%zu) = %p not %zu-aligned", size,
                      (void *)p, maxal);
        size_t u = malloc_usable_size(p);
        XT_ASSERT(u >= size, "malloc_usable_size(malloc(%zu)) = %zu", size, u);
        if (u > 0) {
            p[0] = (unsigned char)size;
            p[u - 1] = (unsigned char)(size >> 8);
        }
        size_t slot = size % RING;
        free(ring[slot]);
        ring[slot] = p;
    }
    for (size_t i = 0; i < RING; i++)
        free(ring[i]);
}
END_TEST

START_TEST(test_malloc_zero_unique)
{
    enum { N = 1000 };
    void *ps[N];
    for (size_t i = 0; i < N; i++) {
        ps[i] = malloc(0);
        XT_ASSERT(ps[i] != NULL, "malloc(0) #%zu returned NULL", i);
    }
    for (size_t i = 0; i < N; i++)
        for (size_t j = i + 1; j < N; j++)
            XT_ASSERT(ps[i] != ps[j], "malloc(0) returned %p twice", ps[i]);
    for (size_t i = 0; i < N; i++)
        free(ps[i]);
    free(NULL);
    XT_ASSERT((malloc_usable_size(NULL)) == (0), "%zu != %zu", (size_t)(malloc_usable_size(NULL)), (size_t)(0));
    /* Still usable after all that. */
    void *p = malloc(32);
    XT_ASSERT((p) != NULL, "unexpected NULL");
    free(p);
}
END_TEST

/* Blocks of one size filled over their full usable size with distinct
 * patterns: a block must not overlap a neighbour or the allocator's own
 * metadata (which would be overwritten, or overwrite the pattern). */
START_TEST(test_neighbours_intact)
{
    static const size_t sizes[] = {
        1,    8,    16,    24,    32,    48,    64,    80,    96,    112,
        128,  160,  192,   224,   256,   320,   384,   448,   512,   640,
        768,  896,  1024,  1280,  1536,  1792,  2048,  2560,  3072,  3584,
        4096, 5000, 6144,  8192,  9300,  12288, 16384, 20480, 32768, 40000,
        65536, 100000, 131072, 200000, 262144, 300000, 524288, 1048576};
    uint64_t rng = 12345;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t size = sizes[s];
        size_t n = (4 * XT_MiB) / size;
        n = n < 8 ? 8 : n > 2000 ? 2000 : n;
        void **ps = malloc(n * sizeof *ps);
        size_t *us = malloc(n * sizeof *us);
        XT_ASSERT(ps != NULL && us != NULL, "check failed");
        for (size_t i = 0; i < n; i++) {
            ps[i] = malloc(size);
            XT_ASSERT((ps[i]) != NULL, "unexpected NULL");
            us[i] = malloc_usable_size(ps[i]);
            XT_ASSERT((us[i]) >= (size), "%zu < %zu", (size_t)(us[i]), (size_t)(size));
            xt_fill(ps[i], us[i], xt_tag(ps[i], size, s));
        }
        for (size_t i = 0; i < n; i++) {
            size_t bad = xt_verify(ps[i], us[i], xt_tag(ps[i], size, s));
            XT_ASSERT(bad == us[i],
                          "size %zu: block %zu (%p, usable %zu) corrupted at offset %zu",
                          size, i, ps[i], us[i], bad);
        }
        /* Free in random order, verifying the survivors each time a quarter
         * has gone: frees must not scribble on live neighbours either. */
        for (size_t i = n - 1; i > 0; i--) {
            size_t j = xt_rand_range(&rng, 0, i);
            void *t = ps[i];
            size_t tu = us[i];
            ps[i] = ps[j];
            us[i] = us[j];
            ps[j] = t;
            us[j] = tu;
        }
        for (size_t i = 0; i < n; i++) {
            free(ps[i]);
            if (i % (n / 4 + 1) == 0)
                for (size_t k = i + 1; k < n; k++)
                    XT_ASSERT(xt_verify(ps[k], us[k], xt_tag(ps[k], size, s)) == us[k],
                                  "size %zu: live block %p corrupted by frees", size, ps[k]);
        }
        free(ps);
        free(us);
    }
}
END_TEST

/* Huge requests fail cleanly: NULL with ENOMEM, never a crash or a block
 * smaller than asked for. */
static const size_t huge_sizes[] = {
    SIZE_MAX,
    SIZE_MAX - 1,
    SIZE_MAX - 4095,
    SIZE_MAX - ((size_t)2 << 20),
    (size_t)PTRDIFF_MAX + 1,
    (size_t)PTRDIFF_MAX,
    (size_t)1 << 62,
    (size_t)1 << 56, /* beyond the 47-bit user address space */
};
#define N_HUGE (sizeof huge_sizes / sizeof huge_sizes[0])

START_TEST(test_malloc_huge_enomem)
{
    for (size_t i = 0; i < N_HUGE; i++) {
        size_t size = xt_opaque(huge_sizes[i]);
        errno = 0;
        void *p = malloc(size);
        XT_ASSERT(p == NULL, "malloc(%zu) = %p", size, p);
        XT_ASSERT(errno == ENOMEM, "malloc(%zu): errno %d, want ENOMEM", size, errno);

        errno = 0;
        p = calloc(1, size);
        XT_ASSERT(p == NULL && errno == ENOMEM, "calloc(1, %zu) = %p errno %d", size, p,
                      errno);
        errno = 0;
        p = memalign(64, size);
        XT_ASSERT(p == NULL && errno == ENOMEM, "memalign(64, %zu) = %p errno %d",
                      size, p, errno);
        errno = 0;
        p = aligned_alloc(4096, size);
        XT_ASSERT(p == NULL && errno == ENOMEM, "aligned_alloc(4096, %zu) = %p errno %d",
                      size, p, errno);
        errno = 0;
        p = valloc(size);
        XT_ASSERT(p == NULL && errno == ENOMEM, "valloc(%zu) = %p errno %d", size, p,
                      errno);
        errno = 0;
        p = pvalloc(size);
        XT_ASSERT(p == NULL && errno == ENOMEM, "pvalloc(%zu) = %p errno %d", size, p,
                      errno);
        void *m = (void *)&m;
        int rc = posix_memalign(&m, 64, size);
        XT_ASSERT(rc == ENOMEM, "posix_memalign(64, %zu) = %d, want ENOMEM", size, rc);
    }
    /* The allocator still works after the failures. */
    void *p = malloc(100);
    XT_ASSERT((p) != NULL, "unexpected NULL");
    free(p);
}
END_TEST

/* ---- calloc ---- */

static void check_zero(const unsigned char *p, size_t n, const char *what, size_t round)
{
    for (size_t i = 0; i < n; i++)
        XT_ASSERT(p[i] == 0, "%s: byte %zu of %zu is 0x%02x (round %zu)", what, i, n,
                      p[i], round);
}

START_TEST(test_calloc_zeroes)
{
    static const size_t sizes[] = {1,     8,      16,     24,     100,    512,
                                   1000,  4096,   9300,   40000,  131072, 262145,
                                   300000, 1048576, 3000000, 8388608};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t size = sizes[s];
        unsigned char *p = calloc(1, size);
        XT_ASSERT((p) != NULL, "unexpected NULL");
        check_zero(p, size, "fresh calloc", 0);
        free(p);
        /* Dirty reuse: calloc must zero memory a previous block wrote. Many
         * rounds, so the freed block is reused from every cache level. */
        size_t rounds = size <= 65536 ? 200 : size <= XT_MiB ? 30 : 8;
        for (size_t r = 0; r < rounds; r++) {
            unsigned char *d = malloc(size);
            XT_ASSERT((d) != NULL, "unexpected NULL");
            memset(d, 0xff, malloc_usable_size(d));
            free(d);
            unsigned char *c = calloc(size, 1);
            XT_ASSERT((c) != NULL, "unexpected NULL");
            check_zero(c, size, "calloc after dirty free",
                       r);
            memset(c, 0xff, size);
            free(c);
        }
    }
    /* Also with many live dirty blocks freed at once, then calloc'ed back. */
    enum { N = 512 };
    void *ps[N];
    for (size_t i = 0; i < N; i++) {
        ps[i] = malloc(48);
        XT_ASSERT((ps[i]) != NULL, "unexpected NULL");
        memset(ps[i], 0xff, 48);
    }
    for (size_t i = 0; i < N; i++)
        free(ps[i]);
    for (size_t i = 0; i < N; i++) {
        ps[i] = calloc(6, 8);
        XT_ASSERT((ps[i]) != NULL, "unexpected NULL");
        check_zero(ps[i], 48, "calloc(6, 8) after 512 dirty frees", i);
    }
    for (size_t i = 0; i < N; i++)
        free(ps[i]);
}
END_TEST

START_TEST(test_calloc_overflow)
{
    static const size_t pairs[][2] = {
        {SIZE_MAX, SIZE_MAX},
        {SIZE_MAX / 2 + 1, 2},
        {2, SIZE_MAX / 2 + 1},
        {(size_t)1 << 32, (size_t)1 << 32},
        {((size_t)1 << 33) + 1, ((size_t)1 << 31)},
        {SIZE_MAX / 3 + 1, 3},
        {65537, SIZE_MAX / 65536},
    };
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        size_t n = xt_opaque(pairs[i][0]), m = xt_opaque(pairs[i][1]);
        errno = 0;
        void *p = calloc(n, m);
        XT_ASSERT(p == NULL, "calloc(%zu, %zu) = %p", n, m, p);
        XT_ASSERT(errno == ENOMEM, "calloc(%zu, %zu): errno %d", n, m, errno);
    }
    /* A zero factor is no overflow: like malloc(0). */
    void *p = calloc(xt_opaque(0), xt_opaque(SIZE_MAX));
    XT_ASSERT((p) != NULL, "unexpected NULL");
    free(p);
    p = calloc(xt_opaque(SIZE_MAX), xt_opaque(0));
    XT_ASSERT((p) != NULL, "unexpected NULL");
    free(p);
}
END_TEST

/* ---- reallocarray ---- */

START_TEST(test_reallocarray)
{
    int *a = reallocarray(NULL, 10, sizeof(int));
    XT_ASSERT((a) != NULL, "unexpected NULL");
    for (int i = 0; i < 10; i++)
        a[i] = i * 7;
    a = reallocarray(a, 100000, sizeof(int));
    XT_ASSERT((a) != NULL, "unexpected NULL");
    for (int i = 0; i < 10; i++)
        XT_ASSERT((a[i]) == (i * 7), "%lld != %lld", (long long)(a[i]), (long long)(i * 7));
    XT_ASSERT((malloc_usable_size(a)) >= (100000 * sizeof(int)), "%zu < %zu", (size_t)(malloc_usable_size(a)), (size_t)(100000 * sizeof(int)));

    xt_fill(a, 1000, 99);
    static const size_t pairs[][2] = {
        {SIZE_MAX, 2}, {SIZE_MAX / 4 + 1, 4}, {(size_t)1 << 40, (size_t)1 << 30}};
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        errno = 0;
        int *b = reallocarray(a, xt_opaque(pairs[i][0]), xt_opaque(pairs[i][1]));
        XT_ASSERT(b == NULL && errno == ENOMEM, "reallocarray(p, %zu, %zu) = %p errno %d",
                      pairs[i][0], pairs[i][1], (void *)b, errno);
        XT_ASSERT(xt_verify(a, 1000, 99) == 1000, "original changed by failed reallocarray");
    }
    free(a);
}
END_TEST

/* ---- posix_memalign, aligned_alloc, memalign, valloc, pvalloc ---- */

START_TEST(test_posix_memalign_einval)
{
    static const size_t bad[] = {0, 1, 2, 3, sizeof(void *) / 2, 12, 24, 48, 96, 4097,
                                 ((size_t)1 << 40) + 8, SIZE_MAX};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        void *sentinel = (void *)&sentinel;
        void *m = sentinel;
        errno = 4242;
        int rc = posix_memalign(&m, xt_opaque(bad[i]), 64);
        XT_ASSERT(rc == EINVAL, "posix_memalign(align %zu) = %d, want EINVAL", bad[i], rc);
        XT_ASSERT(errno == 4242, "posix_memalign(align %zu) changed errno to %d", bad[i],
                      errno);
        XT_ASSERT(m == sentinel, "posix_memalign(align %zu) changed *memptr on failure",
                      bad[i]);
    }
    /* A valid but unsatisfiable alignment is ENOMEM, not EINVAL. */
    void *m = NULL;
    int rc = posix_memalign(&m, xt_opaque((size_t)1 << 63), 16);
    XT_ASSERT(rc == ENOMEM, "posix_memalign(align 2^63) = %d, want ENOMEM", rc);
    /* Valid alignments that are multiples of sizeof(void *). */
    for (size_t al = sizeof(void *); al <= 65536; al *= 2) {
        void *q = NULL;
        ck_assert_int_eq(posix_memalign(&q, al, 100), 0);
        XT_ASSERT(aligned_to(q, al), "check failed");
        free(q);
    }
    void *z = NULL;
    ck_assert_int_eq(posix_memalign(&z, 64, 0), 0);
    free(z);
}
END_TEST

/* glibc 2.36 treats a non-power-of-two alignment in aligned_alloc and
 * memalign like memalign always has: rounded up to the next power of two
 * (the stricter C17 reading, NULL + EINVAL, came in glibc 2.38). A drop-in
 * replacement must not fail where the glibc of the system succeeds, so this
 * requires glibc 2.36's behaviour; check-api-glibc proves it is glibc's. */
START_TEST(test_aligned_alloc_odd_alignment)
{
    static const size_t odd[][2] = {{3, 4}, {24, 32}, {48, 64}, {100, 128}, {3000, 4096},
                                    {5000, 8192}};
    for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) {
        size_t al = xt_opaque(odd[i][0]);
        errno = 0;
        unsigned char *p = aligned_alloc(al, 200);
        XT_ASSERT(p != NULL, "aligned_alloc(%zu, 200) failed, errno %d", al, errno);
        XT_ASSERT(aligned_to(p, odd[i][1]), "aligned_alloc(%zu) = %p not %zu-aligned", al,
                      (void *)p, odd[i][1]);
        XT_ASSERT((malloc_usable_size(p)) >= (200), "%zu < %zu", (size_t)(malloc_usable_size(p)), (size_t)(200));
        memset(p, 0x5a, 200);
        free(p);
        p = memalign(al, 200);
        XT_ASSERT(p != NULL, "memalign(%zu, 200) failed", al);
        XT_ASSERT(aligned_to(p, odd[i][1]), "check failed");
        free(p);
    }
    /* Alignment 0 and below 16: plain malloc alignment. */
    void *p = aligned_alloc(xt_opaque(0), 48);
    XT_ASSERT((p) != NULL, "unexpected NULL");
    XT_ASSERT(aligned_to(p, 16), "check failed");
    free(p);
    p = memalign(xt_opaque(1), 48);
    XT_ASSERT((p) != NULL, "unexpected NULL");
    XT_ASSERT(aligned_to(p, 16), "check failed");
    free(p);
}
END_TEST

enum align_fn { AF_POSIX, AF_ALIGNED_ALLOC, AF_MEMALIGN, AF_COUNT };

static void *alloc_aligned(enum align_fn f, size_t al, size_t size)
{
    void *p = NULL;
    switch (f) {
    case AF_POSIX:
        if (posix_memalign(&p, al, size) != 0)
            p = NULL;
        return p;
    case AF_ALIGNED_ALLOC:
        return aligned_alloc(al, size);
    default:
        return memalign(al, size);
    }
}

/* Power-of-two alignments 16 B .. 64 MiB, many sizes, three entry points;
 * every block written over its whole usable size and verified while all
 * blocks of the alignment are live. */
START_TEST(test_aligned_pow2)
{
    static const size_t sizes[] = {1,     7,      16,     100,    1000,
                                   4096,  5000,   65536,  100000, 262144,
                                   300001, XT_MiB + 1, 3 * XT_MiB};
    enum { NS = sizeof sizes / sizeof sizes[0] };
    for (size_t al = 16; al <= 64 * XT_MiB; al *= 2) {
        void *ps[AF_COUNT][NS];
        size_t us[AF_COUNT][NS];
        for (int f = 0; f < AF_COUNT; f++) {
            for (size_t s = 0; s < NS; s++) {
                /* Keep the big-alignment rounds small: mapping 64 MiB-aligned
                 * 3 MiB blocks is what we test, not 39 of them. */
                if (al >= 8 * XT_MiB && sizes[s] > 4096 && sizes[s] != 3 * XT_MiB) {
                    ps[f][s] = NULL;
                    continue;
                }
                void *p = alloc_aligned((enum align_fn)f, al, sizes[s]);
                XT_ASSERT(p != NULL, "fn %d align %zu size %zu: NULL", f, al, sizes[s]);
                XT_ASSERT(aligned_to(p, al), "fn %d align %zu size %zu: %p misaligned", f,
                              al, sizes[s], p);
                us[f][s] = malloc_usable_size(p);
                XT_ASSERT(us[f][s] >= sizes[s], "fn %d align %zu size %zu: usable %zu", f,
                              al, sizes[s], us[f][s]);
                xt_fill(p, us[f][s], xt_tag(p, al, (uint64_t)f));
                ps[f][s] = p;
            }
        }
        for (int f = 0; f < AF_COUNT; f++) {
            for (size_t s = 0; s < NS; s++) {
                if (ps[f][s] == NULL)
                    continue;
                size_t bad = xt_verify(ps[f][s], us[f][s], xt_tag(ps[f][s], al, (uint64_t)f));
                XT_ASSERT(bad == us[f][s],
                              "fn %d align %zu size %zu: %p corrupted at offset %zu", f, al,
                              sizes[s], ps[f][s], bad);
                free(ps[f][s]);
            }
        }
    }
}
END_TEST

START_TEST(test_valloc_pvalloc)
{
    size_t pg = page_size();
    static const size_t sizes[] = {0, 1, 100, 4095, 4096, 4097, 10000, 65536, 1000000};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t size = sizes[s];
        unsigned char *p = valloc(size);
        XT_ASSERT(p != NULL, "valloc(%zu) = NULL", size);
        XT_ASSERT(aligned_to(p, pg), "valloc(%zu) = %p", size, (void *)p);
        XT_ASSERT((malloc_usable_size(p)) >= (size), "%zu < %zu", (size_t)(malloc_usable_size(p)), (size_t)(size));
        memset(p, 0x11, size);
        free(p);

        size_t rounded = (size + pg - 1) & ~(pg - 1);
        p = pvalloc(size);
        XT_ASSERT(p != NULL, "pvalloc(%zu) = NULL", size);
        XT_ASSERT(aligned_to(p, pg), "pvalloc(%zu) = %p", size, (void *)p);
        XT_ASSERT(malloc_usable_size(p) >= rounded,
                      "pvalloc(%zu): usable %zu, want >= %zu (rounded to pages)", size,
                      malloc_usable_size(p), rounded);
        memset(p, 0x22, rounded); /* the whole rounded size is the caller's */
        free(p);

        p = memalign(pg, size);
        XT_ASSERT((p) != NULL, "unexpected NULL");
        XT_ASSERT(aligned_to(p, pg), "check failed");
        free(p);
    }
}
END_TEST

/* ---- realloc ---- */

START_TEST(test_realloc_null_and_zero)
{
    /* realloc(NULL, n) is malloc(n). */
    unsigned char *p = realloc(NULL, 300);
    XT_ASSERT((p) != NULL, "unexpected NULL");
    XT_ASSERT((malloc_usable_size(p)) >= (300), "%zu < %zu", (size_t)(malloc_usable_size(p)), (size_t)(300));
    memset(p, 3, 300);
    free(p);
    p = realloc(NULL, 0);
    XT_ASSERT((p) != NULL, "unexpected NULL"); /* like malloc(0), as glibc */
    free(p);

    /* glibc 2.36: realloc(p, 0) frees p and returns NULL. Required here for
     * the same reason as above; that it really frees is checked by RSS: a
     * leak of 20000 x 64 KiB written blocks would show as ~1.2 GiB. */
    size_t rss0 = xt_rss();
    for (int i = 0; i < 20000; i++) {
        void *q = malloc(65536);
        XT_ASSERT((q) != NULL, "unexpected NULL");
        memset(q, 0x77, 65536);
        void *r = realloc(q, 0);
        XT_ASSERT(r == NULL, "realloc(p, 0) = %p, glibc returns NULL (frees p)", r);
    }
    size_t rss1 = xt_rss();
    XT_ASSERT(rss1 < rss0 + 256 * XT_MiB,
                  "RSS grew from %zu to %zu bytes: realloc(p, 0) does not free", rss0, rss1);
}
END_TEST

/* One block grown step by step from 16 B to 64 MiB and shrunk back, across
 * every small/large/huge boundary; content checked at each step. */
START_TEST(test_realloc_content_chain)
{
    const uint64_t tag = 0xfeedULL;
    size_t size = 16;
    unsigned char *p = malloc(size);
    XT_ASSERT((p) != NULL, "unexpected NULL");
    xt_fill(p, size, tag);
    uint64_t rng = 77;
    while (size < 64 * XT_MiB) {
        size_t next = size + size / 3 + xt_rand_range(&rng, 1, 64);
        if (next > 64 * XT_MiB)
            next = 64 * XT_MiB;
        unsigned char *q = realloc(p, next);
        XT_ASSERT(q != NULL, "realloc(%zu -> %zu) = NULL", size, next);
        size_t bad = xt_verify(q, size, tag);
        XT_ASSERT(bad == size, "grow %zu -> %zu lost content at offset %zu", size, next,
                      bad);
        XT_ASSERT((malloc_usable_size(q)) >= (next), "%zu < %zu", (size_t)(malloc_usable_size(q)), (size_t)(next));
        xt_fill_from(q, size, next, tag);
        p = q;
        size = next;
    }
    while (size > 16) {
        size_t next = size / 2 + xt_rand_range(&rng, 0, 7);
        if (next < 16)
            next = 16;
        unsigned char *q = realloc(p, next);
        XT_ASSERT(q != NULL, "realloc(%zu -> %zu) = NULL", size, next);
        size_t bad = xt_verify(q, next, tag);
        XT_ASSERT(bad == next, "shrink %zu -> %zu lost content at offset %zu", size, next,
                      bad);
        XT_ASSERT((malloc_usable_size(q)) >= (next), "%zu < %zu", (size_t)(malloc_usable_size(q)), (size_t)(next));
        p = q;
        size = next;
    }
    free(p);
}
END_TEST

/* Random realloc walk over several live blocks, so in-place growth is tried
 * next to live neighbours (which must keep their content too). */
START_TEST(test_realloc_random_walk)
{
    enum { N = 32, STEPS = 20000 };
    unsigned char *ps[N];
    size_t sz[N];
    uint64_t tags[N];
    uint64_t rng = 4242;
    for (size_t i = 0; i < N; i++) {
        sz[i] = xt_rand_range(&rng, 1, 512);
        ps[i] = malloc(sz[i]);
        XT_ASSERT((ps[i]) != NULL, "unexpected NULL");
        tags[i] = xt_rand(&rng);
        xt_fill(ps[i], sz[i], tags[i]);
    }
    for (size_t step = 0; step < STEPS; step++) {
        size_t i = xt_rand_range(&rng, 0, N - 1);
        uint64_t r = xt_rand(&rng) % 100;
        size_t next = r < 70   ? xt_rand_range(&rng, 1, 4096)
                      : r < 95 ? xt_rand_range(&rng, 4097, 300000)
                               : xt_rand_range(&rng, 300001, 3 * XT_MiB);
        unsigned char *q = realloc(ps[i], next);
        XT_ASSERT(q != NULL, "realloc(%zu -> %zu) = NULL", sz[i], next);
        size_t keep = sz[i] < next ? sz[i] : next;
        size_t bad = xt_verify(q, keep, tags[i]);
        XT_ASSERT(bad == keep, "step %zu: realloc %zu -> %zu lost content at %zu", step,
                      sz[i], next, bad);
        if (next > sz[i])
            xt_fill_from(q, sz[i], next, tags[i]);
        ps[i] = q;
        sz[i] = next;
        if (step % 1000 == 999)
            for (size_t k = 0; k < N; k++)
                XT_ASSERT(xt_verify(ps[k], sz[k], tags[k]) == sz[k],
                              "step %zu: block %zu corrupted", step, k);
    }
    for (size_t i = 0; i < N; i++) {
        XT_ASSERT(xt_verify(ps[i], sz[i], tags[i]) == sz[i], "check failed");
        free(ps[i]);
    }
}
END_TEST

START_TEST(test_realloc_overflow)
{
    static const size_t sizes[] = {100, 5000, 400000, 5 * XT_MiB};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        unsigned char *p = malloc(sizes[s]);
        XT_ASSERT((p) != NULL, "unexpected NULL");
        xt_fill(p, sizes[s], s);
        for (size_t i = 0; i < N_HUGE; i++) {
            errno = 0;
            void *q = realloc(p, xt_opaque(huge_sizes[i]));
            XT_ASSERT(q == NULL, "realloc(%zu-byte block, %zu) = %p", sizes[s],
                          huge_sizes[i], q);
            XT_ASSERT(errno == ENOMEM, "realloc(p, %zu): errno %d", huge_sizes[i], errno);
            XT_ASSERT(xt_verify(p, sizes[s], s) == sizes[s],
                          "failed realloc(p, %zu) changed the original", huge_sizes[i]);
        }
        XT_ASSERT((malloc_usable_size(p)) >= (sizes[s]), "%zu < %zu", (size_t)(malloc_usable_size(p)), (size_t)(sizes[s]));
        free(p);
    }
}
END_TEST

/* ---- free_sized, free_aligned_sized (C23) ---- */

START_TEST(test_free_sized)
{
    free_sized_fn *fs = (free_sized_fn *)dlsym(RTLD_DEFAULT, "free_sized");
    free_aligned_sized_fn *fas =
        (free_aligned_sized_fn *)dlsym(RTLD_DEFAULT, "free_aligned_sized");
    if (xt_expect_xalloc()) {
        XT_ASSERT(fs != NULL && fas != NULL, "xalloc must export free_sized and "
                                                 "free_aligned_sized");
        XT_ASSERT(xt_symbol_from("free_sized", "libxalloc.so.1"), "check failed");
        XT_ASSERT(xt_symbol_from("free_aligned_sized", "libxalloc.so.1"), "check failed");
    } else if (fs == NULL || fas == NULL) {
        /* glibc before 2.43 lacks them: nothing of the system's to run. */
        ck_assert_ptr_null((void *)dlsym(RTLD_DEFAULT, "xalloc_version"));
        return;
    }
    fs(NULL, 0);
    fas(NULL, 64, 0);
    uint64_t rng = 5;
    for (int round = 0; round < 3; round++) {
        for (size_t size = 1; size <= 5 * XT_MiB; size += size / 4 + xt_rand_range(&rng, 1, 9)) {
            void *p = malloc(size);
            XT_ASSERT((p) != NULL, "unexpected NULL");
            memset(p, 1, size < 4096 ? size : 4096);
            fs(p, size);
            p = calloc(1, size);
            XT_ASSERT((p) != NULL, "unexpected NULL");
            fs(p, size);
            for (size_t al = 16; al <= 65536; al *= 4) {
                size_t asz = (size + al - 1) & ~(al - 1); /* C11 aligned_alloc form */
                p = aligned_alloc(al, asz);
                XT_ASSERT((p) != NULL, "unexpected NULL");
                fas(p, al, asz);
            }
        }
    }
    /* The memory is reusable afterwards. */
    void *p = malloc(64);
    XT_ASSERT((p) != NULL, "unexpected NULL");
    free(p);
}
END_TEST

/* ---- malloc_trim, mallinfo2, mallinfo, malloc_stats, mallopt ---- */

START_TEST(test_malloc_trim)
{
    enum { N = 4096 };
    static void *ps[N];
    /* Interleave live and freed 16 KiB blocks: trim may purge the free ones
     * but must not touch the live ones. */
    for (size_t i = 0; i < N; i++) {
        ps[i] = malloc(16384);
        XT_ASSERT((ps[i]) != NULL, "unexpected NULL");
        xt_fill(ps[i], 16384, i);
    }
    for (size_t i = 0; i < N; i += 2) {
        free(ps[i]);
        ps[i] = NULL;
    }
    int rc = malloc_trim(0);
    XT_ASSERT(rc == 0 || rc == 1, "malloc_trim(0) = %d", rc);
    for (size_t i = 1; i < N; i += 2)
        XT_ASSERT(xt_verify(ps[i], 16384, i) == 16384, "malloc_trim damaged live block %zu",
                      i);
    rc = malloc_trim(xt_opaque(1 << 20));
    XT_ASSERT(rc == 0 || rc == 1, "check failed");
    for (size_t i = 0; i < N; i += 2) {
        ps[i] = malloc(16384);
        XT_ASSERT((ps[i]) != NULL, "unexpected NULL");
        xt_fill(ps[i], 16384, i);
    }
    for (size_t i = 0; i < N; i++) {
        XT_ASSERT(xt_verify(ps[i], 16384, i) == 16384, "block %zu damaged after trim", i);
        free(ps[i]);
    }
    rc = malloc_trim(0);
    XT_ASSERT(rc == 0 || rc == 1, "check failed");
    void *p = malloc(1000);
    XT_ASSERT((p) != NULL, "unexpected NULL");
    free(p);
}
END_TEST

START_TEST(test_mallinfo2)
{
    enum { N = 10240 }; /* 10 MiB in 1 KiB blocks (glibc counts mmapped
                         * blocks in hblkhd, not uordblks: use small ones) */
    static void *ps[N];
    struct mallinfo2 a = mallinfo2();
    for (size_t i = 0; i < N; i++) {
        ps[i] = malloc(1024);
        XT_ASSERT((ps[i]) != NULL, "unexpected NULL");
        memset(ps[i], 1, 1024);
    }
    struct mallinfo2 b = mallinfo2();
    /* 1 MiB of slack: counters that a thread batches before merging. */
    XT_ASSERT(b.uordblks >= a.uordblks + 9 * XT_MiB,
                  "mallinfo2.uordblks %zu -> %zu after allocating 10 MiB", a.uordblks,
                  b.uordblks);
    XT_ASSERT(b.uordblks < a.uordblks + 64 * XT_MiB, "uordblks %zu -> %zu: implausible",
                  a.uordblks, b.uordblks);
    XT_ASSERT(b.arena + b.hblkhd >= b.uordblks,
                  "arena %zu + hblkhd %zu < uordblks %zu", b.arena, b.hblkhd, b.uordblks);

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    struct mallinfo old = mallinfo();
#pragma GCC diagnostic pop
    XT_ASSERT(old.uordblks >= (int)(9 * XT_MiB), "mallinfo.uordblks %d", old.uordblks);

    for (size_t i = 0; i < N; i++)
        free(ps[i]);
    struct mallinfo2 c = mallinfo2();
    XT_ASSERT(c.uordblks + 8 * XT_MiB <= b.uordblks,
                  "uordblks %zu -> %zu after freeing 10 MiB", b.uordblks, c.uordblks);
}
END_TEST

START_TEST(test_malloc_stats)
{
    FILE *tmp = tmpfile();
    XT_ASSERT((tmp) != NULL, "unexpected NULL");
    fflush(stderr);
    int saved = dup(2);
    XT_ASSERT((saved) >= (0), "%lld < %lld", (long long)(saved), (long long)(0));
    ck_assert_int_ge(dup2(fileno(tmp), 2), 0);
    malloc_stats();
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    struct stat st;
    ck_assert_int_eq(fstat(fileno(tmp), &st), 0);
    XT_ASSERT(st.st_size > 0, "malloc_stats wrote nothing to stderr");
    fclose(tmp);
}
END_TEST

START_TEST(test_mallopt)
{
    /* glibc returns 1 (success) for the parameters it knows; programs tune
     * these at start-up and some treat 0 as an error worth a warning. */
    static const int known[][2] = {{M_TRIM_THRESHOLD, 256 * 1024}, {M_TOP_PAD, 64 * 1024},
                                   {M_MMAP_THRESHOLD, 1024 * 1024}, {M_MMAP_MAX, 65536},
                                   {M_ARENA_MAX, 4},                 {M_ARENA_TEST, 8}};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        int rc = mallopt(known[i][0], known[i][1]);
        XT_ASSERT(rc == 1, "mallopt(%d, %d) = %d, want 1", known[i][0], known[i][1], rc);
    }
    int rc = mallopt(xt_opaque(12345), 1);
    XT_ASSERT(rc == 0 || rc == 1, "mallopt(unknown) = %d", rc);
    void *p = malloc(2 * XT_MiB);
    XT_ASSERT((p) != NULL, "unexpected NULL");
    memset(p, 0, 2 * XT_MiB);
    free(p);
}
END_TEST

/* ---- xalloc_purge ---- */

START_TEST(test_xalloc_purge)
{
    purge_fn *purge = (purge_fn *)dlsym(RTLD_DEFAULT, "xalloc_purge");
    if (!xt_expect_xalloc()) {
        ck_assert_ptr_null((void *)purge);
        return;
    }
    XT_ASSERT(((void *)purge) != NULL, "unexpected NULL");
#ifdef XT_LINKED
    ck_assert_ptr_eq((void *)purge, (void *)xalloc_purge);
#endif
    enum { N = 256 };
    static void *ps[N];
    size_t rss0 = xt_rss();
    for (size_t i = 0; i < N; i++) {
        ps[i] = malloc(256 * 1024); /* 64 MiB, written */
        XT_ASSERT((ps[i]) != NULL, "unexpected NULL");
        memset(ps[i], 0x3c, 256 * 1024);
    }
    size_t rss_live = xt_rss();
    XT_ASSERT(rss_live >= rss0 + 60 * XT_MiB, "RSS %zu -> %zu with 64 MiB live", rss0,
                  rss_live);
    for (size_t i = 0; i < N; i++)
        free(ps[i]);
    size_t rss_freed = xt_rss();
    size_t got = purge();
    size_t rss_purged = xt_rss();
    XT_ASSERT(rss_purged + 32 * XT_MiB <= rss_live,
                  "after free + xalloc_purge RSS is %zu (was %zu with 64 MiB live)", rss_purged,
                  rss_live);
    /* What the purge itself dropped, it must report. */
    if (rss_freed > rss_purged + 8 * XT_MiB)
        XT_ASSERT(got >= (rss_freed - rss_purged) / 2,
                      "xalloc_purge returned %zu but RSS fell by %zu", got,
                      rss_freed - rss_purged);
    /* Purged memory is reusable. */
    for (size_t i = 0; i < N; i++) {
        ps[i] = malloc(256 * 1024);
        XT_ASSERT((ps[i]) != NULL, "unexpected NULL");
        xt_fill(ps[i], 256 * 1024, i);
    }
    for (size_t i = 0; i < N; i++) {
        XT_ASSERT(xt_verify(ps[i], 256 * 1024, i) == 256 * 1024, "check failed");
        free(ps[i]);
    }
}
END_TEST

static Suite *api_suite(void)
{
    Suite *s = suite_create("api");
    TCase *tc = tcase_create("allocator");
    tcase_add_test(tc, test_pattern_selfcheck);
    tcase_add_test(tc, test_active_allocator);
    tcase_add_test(tc, test_xalloc_version);
    tcase_add_test(tc, test_libc_aliases);
    suite_add_tcase(s, tc);

    tc = tcase_create("malloc");
    tcase_set_timeout(tc, 180);
    tcase_add_test(tc, test_every_size_aligned);
    tcase_add_test(tc, test_malloc_zero_unique);
    tcase_add_test(tc, test_neighbours_intact);
    tcase_add_test(tc, test_malloc_huge_enomem);
    suite_add_tcase(s, tc);

    tc = tcase_create("calloc");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_calloc_zeroes);
    tcase_add_test(tc, test_calloc_overflow);
    tcase_add_test(tc, test_reallocarray);
    suite_add_tcase(s, tc);

    tc = tcase_create("aligned");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_posix_memalign_einval);
    tcase_add_test(tc, test_aligned_alloc_odd_alignment);
    tcase_add_test(tc, test_aligned_pow2);
    tcase_add_test(tc, test_valloc_pvalloc);
    suite_add_tcase(s, tc);

    tc = tcase_create("realloc");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_realloc_null_and_zero);
    tcase_add_test(tc, test_realloc_content_chain);
    tcase_add_test(tc, test_realloc_random_walk);
    tcase_add_test(tc, test_realloc_overflow);
    tcase_add_test(tc, test_free_sized);
    suite_add_tcase(s, tc);

    tc = tcase_create("introspection");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_malloc_trim);
    tcase_add_test(tc, test_mallinfo2);
    tcase_add_test(tc, test_malloc_stats);
    tcase_add_test(tc, test_mallopt);
    tcase_add_test(tc, test_xalloc_purge);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(api_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
