/* tests/harden/hx.h: helpers shared by the hardening tests (fault driver,
 * limits probe, oversubscription stress): content patterns that make a
 * block handed out twice, an overlap or a lost realloc copy visible, a
 * tiny RNG, and output without stdio (which allocates). Header-only. */
#ifndef HX_H
#define HX_H

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- output: formatted into a stack buffer, one write(2) ---- */
__attribute__((format(printf, 2, 3))) static inline void hx_say(int fd, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if (n > (int)sizeof buf - 2)
        n = (int)sizeof buf - 2;
    buf[n++] = '\n';
    ssize_t w = write(fd, buf, (size_t)n);
    (void)w;
}
#define hx_fail(...) (hx_say(2, "FAIL: " __VA_ARGS__), _exit(1))

/* Pattern loops carry no fuzzer coverage (they would dominate its time and
 * teach it nothing about the allocator). */
#if defined(__clang__) && __clang_major__ >= 13
#define HX_NOCOV __attribute__((no_sanitize("coverage"), noinline))
#else
#define HX_NOCOV
#endif

/* ---- RNG (splitmix64) ---- */
static inline uint64_t hx_rand(uint64_t *s)
{
    uint64_t x = (*s += 0x9e3779b97f4a7c15ULL);
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* ---- patterns ----
 * Blocks up to 64 KiB are patterned whole; bigger ones at their first and
 * last 4 KiB and 64 bytes at every page, so multi-MiB blocks stay cheap
 * while every page (and so every overlap) is still covered. */
static inline uint8_t hx_byte(uint64_t seed, size_t k)
{
    return (uint8_t)((seed >> ((k & 7) * 8)) + k * 131u + (k >> 12));
}

#define HX_FOR_POSITIONS(size, k, body)                                         \
    do {                                                                        \
        if ((size) <= 65536) {                                                  \
            for (size_t k = 0; k < (size); k++)                                 \
                body;                                                           \
        } else {                                                                \
            for (size_t k = 0; k < 4096; k++)                                   \
                body;                                                           \
            for (size_t pg_ = 4096; pg_ + 4096 < (size); pg_ += 4096)           \
                for (size_t k = pg_; k < pg_ + 64; k++)                         \
                    body;                                                       \
            for (size_t k = (size)-4096; k < (size); k++)                       \
                body;                                                           \
        }                                                                       \
    } while (0)

HX_NOCOV static inline void hx_fill(void *p, size_t size, uint64_t seed)
{
    uint8_t *b = p;
    HX_FOR_POSITIONS(size, k, b[k] = hx_byte(seed, k));
}

/* Checks the pattern of a block of old_size bytes at the positions below
 * limit; returns the first bad offset or SIZE_MAX. */
HX_NOCOV static inline size_t hx_check(const void *p, size_t old_size, uint64_t seed, size_t limit)
{
    const uint8_t *b = p;
    size_t bad = SIZE_MAX;
    HX_FOR_POSITIONS(old_size, k, {
        if (k < limit && b[k] != hx_byte(seed, k) && bad == SIZE_MAX)
            bad = k;
    });
    return bad;
}

/* True when every sampled byte is zero (calloc). */
HX_NOCOV static inline bool hx_zero(const void *p, size_t size)
{
    const uint8_t *b = p;
    bool ok = true;
    HX_FOR_POSITIONS(size, k, ok &= b[k] == 0);
    return ok;
}

/* ---- process facts ---- */
static inline long hx_rss_kib(void)
{
    char buf[256];
    int fd = open("/proc/self/statm", O_RDONLY);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = 0;
    long size = 0, rss = 0;
    if (sscanf(buf, "%ld %ld", &size, &rss) != 2)
        return -1;
    return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

#endif /* HX_H */
