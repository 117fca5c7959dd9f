/* check_prof_stack_cache.c: the stack cache's fill, lookup and policy
 * (src/prof_stack_cache.h) over made-up stacks: arrays of words with the
 * return addresses of a chain at known places among other values. A
 * lookup after a fill gives the stack back while every recorded word
 * holds, misses when one changes (another caller at the same depth, a
 * frame of another size) or the key differs; a fill never reads at or
 * above top (a PROT_NONE page right there would kill the test) nor more
 * than XA_SC_GAP_MAX past the last word found. */
#include <check.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "prof_stack_cache.h"
#include "unit/unit_main.h"

#define WORDS 4096
static uintptr_t stack_mem[WORDS];
static int the_stack; /* its address stands for an interned stack */
#define ST ((void *)&the_stack)

/* A stack of WORDS words of filler (values no chain uses), with chain[i]
 * at slot[i]; returns the anchor (word 0). */
static uintptr_t make_stack(uintptr_t *mem, size_t words, const uintptr_t *chain,
                            const unsigned *slot, unsigned n)
{
    for (size_t i = 0; i < words; i++)
        mem[i] = 0x5a5a000000000000ULL + i;
    for (unsigned i = 0; i < n; i++)
        mem[slot[i]] = chain[i];
    return (uintptr_t)mem;
}

static const uintptr_t chain[] = {0x401000, 0x402000, 0x402000, 0x403000, 0x7f0000001234};
static const unsigned slot[] = {1, 6, 30, 31, 700};
#define N 5
#define RA 0x401000

/* An empty entry e and stack_mem holding chain at slot; returns the
 * anchor, *top the end of stack_mem. */
static uintptr_t setup(xa_sc_entry *e, uintptr_t *top)
{
    memset(e, 0, sizeof *e);
    uintptr_t anchor = make_stack(stack_mem, WORDS, chain, slot, N);
    *top = anchor + WORDS * sizeof(uintptr_t);
    return anchor;
}

START_TEST(test_fill_then_hit)
{
    xa_sc_entry e;
    uintptr_t top, anchor = setup(&e, &top);
    ck_assert(xa_sc_fill(&e, RA, anchor, top, chain, N, ST));
    ck_assert_uint_eq(e.n, N);
    ck_assert_ptr_eq(xa_sc_lookup(&e, RA, anchor), ST);
    /* The words between the slots may change (locals, spills). */
    stack_mem[2] = 1, stack_mem[29] = 2, stack_mem[699] = 3;
    ck_assert_ptr_eq(xa_sc_lookup(&e, RA, anchor), ST);
}
END_TEST

START_TEST(test_changed_chain_misses)
{
    xa_sc_entry e;
    uintptr_t top, anchor = setup(&e, &top);
    ck_assert(xa_sc_fill(&e, RA, anchor, top, chain, N, ST));
    /* Another caller at the same depth: one return address differs. */
    for (unsigned i = 0; i < N; i++) {
        stack_mem[slot[i]] = 0x409999;
        ck_assert_ptr_null(xa_sc_lookup(&e, RA, anchor));
        stack_mem[slot[i]] = chain[i];
        ck_assert_ptr_eq(xa_sc_lookup(&e, RA, anchor), ST);
    }
    /* An outer frame one word bigger (an alloca): the outer return
     * addresses moved up, the recorded slots no longer hold them. */
    memmove(&stack_mem[31], &stack_mem[30], (WORDS - 31) * sizeof(uintptr_t));
    stack_mem[30] = 0x5a5a;
    ck_assert_ptr_null(xa_sc_lookup(&e, RA, anchor));
    /* The same words seen from another key: no. */
    make_stack(stack_mem, WORDS, chain, slot, N);
    ck_assert_ptr_eq(xa_sc_lookup(&e, RA, anchor), ST);
    ck_assert_ptr_null(xa_sc_lookup(&e, RA + 1, anchor));
    ck_assert_ptr_null(xa_sc_lookup(&e, RA, anchor + 16));
}
END_TEST

START_TEST(test_fill_refuses)
{
    xa_sc_entry e;
    uintptr_t top, anchor = setup(&e, &top);
    /* A value that is nowhere. */
    const uintptr_t missing[] = {0x401000, 0x4deadbeef};
    ck_assert(!xa_sc_fill(&e, RA, anchor, top, missing, 2, ST));
    ck_assert_ptr_null(xa_sc_lookup(&e, RA, anchor));
    /* Out of order: the second is saved below the first. */
    const uintptr_t backwards[] = {0x402000, 0x401000};
    ck_assert(!xa_sc_fill(&e, RA, anchor + 7 * sizeof(uintptr_t), top, backwards, 2, ST));
    /* Top below the last slot. */
    ck_assert(!xa_sc_fill(&e, RA, anchor, anchor + 700 * sizeof(uintptr_t), chain, N, ST));
    /* A zero, nothing, too many. */
    const uintptr_t zero[] = {0x401000, 0};
    ck_assert(!xa_sc_fill(&e, RA, anchor, top, zero, 2, ST));
    ck_assert(!xa_sc_fill(&e, RA, anchor, top, chain, 0, ST));
    ck_assert(!xa_sc_fill(&e, RA, anchor, top, chain, XA_SC_FRAMES + 1, ST));
    ck_assert_ptr_null(xa_sc_lookup(&e, RA, anchor));
}
END_TEST

/* The scan stops at top: the page at top is PROT_NONE, and a value that
 * is not below it makes the fill fail, not fault. The last word below
 * top is found. */
START_TEST(test_fill_stops_at_top)
{
    long page = sysconf(_SC_PAGESIZE);
    char *m = mmap(NULL, (size_t)page * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
    ck_assert(m != MAP_FAILED);
    ck_assert_int_eq(mprotect(m + page, (size_t)page, PROT_NONE), 0);
    size_t words = (size_t)page / sizeof(uintptr_t);
    uintptr_t *mem = (uintptr_t *)m;
    const unsigned at_top[] = {1, (unsigned)words - 1};
    uintptr_t anchor = make_stack(mem, words, chain, at_top, 2);
    uintptr_t top = (uintptr_t)(m + page);
    xa_sc_entry e;
    memset(&e, 0, sizeof e);
    ck_assert(xa_sc_fill(&e, RA, anchor, top, chain, 2, ST));
    ck_assert_ptr_eq(xa_sc_lookup(&e, RA, anchor), ST);
    ck_assert(!xa_sc_fill(&e, RA, anchor, top, chain, 3, ST));
    munmap(m, (size_t)page * 2);
}
END_TEST

/* A frame bigger than XA_SC_GAP_MAX is not scanned across. */
START_TEST(test_fill_gap_limit)
{
    static uintptr_t big[(XA_SC_GAP_MAX / sizeof(uintptr_t)) * 2];
    size_t words = sizeof big / sizeof *big;
    unsigned gap_words = (unsigned)(XA_SC_GAP_MAX / sizeof(uintptr_t));
    const unsigned near[] = {1, gap_words - 8};
    const unsigned far[] = {1, gap_words + 8};
    xa_sc_entry e;
    memset(&e, 0, sizeof e);
    uintptr_t anchor = make_stack(big, words, chain, near, 2);
    uintptr_t top = anchor + words * sizeof(uintptr_t);
    ck_assert(xa_sc_fill(&e, RA, anchor, top, chain, 2, ST));
    anchor = make_stack(big, words, chain, far, 2);
    ck_assert(!xa_sc_fill(&e, RA, anchor, top, chain, 2, ST));
}
END_TEST

/* A key fills on its second miss in a row of its slot; a filled key whose
 * lookups keep missing refills after 2, 4, 8... misses. */
START_TEST(test_policy)
{
    xa_sc_entry e;
    memset(&e, 0, sizeof e);
    ck_assert(!xa_sc_should_fill(&e, 1, 100));
    ck_assert(xa_sc_should_fill(&e, 1, 100));
    ck_assert(!xa_sc_should_fill(&e, 2, 100));
    ck_assert(!xa_sc_should_fill(&e, 1, 100)); /* 2 came between */
    ck_assert(!xa_sc_should_fill(&e, 2, 100));
    ck_assert(xa_sc_should_fill(&e, 2, 100));
    /* Filled with key 1; its chain changes at every lookup. */
    uintptr_t anchor = make_stack(stack_mem, WORDS, chain, slot, N);
    ck_assert(xa_sc_fill(&e, RA, anchor, anchor + sizeof stack_mem, chain, N, ST));
    int fills = 0;
    for (int i = 0; i < 126; i++)
        fills += xa_sc_should_fill(&e, RA, anchor);
    ck_assert_int_eq(fills, 6); /* after 2, 4, 8, 16, 32 and 64 misses */
    /* Slots: the same key always maps to the same one. */
    xa_sc_cache c;
    ck_assert_ptr_eq(xa_sc_slot(&c, RA, anchor), xa_sc_slot(&c, RA, anchor));
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("prof_stack_cache");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_fill_then_hit);
    tcase_add_test(tc, test_changed_chain_misses);
    tcase_add_test(tc, test_fill_refuses);
    tcase_add_test(tc, test_fill_stops_at_top);
    tcase_add_test(tc, test_fill_gap_limit);
    tcase_add_test(tc, test_policy);
    suite_add_tcase(s, tc);
    return s;
}

XA_UNIT_MAIN(make_suite)
