/* pages.c: page policy (see pages.h). Layer: above os, config, numa. */
#include "pages.h"

#include "config.h"
#include "numa.h"
#include "os.h"

bool xa_pages_thp;
static bool thp_from_system;

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
        xa_pages_thp = true;
        break;
    case XA_THP_NEVER:
        xa_pages_thp = false;
        break;
    default:
        thp_from_system = true;
        xa_pages_thp = system_thp_always();
        break;
    }
}

const char *xa_pages_thp_name(void)
{
    if (thp_from_system)
        return xa_pages_thp ? "default (system: always)" : "default (system: not always)";
    return xa_pages_thp ? "always" : "never";
}

void xa_pages_prepare(void *p, size_t size, int node, bool chunk)
{
    /* Advice goes on before first touch: huge pages are chosen at fault
     * time. thp:never advises NOHUGEPAGE so that even a system set to
     * "always" backs nothing of ours with huge pages. */
    xa_os_advise_hugepage(p, size, xa_pages_thp && chunk);
    xa_numa_place(p, size, node);
    xa_os_name_range(p, size, "xalloc");
}

bool xa_pages_purge(void *p, size_t size)
{
    if (xa_opt.purge == XA_PURGE_FREE) {
        xa_os_purge_free(p, size);
        return false;
    }
    return xa_os_purge_dontneed(p, size) == 0;
}
