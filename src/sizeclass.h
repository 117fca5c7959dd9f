/* sizeclass.h: size <-> class mapping. Layer: bottom (pure functions and
 * tables; no state besides the tables built at boot).
 * Classes: 16..128 in steps of 16 (exact small classes), then four classes
 * per doubling up to 1 KiB, eight per doubling from 1 KiB to 8 KiB, and
 * four again up to 256 KiB. Eight where blocks share pages and where
 * requests crowd just past a power of two: a payload plus a header (1032 B:
 * sqlite's in-memory journal chunks; 1030 B: a redis 1 KiB string; 4104,
 * 4368 B: sqlite's page cache) wastes 11% or less instead of up to 24%,
 * resident, since every byte of a shared page is. The 64 class slots pay
 * for it with four per doubling from 8 to 32 KiB, where requests are
 * rarer and a block spans pages: the waste past a request's end is
 * resident only on pages the program or a neighbouring block touches
 * (from 16 KiB up, where classes are page multiples, whole pages of it
 * stay virtual).
 * Internal waste stays under 20% everywhere (typically near 10%). Every
 * class is a multiple of 16, so every block is 16-aligned.
 * `make sizeclass-tables` prints the literal tables of sizeclass.c. */
#ifndef XA_SIZECLASS_H
#define XA_SIZECLASS_H

#include "common.h"

#define XA_NCLASSES 64
/* Classes 20..43: the eight per doubling from 1 KiB to 8 KiB. */
#define XA_FINE_CLASSES_BEGIN 20
#define XA_FINE_CLASSES_END 44
#define XA_SMALL_MAX ((size_t)256 * 1024)
#define XA_SLAB_MAX_UNITS 16
/* Blocks of at least this size span several pages: when free, the pages
 * they have to themselves can be given back to the OS without waiting for
 * the slab to empty (as a large block would be). The page of the link
 * stays, and so does a page shared with a neighbour. */
#define XA_TRIM_MIN_BLOCK ((uint32_t)16384)

struct xa_class_info {
    uint32_t size;     /* block size */
    uint32_t units;    /* slab length in 64 KiB units */
    uint32_t blocks;   /* blocks per slab */
    uint64_t div_magic; /* ceil(2^64 / size): divisibility test */
};

/* The tables are constants (usable before init, shared read-only by
 * every thread); check_sizeclass verifies them against the rules below. */
extern const struct xa_class_info xa_classes[XA_NCLASSES];
/* Class of each request size up to 1024, indexed by the size itself:
 * malloc's lookup is one load, with no rounding of the size first (two
 * instructions fewer than a table of 16-byte steps). 1 KiB of constants,
 * of which a program reads the lines of the sizes it asks for. */
extern const uint8_t xa_class_of_small[1024 + 1];
/* Requests above 1 KiB find their class in a second table, 1025..256 KiB
 * in 128-byte steps (every class above 1 KiB is a multiple of 128): one
 * load and no test of the size. With a bit scan past 32 KiB, as before,
 * a program whose buffers straddle 32 KiB (a ring of 4-64 KiB I/O
 * buffers) mispredicted that test at every other malloc: a fifth of its
 * time. 2 KiB of constants, of which a program reads the lines of the
 * sizes it asks for. */
#define XA_MEDIUM_TABLE_MAX XA_SMALL_MAX
extern const uint8_t xa_class_of_medium[(XA_MEDIUM_TABLE_MAX >> 7) + 1];

/* The rules the tables follow: block size of a class, slab length for a
 * block size (in units). */
uint32_t xa_sizeclass_rule_size(unsigned cls);
uint32_t xa_sizeclass_rule_units(uint32_t size);

/* Class of a request above 8 KiB (four per doubling): x is size - 1, k
 * the index of its top bit (k >= 13). */
XA_FAST_PATH unsigned xa_size_class_coarse(size_t x, unsigned k)
{
    return XA_FINE_CLASSES_END + (k - 13u) * 4u + (unsigned)((x >> (k - 2u)) & 3u);
}

/* Class of a request of size bytes, 1024 < size <= XA_SMALL_MAX. */
XA_FAST_PATH unsigned xa_size_class_above_1k(size_t size)
{
    return xa_class_of_medium[(size + 127) >> 7];
}

/* Class of a request of size bytes, size <= XA_SMALL_MAX. */
XA_FAST_PATH unsigned xa_size_class(size_t size)
{
    if (xa_likely(size <= 1024))
        return xa_class_of_small[size];
    return xa_size_class_above_1k(size);
}

/* Computed class without the table (used to build it, and by tests). */
static inline unsigned xa_size_class_compute(size_t size)
{
    if (size <= 128)
        return size == 0 ? 0 : (unsigned)((size - 1) >> 4);
    size_t x = size - 1;
    unsigned k = 63u - (unsigned)__builtin_clzl(x);
    if (k < 10)
        return 8u + (k - 7u) * 4u + (unsigned)((x >> (k - 2u)) & 3u);
    if (k < 13)
        return XA_FINE_CLASSES_BEGIN + (k - 10u) * 8u + (unsigned)((x >> (k - 3u)) & 7u);
    return xa_size_class_coarse(x, k);
}

static inline size_t xa_class_size(unsigned cls) { return xa_classes[cls].size; }

/* True when off is a whole multiple of the class size (off < 2^32). */
static inline bool xa_class_divides(unsigned cls, uint32_t off)
{
    return off * xa_classes[cls].div_magic <= xa_classes[cls].div_magic - 1;
}

#endif /* XA_SIZECLASS_H */
