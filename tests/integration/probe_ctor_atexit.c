/* tests/integration/probe_ctor_atexit.c: allocation before main and after
 * it. A constructor allocates (the allocator's first call may be here); main
 * checks and frees that block; atexit handlers and a destructor allocate,
 * realloc and free after main has returned, and free blocks main left them.
 * Run under LD_PRELOAD by run.sh; exit 0 and "destructor done" on stdout
 * mean success. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr, RTLD_DEFAULT */
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/xt.h"

static unsigned char *ctor_block, *ctor_big;
static void *left_for_atexit[64];
static void *left_for_dtor[64];

static void die(const char *msg)
{
    /* write(2): stdio may be gone this late in exit. */
    (void)!write(2, msg, strlen(msg));
    (void)!write(2, "\n", 1);
    _exit(1);
}

/* Allocates, writes, reallocs and frees a spread of sizes; dies on a bad
 * block. Used at every stage of the process's life. */
static void churn(uint64_t seed)
{
    void *ps[32];
    size_t sz[32];
    uint64_t rng = seed;
    for (int i = 0; i < 32; i++) {
        sz[i] = xt_rand_range(&rng, 1, i < 28 ? 8192 : 3 << 20);
        ps[i] = malloc(sz[i]);
        if (ps[i] == NULL)
            die("churn: malloc failed");
        xt_fill(ps[i], sz[i], seed + (uint64_t)i);
    }
    for (int i = 0; i < 32; i += 2) {
        unsigned char *q = realloc(ps[i], sz[i] * 2 + 1);
        if (q == NULL || xt_verify(q, sz[i], seed + (uint64_t)i) != sz[i])
            die("churn: realloc lost content");
        ps[i] = q;
    }
    for (int i = 0; i < 32; i++) {
        if (xt_verify(ps[i], sz[i], seed + (uint64_t)i) != sz[i])
            die("churn: block corrupted");
        free(ps[i]);
    }
    char *s = strdup("strdup at some stage of the process");
    if (s == NULL)
        die("churn: strdup failed");
    free(s);
}

__attribute__((constructor)) static void early(void)
{
    ctor_block = malloc(100);
    ctor_big = malloc(5 << 20);
    if (ctor_block == NULL || ctor_big == NULL)
        die("constructor: malloc failed");
    xt_fill(ctor_block, 100, 1);
    xt_fill(ctor_big, 5 << 20, 2);
    churn(10);
}

static void at_exit_second(void)
{
    churn(30);
    for (int i = 0; i < 64; i++) {
        if (xt_verify(left_for_atexit[i], 64, (uint64_t)i) != 64)
            die("atexit: block left by main corrupted");
        free(left_for_atexit[i]);
    }
}

static void at_exit_first(void)
{
    /* Registered from the constructor: runs last among atexit handlers. */
    churn(40);
    void *p = calloc(1000, 10);
    if (p == NULL)
        die("atexit: calloc failed");
    free(p);
}

__attribute__((destructor)) static void late(void)
{
    churn(50);
    for (int i = 0; i < 64; i++) {
        if (xt_verify(left_for_dtor[i], 1000, (uint64_t)i) != 1000)
            die("destructor: block left by main corrupted");
        free(left_for_dtor[i]);
    }
    static const char done[] = "destructor done\n";
    (void)!write(1, done, sizeof done - 1);
}

__attribute__((constructor)) static void register_early_atexit(void)
{
    atexit(at_exit_first);
}

int main(int argc, char **argv)
{
    xt_require_allocator(argv[0]);
    if (xt_verify(ctor_block, 100, 1) != 100 || xt_verify(ctor_big, 5 << 20, 2) != (5 << 20))
        die("main: block from the constructor corrupted");
    free(ctor_block);
    free(ctor_big);
    churn(20);
    for (int i = 0; i < 64; i++) {
        left_for_atexit[i] = malloc(64);
        left_for_dtor[i] = malloc(1000);
        if (left_for_atexit[i] == NULL || left_for_dtor[i] == NULL)
            die("main: malloc failed");
        xt_fill(left_for_atexit[i], 64, (uint64_t)i);
        xt_fill(left_for_dtor[i], 1000, (uint64_t)i);
    }
    atexit(at_exit_second);
    printf("main done\n");
    return 0;
}
