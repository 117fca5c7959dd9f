/* fuzz_alloc.c: libFuzzer target for allocation sequences, against the
 * internal test build (xa_test_malloc, ...; src/ compiled with -DXA_TEST
 * -DXA_DEBUG=1). Each input is a program: per op one byte of operation,
 * one of slot, two of size. Sizes fall on every class boundary (-1, 0,
 * +1), unit and chunk boundaries, huge sizes and absurd ones (SIZE_MAX,
 * PTRDIFF_MAX+1, calloc overflow: NULL with ENOMEM). Every live block
 * carries a pattern that is checked before it is freed or reallocated;
 * malloc_usable_size must cover the request; the library's invariant walk
 * (xa_invariant_check) runs every CHECK_EVERY ops and after each input, when
 * every block has been freed. Built by mk/harden.mk. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "invariant.h"
#include "hx.h"
#include "sizeclass.h"

void *xa_test_malloc(size_t size);
void xa_test_free(void *p);
void *xa_test_calloc(size_t n, size_t size);
void *xa_test_realloc(void *p, size_t size);
int xa_test_posix_memalign(void **out, size_t align, size_t size);
void *xa_test_aligned_alloc(size_t align, size_t size);
void *xa_test_memalign(size_t align, size_t size);
size_t xa_test_malloc_usable_size(void *p);
void xa_test_free_sized(void *p, size_t size);
int xa_test_malloc_trim(size_t pad);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NSLOTS 64
#define CHECK_EVERY 64
#define LIVE_MAX ((size_t)192 << 20) /* bound on live bytes: RSS stays sane */

struct slot {
    char *p;
    size_t size;
    uint64_t seed;
};
static struct slot slots[NSLOTS];
static size_t live_bytes;
static uint64_t seed_counter;

static void fail(const char *what, const void *p, size_t n)
{
    fprintf(stderr, "fuzz_alloc: %s (%p, %zu)\n", what, p, n);
    abort();
}

static void invariants(void)
{
    char msg[256];
    if (xa_invariant_check(msg, sizeof msg))
        fail(msg, NULL, 0);
}

static size_t decode_size(uint8_t b0, uint8_t b1)
{
    static const size_t absurd[] = {SIZE_MAX,
                                    SIZE_MAX - 4095,
                                    (size_t)PTRDIFF_MAX,
                                    (size_t)PTRDIFF_MAX + 1,
                                    (size_t)1 << 47,
                                    (size_t)1 << 62};
    long delta = (long)((b0 >> 3) % 3) - 1;
    switch (b0 & 7) {
    case 0:
        return b1;
    case 1:
        return xa_classes[b1 % XA_NCLASSES].size + (size_t)delta;
    case 2:
        return ((size_t)(b1 % 33) << 16) + (size_t)delta + (b1 % 33 ? 0 : 2);
    case 3:
        return ((size_t)(1 + b1 % 4) << 21) + (size_t)delta - (b0 & 0x80 ? 4096 : 0);
    case 4:
        return (size_t)b1 * 1000 + b0;
    case 5:
        return ((size_t)b1 << 10) | b0;
    case 6:
        return absurd[b1 % (sizeof absurd / sizeof absurd[0])];
    default:
        return 0;
    }
}

static void check_block(const struct slot *s, size_t limit, const char *when)
{
    if (hx_check(s->p, s->size, s->seed, limit) != SIZE_MAX)
        fail(when, s->p, s->size);
}

static void put(struct slot *s, void *p, size_t n)
{
    s->p = p;
    s->size = n;
    s->seed = ++seed_counter * 0x9e3779b97f4a7c15ULL;
    if (n && xa_test_malloc_usable_size(p) < n)
        fail("usable size below request", p, n);
    hx_fill(p, n, s->seed);
    live_bytes += n;
}

static void drop(struct slot *s, bool sized)
{
    check_block(s, s->size, "pattern broken before free");
    if (sized)
        xa_test_free_sized(s->p, s->size);
    else
        xa_test_free(s->p);
    live_bytes -= s->size;
    s->p = NULL;
}

/* A failure is right only for sizes no allocator could give. */
static void expect_failure(const char *fn, size_t n, int err)
{
    if (n <= ((size_t)1 << 40))
        fail(fn, NULL, n);
    if (err != ENOMEM)
        fail("failure without ENOMEM", NULL, n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned ops = 0;
    for (size_t i = 0; i + 4 <= size; i += 4) {
        uint8_t op = data[i];
        struct slot *s = &slots[data[i + 1] % NSLOTS];
        size_t n = decode_size(data[i + 2], data[i + 3]);
        bool fits = n <= LIVE_MAX && live_bytes + n <= LIVE_MAX;
        void *p;
        errno = 0;
        switch (op % 10) {
        case 0: /* malloc */
        case 1: /* calloc, with overflowing products from the op byte */
            if (s->p)
                drop(s, false);
            if (op % 10 == 1) {
                size_t m = (op & 0x80) ? ((size_t)1 << 62) : 1; /* n >= 4: overflow */
                p = xa_test_calloc(m, n);
                if (p && !hx_zero(p, n * m))
                    fail("calloc not zeroed", p, n);
                n *= p ? m : 1;
                if (!p && m > 1 && n > 0) {
                    if (errno != ENOMEM)
                        fail("calloc overflow without ENOMEM", NULL, n);
                    break;
                }
            } else {
                if (!fits && n <= LIVE_MAX)
                    break;
                p = xa_test_malloc(n);
            }
            if (!p) {
                expect_failure("malloc failed", n, errno);
                break;
            }
            put(s, p, n);
            break;
        case 2: /* realloc: old contents survive up to the smaller size */
            if (!s->p || (!fits && n <= LIVE_MAX))
                break;
            check_block(s, s->size, "pattern broken before realloc");
            p = xa_test_realloc(s->p, n);
            if (!p) {
                if (n == 0) { /* freed, glibc style */
                    live_bytes -= s->size;
                    s->p = NULL;
                    break;
                }
                expect_failure("realloc failed", n, errno);
                check_block(s, s->size, "failed realloc changed the block");
                break;
            }
            s->p = p;
            check_block(s, n, "realloc lost contents");
            live_bytes -= s->size;
            put(s, p, n);
            break;
        case 3:
        case 7:
            if (s->p)
                drop(s, op % 10 == 7);
            break;
        case 4: /* posix_memalign, alignments 1 .. 2^23 and odd ones */
        case 5: /* aligned_alloc */
        case 8: /* memalign */ {
            if (s->p)
                drop(s, false);
            if (!fits)
                break;
            size_t align = (op & 0x40) ? (size_t)(op >> 4) * 24 : (size_t)1 << (op >> 3);
            if (op % 10 == 4) {
                void *out = &slots;
                int rc = xa_test_posix_memalign(&out, align, n);
                bool pow2 = align >= sizeof(void *) && !(align & (align - 1));
                if (!pow2) {
                    if (rc != EINVAL || out != &slots)
                        fail("posix_memalign bad alignment not EINVAL", NULL, align);
                    break;
                }
                if (rc) {
                    if (rc != ENOMEM || out != &slots)
                        fail("posix_memalign failed badly", NULL, n);
                    break;
                }
                p = out;
            } else {
                p = op % 10 == 5 ? xa_test_aligned_alloc(align, n) : xa_test_memalign(align, n);
                if (!p)
                    fail("aligned allocation failed", NULL, n);
                if (align & (align - 1)) { /* rounded up to a power of two */
                    while (align & (align - 1))
                        align &= align - 1;
                    align <<= 1;
                }
            }
            if ((uintptr_t)p & (align - 1))
                fail("misaligned block", p, align);
            put(s, p, n);
            break;
        }
        case 6:
            if (s->p && xa_test_malloc_usable_size(s->p) < s->size)
                fail("usable size shrank", s->p, s->size);
            if (op & 0x80)
                xa_test_malloc_trim(0);
            break;
        default:
            invariants();
            break;
        }
        if (++ops % CHECK_EVERY == 0)
            invariants();
    }
    for (unsigned k = 0; k < NSLOTS; k++)
        if (slots[k].p)
            drop(&slots[k], false);
    invariants();
    return 0;
}
