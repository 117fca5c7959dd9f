/* check_sizeclass.c: unit tests of the size-class tables (src/sizeclass.c):
 * the literal tables match their rules, every size maps to the smallest
 * class that holds it, waste stays bounded, and the divisibility test used
 * to reject interior pointers is exact; a slab's blocks fit the remote
 * list's 16-bit count. */
#include <check.h>

#include "unit/unit_main.h"
#include <stdlib.h>

#include "chunk.h"
#include "heap.h"
#include "sizeclass.h"

START_TEST(tables_follow_rules)
{
    for (unsigned c = 0; c < XA_NCLASSES; c++) {
        const struct xa_class_info *ci = &xa_classes[c];
        ck_assert_uint_eq(ci->size, xa_sizeclass_rule_size(c));
        ck_assert_uint_eq(ci->units, xa_sizeclass_rule_units(ci->size));
        ck_assert_uint_eq(ci->blocks, ci->units * XA_UNIT_SIZE / ci->size);
        ck_assert_uint_eq(ci->div_magic, UINT64_MAX / ci->size + 1);
        ck_assert_uint_eq(ci->size % 16, 0);
        ck_assert_uint_le(ci->units, XA_SLAB_MAX_UNITS);
        ck_assert_uint_ge(ci->blocks, 2);
        /* The remote-free list counts its blocks in 16 bits (chunk.h). */
        ck_assert_uint_le(ci->blocks, XA_TF_MAX_BLOCKS);
        if (c > 0)
            ck_assert_uint_gt(ci->size, xa_classes[c - 1].size);
    }
    ck_assert_uint_eq(xa_classes[XA_NCLASSES - 1].size, XA_SMALL_MAX);
}
END_TEST

START_TEST(every_size_maps_to_smallest_fitting_class)
{
    for (size_t s = 0; s <= XA_SMALL_MAX; s++) {
        unsigned c = xa_size_class(s);
        ck_assert_uint_lt(c, XA_NCLASSES);
        ck_assert_uint_ge(xa_classes[c].size, s);
        if (c > 0)
            ck_assert_uint_lt(xa_classes[c - 1].size, s);
        ck_assert_uint_eq(c, xa_size_class_compute(s));
    }
}
END_TEST

START_TEST(internal_waste_is_bounded)
{
    /* Four classes per doubling: a request never wastes more than 20%
     * of its block above 128 bytes; eight from 1 KiB to 8 KiB: 11.2%. */
    for (size_t s = 129; s <= XA_SMALL_MAX; s++) {
        size_t b = xa_classes[xa_size_class(s)].size;
        ck_assert_uint_le((b - s) * 100, b * 20);
        if (s > 1024 && s <= 8192)
            ck_assert_uint_le((b - s) * 1000, b * 112);
    }
    /* Classes of the eight-per-doubling range, and the foreign stacks'
     * limit (heap.h) at 8 KiB. */
    ck_assert_uint_eq(xa_classes[XA_FINE_CLASSES_BEGIN - 1].size, 1024);
    ck_assert_uint_eq(xa_classes[XA_FINE_CLASSES_END - 1].size, 8192);
    ck_assert_uint_eq(XA_FOREIGN_CLASSES, XA_FINE_CLASSES_END);
    /* A page or a KiB plus a header: the next eighth, not the next quarter. */
    ck_assert_uint_eq(xa_classes[xa_size_class(1032)].size, 1152);
    ck_assert_uint_eq(xa_classes[xa_size_class(2064)].size, 2304);
    ck_assert_uint_eq(xa_classes[xa_size_class(4368)].size, 4608);
}
END_TEST

START_TEST(divisibility_test_is_exact)
{
    for (unsigned c = 0; c < XA_NCLASSES; c++)
        for (uint32_t off = 0; off < 2u << 20; off += 16)
            ck_assert_int_eq(xa_class_divides(c, off), off % xa_classes[c].size == 0);
}
END_TEST

START_TEST(slab_waste_is_small)
{
    for (unsigned c = 0; c < XA_NCLASSES; c++) {
        const struct xa_class_info *ci = &xa_classes[c];
        size_t bytes = (size_t)ci->units * XA_UNIT_SIZE;
        size_t waste = bytes - (size_t)ci->blocks * ci->size;
        ck_assert_msg(waste * 8 <= bytes, "class %u (%u B) wastes %zu of %zu", c, ci->size,
                      waste, bytes);
    }
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("sizeclass");
    TCase *t = tcase_create("tables");
    tcase_add_test(t, tables_follow_rules);
    tcase_add_test(t, every_size_maps_to_smallest_fitting_class);
    tcase_add_test(t, internal_waste_is_bounded);
    tcase_add_test(t, divisibility_test_is_exact);
    tcase_add_test(t, slab_waste_is_small);
    suite_add_tcase(s, t);
    return s;
}

XA_UNIT_MAIN(make_suite)
