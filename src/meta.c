/* meta.c: bump allocator for metadata. Layer: above os, below everything
 * that needs metadata. See meta.h. */
#include "meta.h"

#include "lock.h"
#include "os.h"

#define META_REGION ((size_t)1 << 20)

static xa_lock meta_lock = XA_LOCK_INIT(XA_RANK_META);
static char *bump, *bump_end;
static size_t mapped;

void *xa_meta_alloc(size_t size, size_t align)
{
    if (align < 16)
        align = 16;
    size = XA_ALIGN_UP(size, 16);
    void *result = NULL;
    xa_lock_acquire(&meta_lock);
    char *p = (char *)XA_ALIGN_UP((uintptr_t)bump, align);
    if (!bump || p + size > bump_end) {
        size_t region = size + align > META_REGION ? XA_ALIGN_UP(size + align, XA_OS_PAGE)
                                                   : META_REGION;
        char *r = xa_os_map_aligned(region, XA_OS_PAGE);
        if (!r)
            goto out;
        xa_os_advise_hugepage(r, region, false);
        xa_os_name_range(r, region, "xalloc-meta");
        mapped += region;
        bump = r;
        bump_end = r + region;
        p = (char *)XA_ALIGN_UP((uintptr_t)bump, align);
    }
    bump = p + size;
    result = p;
out:
    xa_lock_release(&meta_lock);
    return result;
}

size_t xa_meta_mapped(void)
{
    return __atomic_load_n(&mapped, __ATOMIC_RELAXED);
}

void xa_meta_fork_prepare(void) { xa_lock_acquire(&meta_lock); }
void xa_meta_fork_parent(void) { xa_lock_release(&meta_lock); }
void xa_meta_fork_child(void) { xa_lock_reset(&meta_lock); }
