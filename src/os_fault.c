/* os_fault.c: the fault injector behind XA_FAULT_POINT (see os_fault.h).
 * Compiled to nothing unless XA_FAULT is set. Allocation-free, lock-free:
 * it runs inside mmap wrappers, before the allocator is initialised and on
 * any thread. Layer: os. */
#include "os_fault.h"

#if XA_FAULT
#include <stdint.h>

#include "common.h"
#include "os.h"

struct rule {
    uint64_t nth, count; /* calls nth .. nth+count-1 fail (count 0: all after) */
    uint64_t ppm, seed;  /* or: each call fails with probability ppm/1e6 */
};

static struct rule rules[XA_FAULT_NKINDS];
static uint64_t calls[XA_FAULT_NKINDS];  /* atomic */
static uint64_t faults[XA_FAULT_NKINDS]; /* atomic */
static int loaded;                        /* 0 no, 1 loading, 2 yes */
static const char *const names[XA_FAULT_NKINDS] = {"mmap", "mremap", "madvise",
                                                   "mbind", "file", "thread"};

static bool word_is(const char *s, size_t n, const char *w)
{
    size_t i = 0;
    for (; i < n && w[i]; i++)
        if (s[i] != w[i])
            return false;
    return i == n && !w[i];
}

static size_t xa_fault_len(const char *s)
{
    size_t n = 0;
    while (s[n])
        n++;
    return n;
}

static uint64_t number(const char *s, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n && s[i] >= '0' && s[i] <= '9'; i++)
        v = v * 10 + (uint64_t)(s[i] - '0');
    return v;
}

/* Parses one "KIND:key=v:key=v" rule into rules[] (all kinds for "all"). */
static void parse_rule(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n && s[i] != ':')
        i++;
    struct rule r = {0, 1, 0, 0x9e3779b97f4a7c15ULL};
    for (size_t j = i; j < n;) {
        size_t k = ++j, eq = 0;
        while (j < n && s[j] != ':') {
            if (s[j] == '=' && !eq)
                eq = j;
            j++;
        }
        if (!eq)
            continue;
        uint64_t v = number(s + eq + 1, j - eq - 1);
        if (word_is(s + k, eq - k, "nth"))
            r.nth = v;
        else if (word_is(s + k, eq - k, "count"))
            r.count = v;
        else if (word_is(s + k, eq - k, "ppm"))
            r.ppm = v;
        else if (word_is(s + k, eq - k, "seed"))
            r.seed = v;
    }
    for (unsigned kind = 0; kind < XA_FAULT_NKINDS; kind++)
        if (word_is(s, i, "all") || word_is(s, i, names[kind]))
            rules[kind] = r;
}

static void load(const char *spec)
{
    for (unsigned k = 0; k < XA_FAULT_NKINDS; k++) {
        rules[k] = (struct rule){0, 0, 0, 0};
        __atomic_store_n(&calls[k], 0, __ATOMIC_RELAXED);
    }
    if (!spec)
        return;
    for (const char *p = spec; *p;) {
        const char *e = p;
        while (*e && *e != ';')
            e++;
        parse_rule(p, (size_t)(e - p));
        p = *e ? e + 1 : e;
    }
}

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

bool xa_fault_hit(enum xa_fault_kind kind)
{
    if (xa_unlikely(__atomic_load_n(&loaded, __ATOMIC_ACQUIRE) != 2)) {
        int expected = 0;
        if (__atomic_compare_exchange_n(&loaded, &expected, 1, false, __ATOMIC_ACQ_REL,
                                        __ATOMIC_RELAXED)) {
            load(xa_os_getenv("XALLOC_FAULT"));
            __atomic_store_n(&loaded, 2, __ATOMIC_RELEASE);
        } else if (expected == 1) {
            return false; /* another thread is loading: this call passes */
        }
    }
    const struct rule *r = &rules[kind];
    uint64_t n = __atomic_add_fetch(&calls[kind], 1, __ATOMIC_RELAXED);
    bool fail = false;
    if (r->nth && n >= r->nth && (r->count == 0 || n - r->nth < r->count))
        fail = true;
    if (r->ppm && mix(r->seed ^ (n * 0x2545f4914f6cdd1dULL)) % 1000000u < r->ppm)
        fail = true;
    if (fail)
        __atomic_add_fetch(&faults[kind], 1, __ATOMIC_RELAXED);
    return fail;
}

/* Test-driver hooks, exported from the fault build only. Not thread-safe
 * against concurrent fault points changing rules mid-call: drivers set
 * rules while their other threads are quiet. */
XA_EXPORT void xalloc_fault_set(const char *spec);
XA_EXPORT unsigned long long xalloc_fault_count(const char *kind);

void xalloc_fault_set(const char *spec)
{
    __atomic_store_n(&loaded, 2, __ATOMIC_RELEASE);
    load(spec);
}

unsigned long long xalloc_fault_count(const char *kind)
{
    unsigned long long total = 0;
    for (unsigned k = 0; k < XA_FAULT_NKINDS; k++)
        if (!kind || word_is(kind, xa_fault_len(kind), names[k]))
            total += __atomic_load_n(&faults[k], __ATOMIC_RELAXED);
    return total;
}
#else
typedef int xa_os_fault_unused; /* ISO C: a translation unit is not empty */
#endif
