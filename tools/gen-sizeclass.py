#!/usr/bin/env python3
"""gen-sizeclass.py: prints the literal tables of src/sizeclass.c from the
rules in src/sizeclass.h/.c (class sizes, slab lengths, lookup tables).
tests/unit/check_sizeclass.c recomputes them in C and fails on any
difference, so this script is a convenience, not the authority."""
UNIT = 64 * 1024
SLAB_MAX_UNITS = 16
FINE_MAX = 32 * 1024      # eight classes per doubling up to here
SMALL_MAX = 256 * 1024
MEDIUM_MAX = 32 * 1024


def class_size(c):
    """Block size of class c (sizeclass.c: xa_sizeclass_rule_size)."""
    if c < 8:
        return (c + 1) * 16
    if c < 28:
        k, j = 7 + (c - 8) // 4, (c - 8) % 4 + 1
        return (1 << k) + j * (1 << (k - 2))
    if c < 52:
        k, j = 12 + (c - 28) // 8, (c - 28) % 8 + 1
        return (1 << k) + j * (1 << (k - 3))
    k, j = 15 + (c - 52) // 4, (c - 52) % 4 + 1
    return (1 << k) + j * (1 << (k - 2))


def units(size):
    """Slab length in units (sizeclass.c: xa_sizeclass_rule_units)."""
    min_blocks = 2 if size > 64 * 1024 else 4 if size > 16 * 1024 else 8
    best, best_waste = SLAB_MAX_UNITS, None
    for u in range(1, SLAB_MAX_UNITS + 1):
        b = u * UNIT
        n = b // size
        if n < min_blocks and u < SLAB_MAX_UNITS:
            continue
        waste = b - n * size
        if waste * 16 <= b:
            return u
        w = waste * 1024 // b
        if best_waste is None or w < best_waste:
            best_waste, best = w, u
    return best


sizes = []
c = 0
while True:
    s = class_size(c)
    if s > SMALL_MAX:
        break
    sizes.append(s)
    c += 1
print(f"/* XA_NCLASSES {len(sizes)} */")
print("const struct xa_class_info xa_classes[XA_NCLASSES] = {")
for s in sizes:
    u = units(s)
    print(f"    {{{s}, {u}, {u * UNIT // s}, {(1 << 64) // s + (1 if (1 << 64) % s else 0)}ULL}},")
print("};\n")


def cls_of(n):
    return next(i for i, s in enumerate(sizes) if s >= max(n, 1))


def table(name, dim_expr, dim, step, first_used):
    vals = [cls_of(i * step) if i * step >= first_used else 0 for i in range(dim)]
    print(f"const uint8_t {name}[{dim_expr}] = {{")
    for i in range(0, dim, 16):
        print("    " + " ".join(f"{v}," for v in vals[i:i + 16]))
    print("};\n")


table("xa_class_of_small", "(1024 >> 4) + 1", 1024 // 16 + 1, 16, 0)
table("xa_class_of_medium", "(XA_MEDIUM_TABLE_MAX >> 7) + 1", MEDIUM_MAX // 128 + 1, 128, 1025)
