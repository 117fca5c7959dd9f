/* tests/common/xt_check.h: assertion macro for the Check suites in
 * tests/api and tests/stress. Check's own ck_assert* call _mark_point() on
 * every success, which in fork mode is a write(2) to the parent per
 * assertion: fine for a few, ruinous inside loops over millions of bytes or
 * sizes. XT_ASSERT costs one branch on success and reports through
 * ck_abort_msg on failure. The message must start with a string literal. */
#ifndef XT_CHECK_H
#define XT_CHECK_H

#include <check.h>

#define XT_ASSERT(expr, ...)                                                   \
    do {                                                                       \
        if (__builtin_expect(!(expr), 0))                                      \
            ck_abort_msg("Assertion '" #expr "' failed: " __VA_ARGS__);        \
    } while (0)

#endif /* XT_CHECK_H */
