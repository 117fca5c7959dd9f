/* prof_unwind.c: backtraces through libunwind and symbol names through
 * the dynamic loader (profiling build only). The only file that includes
 * libunwind.h or dlfcn.h. See prof_unwind.h.
 *
 * unw_backtrace (local-only) walks the calling thread's own stack; on its
 * first use libunwind may allocate and it asks the loader for unwind
 * tables (dl_iterate_phdr, the loader's lock). Callers therefore hold no
 * lock of ours and have set the guard that serves their re-entrant
 * allocations unsampled. */
#define _GNU_SOURCE
#define UNW_LOCAL_ONLY
#include "prof_unwind.h"

#include <dlfcn.h>
#include <elf.h>
#include <libunwind.h>
#include <link.h>

#include "prof.h"
#include "util.h"

/* Our own frames (sampling slow path, malloc entry point) are dropped;
 * a few more are fetched so that the depth limit applies to the caller's. */
#define OWN_FRAMES_MAX 8

static uintptr_t text_lo, text_hi;

void xa_prof_unwind_boot(uintptr_t lo, uintptr_t hi)
{
    text_lo = lo;
    text_hi = hi;
}

unsigned xa_prof_backtrace(uintptr_t *pcs, unsigned max)
{
    void *buf[XA_PROF_MAX_DEPTH + OWN_FRAMES_MAX];
    if (max > XA_PROF_MAX_DEPTH)
        max = XA_PROF_MAX_DEPTH;
    int n = unw_backtrace(buf, (int)(max + OWN_FRAMES_MAX));
    if (n <= 0)
        return 0;
    int skip = 0;
    while (skip < n && (uintptr_t)buf[skip] >= text_lo && (uintptr_t)buf[skip] < text_hi)
        skip++;
    /* A frame of this library further out means the allocation was made
     * by libc on behalf of the allocator itself (pthread_create of its
     * background thread allocating TLS): the stack stops there, so the
     * memory is shown under the libc function and not charged to whatever
     * the program was allocating at the time. */
    unsigned depth = 0;
    for (int i = skip; i < n && depth < max; i++) {
        if ((uintptr_t)buf[i] >= text_lo && (uintptr_t)buf[i] < text_hi)
            break;
        pcs[depth++] = (uintptr_t)buf[i];
    }
    return depth;
}

static const char *base_name(const char *path)
{
    const char *b = path;
    for (const char *p = path; *p; p++)
        if (*p == '/')
            b = p + 1;
    return b;
}

void xa_prof_symbolize(uintptr_t pc, char *buf, size_t cap)
{
    Dl_info info;
    const ElfW(Sym) *sym = NULL;
    /* pc is a return address: the call is the byte before it. */
    uintptr_t at = pc ? pc - 1 : pc;
    if (!dladdr1((void *)at, &info, (void **)&sym, RTLD_DL_SYMENT)) {
        xa_snprintf(buf, cap, "0x%lx", (unsigned long)pc);
        return;
    }
    /* dladdr names the nearest exported symbol below the address; trust it
     * only when the address lies inside that symbol. */
    if (info.dli_sname && info.dli_saddr && sym &&
        at - (uintptr_t)info.dli_saddr < (sym->st_size ? sym->st_size : 1)) {
        xa_snprintf(buf, cap, "%s", info.dli_sname);
        return;
    }
    const char *obj = info.dli_fname && info.dli_fname[0] ? base_name(info.dli_fname) : "?";
    xa_snprintf(buf, cap, "%s+0x%lx", obj, (unsigned long)(pc - (uintptr_t)info.dli_fbase));
}
