/* proc.h: what the policy probes read of their own process from /proc:
 * a /proc/self/status field and the AnonHugePages of mappings. */
#ifndef XT_POLICY_PROC_H
#define XT_POLICY_PROC_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A "Key:  N kB" field of /proc/self/status, in kB; -1 if absent. */
static long status_kb(const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    size_t n = strlen(key);
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, key, n) == 0 && line[n] == ':')
            v = atol(line + n + 1);
    if (f)
        fclose(f);
    return v;
}

/* AnonHugePages (kB) of the mappings that overlap [lo, hi). */
static long anon_huge_kb_in(uintptr_t lo, uintptr_t hi)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    char line[512];
    long total = 0;
    int inside = 0;
    while (f && fgets(line, sizeof line, f)) {
        unsigned long a, b;
        char c;
        if (sscanf(line, "%lx-%lx %c", &a, &b, &c) == 3) {
            inside = b > lo && a < hi;
            continue;
        }
        if (inside && strncmp(line, "AnonHugePages:", 14) == 0)
            total += atol(line + 14);
    }
    if (f)
        fclose(f);
    return total;
}

#endif
