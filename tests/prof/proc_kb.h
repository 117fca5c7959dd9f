/* proc_kb.h: one "Name: N kB" field of a /proc file, for the footprint
 * tests of tests/prof (footprint.c, walks.c); -1 when absent. */
#ifndef PROF_TEST_PROC_KB_H
#define PROF_TEST_PROC_KB_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline long field_kb(const char *path, const char *name)
{
    FILE *f = fopen(path, "r");
    char line[256];
    long v = -1;
    size_t n = strlen(name);
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, name, n) && line[n] == ':')
            v = atol(line + n + 1);
    if (f)
        fclose(f);
    return v;
}

#endif
