/* check_prof_math.c: the sampler's libm-free logarithm and 1 - e^-x
 * (src/prof_math.h) against libm, over the ranges the sampler feeds
 * them (and the table logarithm the draw uses): u in (0, 1] for the exponential distances, size / prof_sample
 * from 1e-12 (one byte in 1 TiB) to far past 40 for the estimates (and
 * the estimate's own factor, x / (1 - e^-x)). */
#include <check.h>
#include <math.h>
#include <stdint.h>

#include "prof_math.h"
#include "unit/unit_main.h"

static double rel_err(double got, double want)
{
    return fabs(got - want) / fabs(want);
}

/* Every u the sampler draws is (k + 1) 2^-53: the extremes, powers of
 * two, both sides of sqrt(2) (where the mantissa is folded) and a sweep. */
START_TEST(test_ln_matches_libm)
{
    double worst = 0.0;
    const double fixed[] = {0x1.0p-53, 0x1.0p-52, 0x1.0p-1, 1.0, 0.999999999, 0.25,
                            1.41421356237309504880, 1.4142135623730951, 1.4142135623730949,
                            0.70710678118654752440, 3.0, 1e300, 1e-300};
    for (unsigned i = 0; i < sizeof fixed / sizeof *fixed; i++) {
        double x = fixed[i], want = log(x), got = xa_prof_ln(x);
        if (want == 0.0)
            ck_assert(got == 0.0);
        else
            worst = fmax(worst, rel_err(got, want));
    }
    uint64_t r = 0x9e3779b97f4a7c15ULL;
    for (int i = 0; i < 1000000; i++) {
        r ^= r >> 12, r ^= r << 25, r ^= r >> 27;
        double u = (double)(((r * 0x2545f4914f6cdd1dULL) >> 11) + 1) * 0x1.0p-53;
        if (u == 1.0)
            continue;
        worst = fmax(worst, rel_err(xa_prof_ln(u), log(u)));
    }
    ck_assert_msg(worst < 1e-13, "worst relative error %g", worst);
}
END_TEST

/* The draw's table logarithm: -ln(k 2^-53) for every k the sampler can
 * draw, against libm: the ends, powers of two, bucket edges and middles,
 * and a sweep. Absolute error (the distance is this times prof_sample);
 * relative error where the value is not tiny. */
START_TEST(test_neg_ln_unit_matches_libm)
{
    xa_prof_ln_entry tab[XA_PROF_LN_BUCKETS];
    xa_prof_ln_table_init(tab);
    double worst_abs = 0.0, worst_rel = 0.0;
    uint64_t top = UINT64_C(1) << 53;
    const uint64_t fixed[] = {1, 2, 3, 4, 5, 7, 1000, (UINT64_C(1) << 52) - 1, UINT64_C(1) << 52,
                              (UINT64_C(1) << 52) + 1, top - 1, top,
                              /* bucket edges and middles of the mantissa */
                              (UINT64_C(1) << 52) + (UINT64_C(1) << 45),
                              (UINT64_C(1) << 52) + (UINT64_C(1) << 44),
                              (UINT64_C(1) << 52) + (UINT64_C(127) << 45) - 1};
    for (unsigned i = 0; i < sizeof fixed / sizeof *fixed; i++) {
        double want = -log((double)fixed[i] * 0x1.0p-53);
        double got = xa_prof_neg_ln_unit(tab, fixed[i]);
        worst_abs = fmax(worst_abs, fabs(got - want));
    }
    ck_assert(xa_prof_neg_ln_unit(tab, top) < 1e-12 && xa_prof_neg_ln_unit(tab, top) > -1e-12);
    uint64_t r = 0x9e3779b97f4a7c15ULL;
    for (int i = 0; i < 2000000; i++) {
        r ^= r >> 12, r ^= r << 25, r ^= r >> 27;
        uint64_t k = ((r * 0x2545f4914f6cdd1dULL) >> 11) + 1;
        /* Small k too: a shift by a few bits gives every exponent. */
        if (i & 1)
            k = (k >> (i % 53)) + 1;
        double want = -log((double)k * 0x1.0p-53), got = xa_prof_neg_ln_unit(tab, k);
        worst_abs = fmax(worst_abs, fabs(got - want));
        if (want > 0.01)
            worst_rel = fmax(worst_rel, rel_err(got, want));
    }
    ck_assert_msg(worst_abs < 1e-12, "worst absolute error %g", worst_abs);
    ck_assert_msg(worst_rel < 1e-12, "worst relative error %g", worst_rel);
}
END_TEST

/* Distances drawn as next_distance() draws them have the exponential's
 * mean and spread: the mean of 2M draws within 0.5% of 1, the share
 * below ln 2 (the median) within 0.5% of one half. */
START_TEST(test_neg_ln_unit_is_exponential)
{
    xa_prof_ln_entry tab[XA_PROF_LN_BUCKETS];
    xa_prof_ln_table_init(tab);
    uint64_t r = 0x853c49e6748fea9bULL;
    double sum = 0.0;
    int below = 0, n = 2000000;
    for (int i = 0; i < n; i++) {
        r ^= r >> 12, r ^= r << 25, r ^= r >> 27;
        double d = xa_prof_neg_ln_unit(tab, ((r * 0x2545f4914f6cdd1dULL) >> 11) + 1);
        sum += d;
        below += d < XA_PROF_LN2;
    }
    ck_assert_msg(fabs(sum / n - 1.0) < 0.005, "mean %g", sum / n);
    ck_assert_msg(fabs((double)below / n - 0.5) < 0.005, "below the median %g", (double)below / n);
}
END_TEST

START_TEST(test_one_minus_exp_neg_matches_libm)
{
    double worst = 0.0;
    for (double x = 1e-12; x < 60.0; x *= 1.0007) {
        double want = -expm1(-x);
        worst = fmax(worst, rel_err(xa_prof_one_minus_exp_neg(x), want));
    }
    ck_assert_msg(worst < 1e-13, "worst relative error %g", worst);
    /* The joins between the series and the range reduction. */
    ck_assert(rel_err(xa_prof_one_minus_exp_neg(0.5), -expm1(-0.5)) < 1e-13);
    ck_assert(rel_err(xa_prof_one_minus_exp_neg(nextafter(0.5, 0)), -expm1(-0.5)) < 1e-13);
    ck_assert(xa_prof_one_minus_exp_neg(40.0) == 1.0);
}
END_TEST

/* A block of 0 bytes is never sampled (the estimate then falls back to
 * the rate), and huge ratios do not overflow the scale factor. */
START_TEST(test_one_minus_exp_neg_edges)
{
    ck_assert(xa_prof_one_minus_exp_neg(0.0) == 0.0);
    ck_assert(xa_prof_one_minus_exp_neg(-1.0) == 0.0);
    ck_assert(xa_prof_one_minus_exp_neg(NAN) == 0.0);
    ck_assert(xa_prof_one_minus_exp_neg(1e300) == 1.0);
    ck_assert(xa_prof_one_minus_exp_neg(INFINITY) == 1.0);
    double tiny = 0x1.0p-60;
    ck_assert(xa_prof_one_minus_exp_neg(tiny) == tiny);
}
END_TEST

/* The estimate's factor x / (1 - e^-x): both sides of 1 (series / exp),
 * the limits (1 at 0, x from 40 on) and a sweep of what sizes give. */
START_TEST(test_size_over_p_matches_libm)
{
    double worst = 0.0;
    for (double x = 1e-12; x < 60.0; x *= 1.0007) {
        double want = x < 40.0 ? x / -expm1(-x) : x;
        worst = fmax(worst, rel_err(xa_prof_size_over_p(x), want));
    }
    const double fixed[] = {0.999999999999, 1.0, 1.000000000001, 0.5, 0.125, 39.999, 40.0};
    for (unsigned i = 0; i < sizeof fixed / sizeof *fixed; i++) {
        double x = fixed[i];
        worst = fmax(worst, rel_err(xa_prof_size_over_p(x), x / -expm1(-x)));
    }
    ck_assert_msg(worst < 1e-12, "worst relative error %g", worst);
    ck_assert(xa_prof_size_over_p(0.0) == 1.0);
    ck_assert(xa_prof_size_over_p(NAN) == 1.0);
    ck_assert(xa_prof_size_over_p(1e300) == 1e300);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("prof_math");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_ln_matches_libm);
    tcase_add_test(tc, test_neg_ln_unit_matches_libm);
    tcase_add_test(tc, test_neg_ln_unit_is_exponential);
    tcase_add_test(tc, test_one_minus_exp_neg_matches_libm);
    tcase_add_test(tc, test_one_minus_exp_neg_edges);
    tcase_add_test(tc, test_size_over_p_matches_libm);
    suite_add_tcase(s, tc);
    return s;
}

XA_UNIT_MAIN(make_suite)
