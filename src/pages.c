/* pages.c: page policy (see pages.h). Layer: above os, config, numa. */
#include "pages.h"

#include "config.h"
#include "numa.h"
#include "os.h"

bool xa_pages_thp;
unsigned xa_pages_policy;
static bool thp_from_system;

/* True when /sys/kernel/mm/transparent_hugepage/enabled says [always]. */
static bool system_thp_always(void)
{
    char buf[128];
    int fd = xa_os_open_read("/sys/kernel/mm/transparent_hugepage/enabled");
    if (fd < 0)
        return false;
    ssize_t n = xa_os_read(fd, buf, sizeof buf - 1);
    xa_os_close(fd);
    if (n <= 0)
        return false;
    buf[n] = 0;
    /* The active mode is the bracketed word: "[always] madvise never". */
    for (ssize_t i = 0; i + 8 <= n; i++)
        if (buf[i] == '[')
            return buf[i + 1] == 'a' && buf[i + 2] == 'l';
    return false;
}

void xa_pages_boot(void)
{
    switch (xa_opt.thp) {
    case XA_THP_ALWAYS:
        xa_pages_policy = XA_THP_POLICY_ALWAYS;
        break;
    case XA_THP_NEVER:
        xa_pages_policy = XA_THP_POLICY_NEVER;
        break;
    default:
        /* Under "madvise" and "never" nothing of ours gets huge pages
         * unless asked, as with glibc; under "always" only dense chunks. */
        thp_from_system = true;
        xa_pages_policy = system_thp_always() ? XA_THP_POLICY_DENSE : XA_THP_POLICY_NEVER;
        break;
    }
    xa_pages_thp = xa_pages_policy == XA_THP_POLICY_ALWAYS;
}

const char *xa_pages_thp_name(void)
{
    if (thp_from_system)
        return xa_pages_policy == XA_THP_POLICY_DENSE ? "default (system: always; dense chunks only)"
                                                      : "default (system: not always)";
    return xa_pages_thp ? "always" : "never";
}

bool xa_pages_prepare(void *p, size_t size, int node, bool chunk)
{
    /* Advice goes on before first touch: huge pages are chosen at fault
     * time. NEVER and DENSE advise NOHUGEPAGE so that a system set to
     * "always" backs nothing of ours with huge pages unless we promote it.
     * A huge block under DENSE is the program's own dense request: it
     * follows the system, as glibc's mappings do. NEVER taken from a
     * system set to "madvise" or "never" needs no advice (nothing
     * unadvised gets huge pages there), and each advice rewrites the
     * mapping's flags under the process's mmap lock, which holds up every
     * page fault of the other threads meanwhile (thread churn, 200
     * threads of 4 MiB: 11% of its time). An explicit thp:never still
     * advises, against an administrator who switches the system to
     * "always" later. */
    bool huge = xa_pages_policy == XA_THP_POLICY_ALWAYS;
    if (chunk || xa_pages_policy != XA_THP_POLICY_DENSE) {
        if (!(thp_from_system && xa_pages_policy == XA_THP_POLICY_NEVER))
            xa_os_advise_hugepage(p, size, huge);
    } else {
        huge = true;
    }
    xa_numa_place(p, size, node);
    xa_os_name_range(p, size, "xalloc");
    return huge;
}

void xa_pages_promote(void *chunk)
{
    /* HUGEPAGE lets khugepaged merge the chunk; COLLAPSE does it now where
     * the kernel can (6.1+), so the latency benefit comes at once. */
    xa_os_advise_hugepage(chunk, XA_CHUNK_SIZE, true);
    xa_os_collapse_hugepage(chunk, XA_CHUNK_SIZE);
}

void xa_pages_demote(void *chunk)
{
    xa_os_advise_hugepage(chunk, XA_CHUNK_SIZE, false);
}

void xa_pages_sparse(void *p, size_t size)
{
    xa_os_advise_hugepage(p, size, false);
}

bool xa_pages_purge(void *p, size_t size)
{
    if (xa_opt.purge == XA_PURGE_FREE) {
        xa_os_purge_free(p, size);
        return false;
    }
    return xa_os_purge_dontneed(p, size) == 0;
}
