/* check_invariant.c: unit tests of the invariant walk (src/invariant.c):
 * silent on a heap in every state the test build reaches (small, large,
 * huge, freed, purged, abandoned by an exited thread), and loud on each
 * kind of damage it is meant to see. */
#include <check.h>

#include "unit/unit_main.h"
#include <pthread.h>
#include <string.h>

#include "heap.h"
#include "invariant.h"

void *xa_test_malloc(size_t size);
void xa_test_free(void *p);
int xa_test_malloc_trim(size_t pad);

static void assert_clean(void)
{
    char msg[256];
    size_t n = xa_invariant_check(msg, sizeof msg);
    ck_assert_msg(n == 0, "%zu problems, first: %s", n, msg);
}

static size_t problems(void)
{
    char msg[256];
    return xa_invariant_check(msg, sizeof msg);
}

static void *worker(void *arg)
{
    void **keep = arg;
    for (int i = 0; i < 64; i++)
        keep[i] = xa_test_malloc((size_t)(i % 9 + 1) * 48);
    return NULL; /* exits with live blocks: its slabs are abandoned */
}

START_TEST(clean_heap_in_every_state)
{
    static void *p[600];
    assert_clean();
    for (int i = 0; i < 600; i++) {
        size_t size = i % 50 == 0 ? (3u << 20) + (size_t)i : i % 10 == 0 ? 70000u + (size_t)i * 100 : (size_t)i * 13 + 1;
        p[i] = xa_test_malloc(size);
        ck_assert_ptr_nonnull(p[i]);
    }
    assert_clean();
    for (int i = 0; i < 600; i += 2)
        xa_test_free(p[i]);
    assert_clean();
    xa_test_malloc_trim(0);
    assert_clean();
    void *keep[64];
    pthread_t t;
    pthread_create(&t, NULL, worker, keep);
    pthread_join(t, NULL);
    for (int i = 0; i < 64; i += 2)
        xa_test_free(keep[i]); /* remote frees into abandoned slabs */
    assert_clean();
    for (int i = 1; i < 600; i += 2)
        xa_test_free(p[i]);
    for (int i = 1; i < 64; i += 2)
        xa_test_free(keep[i]);
    xa_test_malloc_trim(0);
    assert_clean();
}
END_TEST

START_TEST(damage_is_reported)
{
    char *a = xa_test_malloc(64), *b = xa_test_malloc(64), *big = xa_test_malloc(200000);
    xa_chunk *c = xa_chunk_of(a);
    xa_slab *s = xa_run_of(c, a);
    assert_clean();
    /* A slab's used count that disagrees with its free list. */
    s->used++;
    ck_assert_uint_gt(problems(), 0);
    s->used--;
    /* A block on the free list twice (a double free the fast path missed):
     * the list a -> b -> a... is cut by the walk and reported. */
    xa_test_free(b);
    uintptr_t saved = ((xa_block *)b)->next;
    ((xa_block *)b)->next = (uintptr_t)b ^ xa_heap_secret;
    ck_assert_uint_gt(problems(), 0);
    ((xa_block *)b)->next = saved;
    /* A run map entry pointing at the wrong run. */
    xa_chunk *bc = xa_chunk_of(big);
    unsigned u = (unsigned)(((uintptr_t)big - (uintptr_t)bc) >> XA_UNIT_SHIFT);
    uint8_t first = bc->first_of[u + 1];
    bc->first_of[u + 1] = 0;
    ck_assert_uint_gt(problems(), 0);
    bc->first_of[u + 1] = first;
    /* An arena count off by one. */
    bc->arena->large_count++;
    ck_assert_uint_gt(problems(), 0);
    bc->arena->large_count--;
    assert_clean();
    xa_test_free(a);
    xa_test_free(big);
    assert_clean();
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("invariant");
    TCase *tc = tcase_create("walk");
    tcase_add_test(tc, clean_heap_in_every_state);
    tcase_add_test(tc, damage_is_reported);
    suite_add_tcase(s, tc);
    return s;
}

XA_UNIT_MAIN(make_suite)
