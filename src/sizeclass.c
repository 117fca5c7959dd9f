/* sizeclass.c: the size-class tables and the rules they follow.
 * Layer: bottom. The tables are literal constants so that the fast path
 * needs no initialisation; tests/unit/check_sizeclass.c recomputes them
 * from the rules and fails if the two ever disagree. */
#include "sizeclass.h"

uint32_t xa_sizeclass_rule_size(unsigned cls)
{
    if (cls < 8)
        return (cls + 1) * 16;
    unsigned k = 7 + (cls - 8) / 4;
    unsigned j = (cls - 8) % 4 + 1;
    return (uint32_t)((1u << k) + j * (1u << (k - 2)));
}

/* Slab length: the fewest units that hold at least 8 blocks (4 above
 * 16 KiB, 2 above 64 KiB: a thread keeps one slab per class even when it
 * is empty, so big slabs of big classes would cost resident memory) while
 * wasting at most 1/16 of the slab on the tail; failing that, the length
 * with the least waste. */
uint32_t xa_sizeclass_rule_units(uint32_t size)
{
    uint32_t min_blocks = size > 64 * 1024 ? 2 : size > 16 * 1024 ? 4 : 8;
    uint32_t best = XA_SLAB_MAX_UNITS;
    uint64_t best_waste = UINT64_MAX;
    for (uint32_t u = 1; u <= XA_SLAB_MAX_UNITS; u++) {
        uint64_t bytes = (uint64_t)u * XA_UNIT_SIZE;
        uint64_t n = bytes / size;
        if (n < min_blocks && u < XA_SLAB_MAX_UNITS)
            continue;
        uint64_t waste = bytes - n * size;
        if (waste * 16 <= bytes)
            return u;
        if (waste * 1024 / bytes < best_waste) {
            best_waste = waste * 1024 / bytes;
            best = u;
        }
    }
    return best;
}

/* About one OS page of blocks per extension, so parts of a slab that are
 * never reached never become resident. */
uint32_t xa_sizeclass_rule_batch(uint32_t size)
{
    uint32_t batch = XA_OS_PAGE / size;
    return batch < 1 ? 1 : batch;
}

/* {size, units, blocks, batch, ceil(2^64 / size)} */
const struct xa_class_info xa_classes[XA_NCLASSES] = {
    {16, 1, 4096, 256, 1152921504606846976ULL},
    {32, 1, 2048, 128, 576460752303423488ULL},
    {48, 1, 1365, 85, 384307168202282326ULL},
    {64, 1, 1024, 64, 288230376151711744ULL},
    {80, 1, 819, 51, 230584300921369396ULL},
    {96, 1, 682, 42, 192153584101141163ULL},
    {112, 1, 585, 36, 164703072086692426ULL},
    {128, 1, 512, 32, 144115188075855872ULL},
    {160, 1, 409, 25, 115292150460684698ULL},
    {192, 1, 341, 21, 96076792050570582ULL},
    {224, 1, 292, 18, 82351536043346213ULL},
    {256, 1, 256, 16, 72057594037927936ULL},
    {320, 1, 204, 12, 57646075230342349ULL},
    {384, 1, 170, 10, 48038396025285291ULL},
    {448, 1, 146, 9, 41175768021673107ULL},
    {512, 1, 128, 8, 36028797018963968ULL},
    {640, 1, 102, 6, 28823037615171175ULL},
    {768, 1, 85, 5, 24019198012642646ULL},
    {896, 1, 73, 4, 20587884010836554ULL},
    {1024, 1, 64, 4, 18014398509481984ULL},
    {1280, 1, 51, 3, 14411518807585588ULL},
    {1536, 1, 42, 2, 12009599006321323ULL},
    {1792, 1, 36, 2, 10293942005418277ULL},
    {2048, 1, 32, 2, 9007199254740992ULL},
    {2560, 1, 25, 1, 7205759403792794ULL},
    {3072, 1, 21, 1, 6004799503160662ULL},
    {3584, 1, 18, 1, 5146971002709139ULL},
    {4096, 1, 16, 1, 4503599627370496ULL},
    {5120, 1, 12, 1, 3602879701896397ULL},
    {6144, 1, 10, 1, 3002399751580331ULL},
    {7168, 1, 9, 1, 2573485501354570ULL},
    {8192, 1, 8, 1, 2251799813685248ULL},
    {10240, 2, 12, 1, 1801439850948199ULL},
    {12288, 2, 10, 1, 1501199875790166ULL},
    {14336, 2, 9, 1, 1286742750677285ULL},
    {16384, 2, 8, 1, 1125899906842624ULL},
    {20480, 2, 6, 1, 900719925474100ULL},
    {24576, 2, 5, 1, 750599937895083ULL},
    {28672, 4, 9, 1, 643371375338643ULL},
    {32768, 2, 4, 1, 562949953421312ULL},
    {40960, 4, 6, 1, 450359962737050ULL},
    {49152, 3, 4, 1, 375299968947542ULL},
    {57344, 7, 8, 1, 321685687669322ULL},
    {65536, 4, 4, 1, 281474976710656ULL},
    {81920, 4, 3, 1, 225179981368525ULL},
    {98304, 3, 2, 1, 187649984473771ULL},
    {114688, 7, 4, 1, 160842843834661ULL},
    {131072, 4, 2, 1, 140737488355328ULL},
    {163840, 5, 2, 1, 112589990684263ULL},
    {196608, 6, 2, 1, 93824992236886ULL},
    {229376, 7, 2, 1, 80421421917331ULL},
    {262144, 8, 2, 1, 70368744177664ULL},
};

const uint8_t xa_class_of_small[(1024 >> 4) + 1] = {
    0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 8, 9, 9, 10, 10, 11,
    11, 12, 12, 12, 12, 13, 13, 13, 13, 14, 14, 14, 14, 15, 15, 15,
    15, 16, 16, 16, 16, 16, 16, 16, 16, 17, 17, 17, 17, 17, 17, 17,
    17, 18, 18, 18, 18, 18, 18, 18, 18, 19, 19, 19, 19, 19, 19, 19,
    19,
};

/* Sizes 1025..32768 by (size + 127) >> 7: every class there is a multiple
 * of 128. The first entries (sizes up to 1024) are unused. */
const uint8_t xa_class_of_medium[(XA_MEDIUM_TABLE_MAX >> 7) + 1] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 20, 20, 21, 21, 22, 22, 23,
    23, 24, 24, 24, 24, 25, 25, 25, 25, 26, 26, 26, 26, 27, 27, 27,
    27, 28, 28, 28, 28, 28, 28, 28, 28, 29, 29, 29, 29, 29, 29, 29,
    29, 30, 30, 30, 30, 30, 30, 30, 30, 31, 31, 31, 31, 31, 31, 31,
    31, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32,
    32, 33, 33, 33, 33, 33, 33, 33, 33, 33, 33, 33, 33, 33, 33, 33,
    33, 34, 34, 34, 34, 34, 34, 34, 34, 34, 34, 34, 34, 34, 34, 34,
    34, 35, 35, 35, 35, 35, 35, 35, 35, 35, 35, 35, 35, 35, 35, 35,
    35, 36, 36, 36, 36, 36, 36, 36, 36, 36, 36, 36, 36, 36, 36, 36,
    36, 36, 36, 36, 36, 36, 36, 36, 36, 36, 36, 36, 36, 36, 36, 36,
    36, 37, 37, 37, 37, 37, 37, 37, 37, 37, 37, 37, 37, 37, 37, 37,
    37, 37, 37, 37, 37, 37, 37, 37, 37, 37, 37, 37, 37, 37, 37, 37,
    37, 38, 38, 38, 38, 38, 38, 38, 38, 38, 38, 38, 38, 38, 38, 38,
    38, 38, 38, 38, 38, 38, 38, 38, 38, 38, 38, 38, 38, 38, 38, 38,
    38, 39, 39, 39, 39, 39, 39, 39, 39, 39, 39, 39, 39, 39, 39, 39,
    39, 39, 39, 39, 39, 39, 39, 39, 39, 39, 39, 39, 39, 39, 39, 39,
    39,
};
