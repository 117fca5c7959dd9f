/* tests/common/xt.h: helpers shared by the API, stress and integration tests
 * (tests/api, tests/stress, tests/integration). Header-only so that each test
 * program is one translation unit and needs no extra link step.
 *
 * These tests run against the real library (LD_PRELOAD or -lxalloc) and see
 * only include/. The environment variable XT_ALLOCATOR says which allocator
 * the run expects: "xalloc" (the default, so a bare run without the library
 * fails loudly) or "glibc" (make check-api-glibc: proves the tests against
 * the system allocator). xt_allocator_check() verifies that expectation. */
#ifndef XT_H
#define XT_H

#ifndef _GNU_SOURCE
#error "define _GNU_SOURCE before any include (dladdr, RTLD_DEFAULT)"
#endif

#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- which allocator is active ---- */

/* True when the run expects xalloc (XT_ALLOCATOR unset or "xalloc"). */
static inline bool xt_expect_xalloc(void)
{
    const char *e = getenv("XT_ALLOCATOR");
    return e == NULL || strcmp(e, "glibc") != 0;
}

/* True when `name` resolves (global scope) to a definition in a file whose
 * path contains `lib`. dladdr gives the object defining the symbol the
 * program would actually call: the interposition proof. */
static inline bool xt_symbol_from(const char *name, const char *lib)
{
    void *sym = dlsym(RTLD_DEFAULT, name);
    Dl_info info;
    if (sym == NULL || dladdr(sym, &info) == 0 || info.dli_fname == NULL)
        return false;
    return strstr(info.dli_fname, lib) != NULL;
}

/* True when /proc/self/maps has an executable mapping of `lib`. */
static inline bool xt_maps_has(const char *lib)
{
    char line[4096];
    FILE *f = fopen("/proc/self/maps", "re");
    bool found = false;
    if (f == NULL)
        return false;
    while (fgets(line, sizeof line, f) != NULL) {
        if (strstr(line, lib) != NULL && strstr(line, " r-xp ") != NULL)
            found = true;
    }
    fclose(f);
    return found;
}

/* Checks that the allocator in use is the expected one. Returns NULL when
 * it is, else a static message saying what is wrong. */
static inline const char *xt_allocator_problem(void)
{
    static const char *const names[] = {"malloc", "free", "calloc", "realloc",
                                        "posix_memalign", "malloc_usable_size"};
    if (xt_expect_xalloc()) {
        if (dlsym(RTLD_DEFAULT, "xalloc_version") == NULL)
            return "xalloc expected but xalloc_version is not defined "
                   "(library not preloaded/linked?)";
        if (!xt_maps_has("libxalloc.so.1"))
            return "xalloc expected but libxalloc.so.1 is not mapped r-xp";
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
            if (!xt_symbol_from(names[i], "libxalloc.so.1"))
                return "xalloc expected but a malloc-family symbol does not "
                       "resolve to libxalloc.so.1";
    } else {
        if (dlsym(RTLD_DEFAULT, "xalloc_version") != NULL)
            return "glibc expected but xalloc is loaded";
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
            if (!xt_symbol_from(names[i], "libc.so"))
                return "glibc expected but a malloc-family symbol is not "
                       "from libc.so";
    }
    return NULL;
}

/* For plain C probes: exit 2 with a message when the allocator is wrong. */
static inline void xt_require_allocator(const char *prog)
{
    const char *why = xt_allocator_problem();
    if (why != NULL) {
        fprintf(stderr, "%s: %s\n", prog, why);
        exit(2);
    }
}

/* ---- deterministic random numbers (splitmix64) ---- */

static inline uint64_t xt_rand(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Uniform in [lo, hi]. */
static inline size_t xt_rand_range(uint64_t *state, size_t lo, size_t hi)
{
    return lo + (size_t)(xt_rand(state) % (uint64_t)(hi - lo + 1));
}

/* ---- content patterns ---- */

/* The pattern byte at offset i of a block: a hash of (tag, i). The tag mixes
 * address, size and a seed, so a block overwritten by its neighbour, a stale
 * copy or another block's pattern is detected. */
static inline uint64_t xt_tag(const void *p, size_t size, uint64_t seed)
{
    uint64_t s = (uint64_t)(uintptr_t)p ^ (size * 0x2545f4914f6cdd1dULL) ^ seed;
    return xt_rand(&s);
}

static inline uint64_t xt_word(uint64_t tag, size_t i)
{
    uint64_t z = tag + (uint64_t)i * 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 29)) * 0xbf58476d1ce4e5b9ULL;
    return z ^ (z >> 32);
}

/* Fills [p, p+n) with the pattern of `tag`, starting at pattern offset off
 * (so a block can be filled in pieces, e.g. after realloc grows it). */
static inline void xt_fill_from(void *p, size_t off, size_t n, uint64_t tag)
{
    unsigned char *b = p;
    for (size_t i = off; i < n; i++) {
        if ((i & 7) == 0 && i + 8 <= n) {
            uint64_t w = xt_word(tag, i >> 3);
            memcpy(b + i, &w, 8);
            i += 7;
        } else {
            b[i] = (unsigned char)(xt_word(tag, i >> 3) >> ((i & 7) * 8));
        }
    }
}

static inline void xt_fill(void *p, size_t n, uint64_t tag)
{
    xt_fill_from(p, 0, n, tag);
}

/* Returns the first offset in [0, n) whose byte differs from the pattern,
 * or n when all match. */
static inline size_t xt_verify(const void *p, size_t n, uint64_t tag)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        if ((i & 7) == 0 && i + 8 <= n) {
            uint64_t w = xt_word(tag, i >> 3), got;
            memcpy(&got, b + i, 8);
            if (got == w) {
                i += 7;
                continue;
            }
        }
        if (b[i] != (unsigned char)(xt_word(tag, i >> 3) >> ((i & 7) * 8)))
            return i;
    }
    return n;
}

/* ---- time and memory ---- */

static inline double xt_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Resident set size of this process in bytes (from /proc/self/statm). */
static inline size_t xt_rss(void)
{
    char buf[256];
    long pages_total = 0, pages_res = 0;
    FILE *f = fopen("/proc/self/statm", "re");
    if (f == NULL)
        return 0;
    if (fgets(buf, sizeof buf, f) == NULL ||
        sscanf(buf, "%ld %ld", &pages_total, &pages_res) != 2)
        pages_res = 0;
    fclose(f);
    return (size_t)pages_res * (size_t)sysconf(_SC_PAGESIZE);
}

/* Hides a value from the optimiser, so that calls like malloc(SIZE_MAX) are
 * neither folded nor warned about at compile time. */
static inline size_t xt_opaque(size_t v)
{
    volatile size_t x = v;
    return x;
}

#define XT_MiB ((size_t)1 << 20)
#define XT_KiB ((size_t)1 << 10)

#endif /* XT_H */
