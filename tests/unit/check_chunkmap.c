/* check_chunkmap.c: unit tests of the address -> chunk radix map
 * (src/chunkmap.c) and of the internal metadata allocator (src/meta.c). */
#include <check.h>

#include "unit/unit_main.h"
#include <stdlib.h>
#include <string.h>

#include "chunkmap.h"
#include "meta.h"
#include "os.h"

START_TEST(unknown_addresses_are_not_ours)
{
    int on_stack;
    ck_assert_ptr_null(xa_chunkmap_lookup(&on_stack));
    ck_assert_ptr_null(xa_chunkmap_lookup((void *)0x1000));
    ck_assert_ptr_null(xa_chunkmap_lookup((void *)~(uintptr_t)0));
    ck_assert_ptr_null(xa_chunkmap_lookup((void *)((uintptr_t)1 << 47)));
    ck_assert_ptr_null(xa_chunkmap_lookup(NULL));
    ck_assert_uint_eq(xa_region_of(NULL), XA_REGION_NONE);
    ck_assert_uint_eq(xa_region_of(&on_stack), XA_REGION_NONE);
    ck_assert_uint_eq(xa_region_of((void *)~(uintptr_t)0), XA_REGION_NONE);
}
END_TEST

START_TEST(set_lookup_clear)
{
    char *base = xa_os_map_aligned(3 * XA_CHUNK_SIZE, XA_CHUNK_SIZE);
    ck_assert_ptr_nonnull(base);
    struct xa_chunk *tag = (struct xa_chunk *)base;
    ck_assert(xa_chunkmap_set(base, 2 * XA_CHUNK_SIZE + 4096, tag, XA_REGION_HUGE));
    ck_assert_uint_eq(xa_region_of(base), XA_REGION_HUGE);
    ck_assert_uint_eq(xa_region_of(base + 2 * XA_CHUNK_SIZE + 100), XA_REGION_HUGE);
    ck_assert_uint_eq(xa_region_of(base + 3 * XA_CHUNK_SIZE), XA_REGION_NONE);
    /* Every byte of every region covered maps to the one header. */
    ck_assert_ptr_eq(xa_chunkmap_lookup(base), tag);
    ck_assert_ptr_eq(xa_chunkmap_lookup(base + XA_CHUNK_SIZE - 1), tag);
    ck_assert_ptr_eq(xa_chunkmap_lookup(base + XA_CHUNK_SIZE), tag);
    ck_assert_ptr_eq(xa_chunkmap_lookup(base + 2 * XA_CHUNK_SIZE + 100), tag);
    ck_assert_ptr_null(xa_chunkmap_lookup(base + 3 * XA_CHUNK_SIZE));
    ck_assert_ptr_null(xa_chunkmap_lookup(base - 1));
    ck_assert(xa_chunkmap_set(base, 3 * XA_CHUNK_SIZE, NULL, XA_REGION_NONE));
    ck_assert_uint_eq(xa_region_of(base), XA_REGION_NONE);
    ck_assert_ptr_null(xa_chunkmap_lookup(base));
    ck_assert_ptr_null(xa_chunkmap_lookup(base + 2 * XA_CHUNK_SIZE));
    xa_os_unmap(base, 3 * XA_CHUNK_SIZE);
}
END_TEST

START_TEST(meta_alloc_is_zeroed_aligned_and_disjoint)
{
    enum { N = 2000 };
    static char *blocks[N];
    static size_t sizes[N];
    size_t before = xa_meta_mapped();
    for (int i = 0; i < N; i++) {
        sizes[i] = (size_t)(i * 37 % 5000) + 1;
        size_t align = (size_t)16 << (i % 5);
        blocks[i] = xa_meta_alloc(sizes[i], align);
        ck_assert_ptr_nonnull(blocks[i]);
        ck_assert_uint_eq((uintptr_t)blocks[i] % align, 0);
        /* One assertion per block: each ck_assert is a write to check's
         * pipe, and ten million of them took minutes on a loaded CI box. */
        size_t nonzero = 0;
        for (size_t k = 0; k < sizes[i]; k++)
            nonzero += blocks[i][k] != 0;
        ck_assert_uint_eq(nonzero, 0);
        memset(blocks[i], i & 0xff, sizes[i]);
    }
    for (int i = 0; i < N; i++) {
        size_t changed = 0;
        for (size_t k = 0; k < sizes[i]; k++)
            changed += (unsigned char)blocks[i][k] != (i & 0xff);
        ck_assert_msg(changed == 0, "block %d: %zu bytes overwritten by another block", i, changed);
    }
    ck_assert_uint_gt(xa_meta_mapped(), before);
    /* A request bigger than a region gets a region of its own. */
    char *big = xa_meta_alloc(3u << 20, 4096);
    ck_assert_ptr_nonnull(big);
    big[(3u << 20) - 1] = 1;
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("chunkmap+meta");
    TCase *t = tcase_create("core");
    tcase_add_test(t, unknown_addresses_are_not_ours);
    tcase_add_test(t, set_lookup_clear);
    tcase_add_test(t, meta_alloc_is_zeroed_aligned_and_disjoint);
    suite_add_tcase(s, t);
    return s;
}

XA_UNIT_MAIN(make_suite)
