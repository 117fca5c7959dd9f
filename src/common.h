/* common.h: attributes, assertions and build switches shared by every
 * module. Layer: bottom (includes nothing of the project). */
#ifndef XA_COMMON_H
#define XA_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define XA_HIDDEN __attribute__((visibility("hidden")))
#define XA_EXPORT __attribute__((visibility("default")))
/* Fast paths are inlined into the entry points; slow paths are kept out of
 * line and cold so the fast path stays short in the instruction cache. */
#define XA_FAST_PATH static inline __attribute__((always_inline))
#define XA_SLOW_PATH __attribute__((noinline, cold))
#define XA_NOINLINE __attribute__((noinline))
#define xa_likely(x) __builtin_expect(!!(x), 1)
#define xa_unlikely(x) __builtin_expect(!!(x), 0)
#define XA_CACHELINE 64
#define XA_ALIGNED(n) __attribute__((aligned(n)))

#ifndef XA_DEBUG
#define XA_DEBUG 0
#endif
#ifndef XA_PROF
#define XA_PROF 0
#endif

/* Feature switches are constants so every build type-checks every line. */
static const bool xa_config_debug = XA_DEBUG >= 1;
static const bool xa_config_prof = XA_PROF != 0;
#ifdef XA_TEST
static const bool xa_config_test = true;
#else
static const bool xa_config_test = false;
#endif

/* Reports an internal or heap-corruption error through write(2) and aborts.
 * Defined in util.c. */
__attribute__((noreturn, format(printf, 1, 2))) void xa_fatal(const char *fmt, ...);

#define xa_assert(cond)                                                        \
    do {                                                                       \
        if (xa_config_debug && xa_unlikely(!(cond)))                           \
            xa_fatal("assertion failed: %s (%s:%d)", #cond, __FILE__,          \
                     __LINE__);                                                \
    } while (0)

#define XA_MIN(a, b) ((a) < (b) ? (a) : (b))
#define XA_MAX(a, b) ((a) > (b) ? (a) : (b))
#define XA_ALIGN_UP(x, a) (((x) + ((a)-1)) & ~((uintptr_t)(a)-1))
#define XA_ALIGN_DOWN(x, a) ((x) & ~((uintptr_t)(a)-1))

/* Geometry shared by all layers. A chunk is exactly one 2 MiB huge page;
 * a unit is the granule of page runs (slabs and large extents). */
#define XA_CHUNK_SHIFT 21
#define XA_CHUNK_SIZE ((size_t)1 << XA_CHUNK_SHIFT)
#define XA_UNIT_SHIFT 16
#define XA_UNIT_SIZE ((size_t)1 << XA_UNIT_SHIFT)
#define XA_UNITS_PER_CHUNK (XA_CHUNK_SIZE / XA_UNIT_SIZE)
#define XA_OS_PAGE 4096

#endif /* XA_COMMON_H */
