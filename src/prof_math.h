/* prof_math.h: the two functions of the sampler's arithmetic, without
 * libm (profiling build only). Linking libm for log() and exp() costs a
 * profiled process about 180 KiB of resident libm pages (its ifunc'd text
 * and tables, mapped in 64 KiB fault-around windows) and a mapped libm
 * even with prof:false; the sampler needs neither their speed nor their
 * last bit. Layer: bottom of prof; pure functions, no state. */
#ifndef XA_PROF_MATH_H
#define XA_PROF_MATH_H

#include <stdint.h>
#include <string.h>

#define XA_PROF_LN2 0.693147180559945309417

/* Natural logarithm of x. Pre: x is a positive normal double (not 0,
 * subnormal, infinite or NaN). Relative error below 1e-13. */
static inline double xa_prof_ln(double x)
{
    uint64_t b;
    memcpy(&b, &x, sizeof b);
    int e = (int)((b >> 52) & 0x7ff) - 1023;
    b = (b & ((UINT64_C(1) << 52) - 1)) | (UINT64_C(1023) << 52);
    double m;
    memcpy(&m, &b, sizeof m); /* x = m * 2^e, m in [1, 2) */
    if (m > 1.41421356237309504880) {
        m *= 0.5;
        e++;
    }
    /* ln m = 2 atanh(s), |s| <= 0.172: eight terms of the odd series,
     * summed by Estrin's scheme (pairs, then pairs of pairs): a chain of
     * three multiply-adds instead of Horner's seven, which every sample
     * waited for. */
    double s = (m - 1.0) / (m + 1.0), z = s * s;
    double z2 = z * z, z4 = z2 * z2;
    double p01 = 1.0 + z * (1.0 / 3), p23 = 1.0 / 5 + z * (1.0 / 7);
    double p45 = 1.0 / 9 + z * (1.0 / 11), p67 = 1.0 / 13 + z * (1.0 / 15);
    double t = (p01 + z2 * p23) + z4 * (p45 + z2 * p67);
    return (double)e * XA_PROF_LN2 + 2.0 * s * t;
}

/* 1 / k! for k = 0..15, then zeros: xa_prof_alternating reads 16
 * coefficients from a start of 0 or 1. */
static const double xa_prof_inv_fact[20] = {
    1.0,           1.0,           1.0 / 2,          1.0 / 6,           1.0 / 24,
    1.0 / 120,     1.0 / 720,     1.0 / 5040,       1.0 / 40320,       1.0 / 362880,
    1.0 / 3628800, 1.0 / 39916800, 1.0 / 479001600, 1.0 / 6227020800.0, 1.0 / 87178291200.0,
    1.0 / 1307674368000.0, 0.0, 0.0, 0.0, 0.0};

/* c[0] - c[1] x + c[2] x^2 - ... - c[15] x^15 (16 coefficients; zeros end
 * a shorter series), by Estrin's scheme: the terms in pairs, the pairs in
 * pairs, and so on, a chain of four multiply-adds where Horner's rule had
 * fifteen (about 120 cycles a sample spent waiting). Constant
 * coefficients: a division per term would cost more than libm's exp. */
static inline double xa_prof_alternating(const double *c, double x)
{
    double y = -x, y2 = y * y, y4 = y2 * y2, y8 = y4 * y4;
    double p[8];
    for (int k = 0; k < 8; k++)
        p[k] = c[2 * k] + y * c[2 * k + 1];
    double q0 = p[0] + y2 * p[1], q1 = p[2] + y2 * p[3];
    double q2 = p[4] + y2 * p[5], q3 = p[6] + y2 * p[7];
    return (q0 + y4 * q1) + y8 * (q2 + y4 * q3);
}

/* 1 - e^-x for x >= 0, without the cancellation of 1.0 - exp(-x) for
 * small x (the probability that a block of x sample distances is
 * sampled). Relative error below 1e-13; 1.0 from x = 40 on. */
static inline double xa_prof_one_minus_exp_neg(double x)
{
    if (!(x > 0.0))
        return 0.0;
    if (x >= 40.0)
        return 1.0; /* e^-40 < 2^-57 */
    /* x - x^2/2! + ... + x^15/15!: the next term is below 0.5^15 / 16!
     * of x. */
    if (x < 0.5)
        return x * xa_prof_alternating(xa_prof_inv_fact + 1, x);
    /* e^-x = 2^-k e^-r with |r| <= ln2/2: e^-r to the r^15/15! term. */
    int k = (int)(x * (1.0 / XA_PROF_LN2) + 0.5);
    double r = x - (double)k * XA_PROF_LN2;
    double t = xa_prof_alternating(xa_prof_inv_fact, r);
    uint64_t b = (uint64_t)(1023 - k) << 52;
    double scale;
    memcpy(&scale, &b, sizeof scale);
    return 1.0 - t * scale;
}

/* x / (1 - e^-x) for x >= 0 (1 at 0): a sampled block of x sample
 * distances stands for this many distances of bytes (size / P(sampled)).
 * Below 1 it is the series of the Bernoulli numbers, 1 + x/2 + x^2/12 -
 * x^4/720 + ... to the x^14 term (relative error below 3e-13), with no
 * division: a program whose sampled sizes vary (blocks grown by realloc,
 * most of all) computed 1 - e^-x and a division at every sample or
 * resize, about 60 instructions. */
static inline double xa_prof_size_over_p(double x)
{
    if (!(x > 0.0))
        return 1.0;
    if (x < 1.0) {
        /* 1 + x/2 + z (c2 + c4 z + ... + c14 z^6), z = x^2, by Estrin's
         * scheme. */
        double z = x * x, z2 = z * z, z4 = z2 * z2;
        double q0 = 1.0 / 12 + z * (-1.0 / 720), q1 = 1.0 / 30240 + z * (-1.0 / 1209600);
        double q2 = 1.0 / 47900160 + z * (-691.0 / 1307674368000.0);
        double q3 = 1.0 / 74724249600.0;
        double p = (q0 + z2 * q1) + z4 * (q2 + z2 * q3);
        return 1.0 + 0.5 * x + z * p;
    }
    if (x >= 40.0)
        return x; /* e^-40 < 2^-57 */
    return x / xa_prof_one_minus_exp_neg(x);
}

/* ---- the sampler's draw: -ln(u) without a division ----
 * next_distance() draws one exponential distance per sample; with blocks
 * near the sample mean nearly every allocation is a sample, so the draw
 * is on the hot path. ln(x) splits x = 2^e m (m in [1, 2)) and m around
 * the middle c of one of XA_PROF_LN_BUCKETS buckets: ln x = e ln2 + ln c
 * + ln(1 + t), t = m / c - 1 with |t| <= 1/256, taken as m * (1/c) - 1
 * (a table holds ln c and 1/c) and summed to the t^4 term: absolute
 * error below 2e-13, without the division of xa_prof_ln (about 20 ns a
 * sample less). */
#define XA_PROF_LN_BITS 7
#define XA_PROF_LN_BUCKETS (1 << XA_PROF_LN_BITS)

typedef struct xa_prof_ln_entry {
    double ln_c, inv_c;
} xa_prof_ln_entry;

/* Fills the table (once, at boot) with xa_prof_ln. */
static inline void xa_prof_ln_table_init(xa_prof_ln_entry *tab)
{
    for (int i = 0; i < XA_PROF_LN_BUCKETS; i++) {
        double c = 1.0 + ((double)i + 0.5) / XA_PROF_LN_BUCKETS;
        tab[i].ln_c = xa_prof_ln(c);
        tab[i].inv_c = 1.0 / c;
    }
}

/* -ln(k 2^-53) for k in [1, 2^53]: the exponential variate of a uniform
 * draw k (u = k 2^-53 in (0, 1]). Pre: tab filled. */
static inline double xa_prof_neg_ln_unit(const xa_prof_ln_entry *tab, uint64_t k)
{
    double x = (double)k; /* exact: k <= 2^53 */
    uint64_t b;
    memcpy(&b, &x, sizeof b);
    int e = (int)(b >> 52) - 1023;
    const xa_prof_ln_entry *c = &tab[(b >> (52 - XA_PROF_LN_BITS)) & (XA_PROF_LN_BUCKETS - 1)];
    b = (b & ((UINT64_C(1) << 52) - 1)) | (UINT64_C(1023) << 52);
    double m;
    memcpy(&m, &b, sizeof m);
    double t = m * c->inv_c - 1.0, t2 = t * t;
    double l1p = t - t2 * ((0.5 - t * (1.0 / 3)) + t2 * 0.25);
    /* -ln(k 2^-53) = 53 ln2 - (e ln2 + ln c + ln(1 + t)) */
    return (double)(53 - e) * XA_PROF_LN2 - c->ln_c - l1p;
}

#endif /* XA_PROF_MATH_H */
