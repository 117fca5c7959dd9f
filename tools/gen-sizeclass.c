/* gen-sizeclass.c: prints the literal tables of src/sizeclass.c from the
 * rules the library itself uses (xa_sizeclass_rule_size, _rule_units,
 * xa_size_class_compute), so there is one statement of them. Run by
 * `make sizeclass-tables`; `make check-unit` fails if a printed line is
 * missing from src/sizeclass.c. */
#include <stdio.h>

#include "sizeclass.h"

static void lookup_table(const char *name, const char *dim, size_t entries, size_t step,
                         size_t first_used)
{
    printf("const uint8_t %s[%s] = {\n", name, dim);
    for (size_t i = 0; i < entries; i++) {
        size_t size = i * step;
        printf("%s%u,%s", i % 16 ? " " : "    ",
               size >= first_used ? xa_size_class_compute(size) : 0u,
               i % 16 == 15 || i + 1 == entries ? "\n" : "");
    }
    printf("};\n\n");
}

int main(void)
{
    printf("const struct xa_class_info xa_classes[XA_NCLASSES] = {\n");
    for (unsigned c = 0; c < XA_NCLASSES; c++) {
        uint32_t size = xa_sizeclass_rule_size(c), units = xa_sizeclass_rule_units(size);
        printf("    {%u, %u, %u, %lluULL},\n", size, units,
               (unsigned)(units * XA_UNIT_SIZE / size),
               (unsigned long long)(UINT64_MAX / size + 1));
    }
    printf("};\n\n");
    lookup_table("xa_class_of_small", "1024 + 1", 1024 + 1, 1, 0);
    lookup_table("xa_class_of_medium", "(XA_MEDIUM_TABLE_MAX >> 7) + 1",
                 (XA_MEDIUM_TABLE_MAX >> 7) + 1, 128, 1025);
    return 0;
}
