/* prof_unwind.c: backtraces through libunwind and symbol names through
 * the dynamic loader (profiling build only). The only file that includes
 * libunwind.h or dlfcn.h. See prof_unwind.h.
 *
 * Both walks below are local-only libunwind and read the calling thread's
 * own stack; libunwind may allocate and it asks the loader for unwind
 * tables (dl_iterate_phdr, the loader's lock). Callers therefore hold no
 * lock of ours and have set the guard that serves their re-entrant
 * allocations unsampled.
 *
 * Two walks, because the fast one has a fixed price per thread:
 * unw_backtrace keeps a per-thread cache of frame layouts, 256 KiB that
 * libunwind maps and fills on a thread's first call (0.76 ms on the 2-vCPU
 * guest, where a page fault costs 12 us) and unmaps at its exit; after
 * that a walk costs about 50 ns. The step-by-step walk (unw_step) needs no
 * such cache but costs microseconds a walk (libunwind masks signals around
 * each lookup). A thread that samples a few times (short-lived workers,
 * small processes) would pay more for the cache than for its walks, and
 * keep 256 KiB for nothing. So each thread starts with the step-by-step
 * walk and moves to unw_backtrace for good once its walks have cost as
 * much as the cache does: the first move in the process measures that
 * price (its first unw_backtrace, minus a walk), later threads compare
 * with it. A thread pays at most about twice the cheaper of the two
 * choices, whichever its number of samples turns out to be. */
#define _GNU_SOURCE
#define UNW_LOCAL_ONLY
#include "prof_unwind.h"

#include <dlfcn.h>
#include <elf.h>
#include <libunwind.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>

#include "os.h"
#include "prof.h"
#include "util.h"

static uintptr_t text_lo, text_hi;

void xa_prof_unwind_boot(uintptr_t lo, uintptr_t hi)
{
    text_lo = lo;
    text_hi = hi;
}

/* The price of unw_backtrace's per-thread cache, in ns: measured by the
 * first thread that moves to it; until then, a guess that favours the
 * step-by-step walk on a machine with cheap page faults (1 ms). */
static uint64_t cache_cost_ns = 1000000;
static bool cache_cost_measured;
/* This thread's walks so far: the step-by-step walks' cost in ns of the
 * thread's CPU time (wall time would count the times it was preempted in
 * a walk, which a busy machine makes frequent), and whether it uses
 * unw_backtrace now. */
static __thread uint64_t slow_spent_ns __attribute__((tls_model("initial-exec")));
static __thread bool use_cache __attribute__((tls_model("initial-exec")));

/* The step-by-step walk: return addresses from this frame outwards, as
 * unw_backtrace gives them. Out of line, so that its own frame is one of
 * this library's (dropped by the caller like the others). */
static XA_NOINLINE int step_backtrace(void **buf, int max)
{
    unw_context_t uc;
    unw_cursor_t cur;
    if (unw_getcontext(&uc) != 0 || unw_init_local(&cur, &uc) != 0)
        return 0;
    int n = 0;
    do {
        unw_word_t ip;
        if (unw_get_reg(&cur, UNW_REG_IP, &ip) != 0 || ip == 0)
            break;
        buf[n++] = (void *)ip;
    } while (n < max && unw_step(&cur) > 0);
    return n;
}

static int walk(void **buf, int max)
{
    if (xa_likely(use_cache))
        return unw_backtrace(buf, max);
    uint64_t t0 = xa_os_thread_cpu_ns();
    int n = step_backtrace(buf, max);
    uint64_t t1 = xa_os_thread_cpu_ns();
    slow_spent_ns += t1 - t0;
    uint64_t price = __atomic_load_n(&cache_cost_ns, __ATOMIC_RELAXED);
    if (slow_spent_ns >= price) {
        use_cache = true;
        /* The first move in the process measures the cache's price: one
         * unw_backtrace that builds it, less the walk just made (racing
         * first moves each store a measurement; any of them will do). */
        if (!__atomic_load_n(&cache_cost_measured, __ATOMIC_RELAXED)) {
            void *scratch[XA_PROF_RAW_MAX];
            uint64_t t2 = xa_os_thread_cpu_ns();
            (void)unw_backtrace(scratch, max);
            uint64_t built = xa_os_thread_cpu_ns() - t2;
            uint64_t walk_ns = t1 - t0;
            /* (At least one walk's worth: a cache the program had built
             * itself, calling unw_backtrace, measures as nearly free.) */
            __atomic_store_n(&cache_cost_ns, built > 2 * walk_ns ? built - walk_ns : walk_ns,
                             __ATOMIC_RELAXED);
            __atomic_store_n(&cache_cost_measured, true, __ATOMIC_RELAXED);
        }
    }
    return n;
}

unsigned xa_prof_backtrace_raw(uintptr_t *out, unsigned max)
{
    void *buf[XA_PROF_RAW_MAX];
    if (max > XA_PROF_RAW_MAX)
        max = XA_PROF_RAW_MAX;
    int n = walk(buf, (int)max);
    for (int i = 0; i < n; i++)
        out[i] = (uintptr_t)buf[i];
    return n > 0 ? (unsigned)n : 0;
}

static bool in_lib(uintptr_t pc)
{
    return pc >= text_lo && pc < text_hi;
}

unsigned xa_prof_backtrace_filter(const uintptr_t *raw, unsigned n, uintptr_t *pcs, unsigned max,
                                  unsigned *used)
{
    if (max > XA_PROF_MAX_DEPTH)
        max = XA_PROF_MAX_DEPTH;
    unsigned i = 0;
    while (i < n && in_lib(raw[i]))
        i++;
    /* A frame of this library further out means the allocation was made
     * by libc on behalf of the allocator itself (pthread_create of its
     * background thread allocating TLS): the stack stops there, so the
     * memory is shown under the libc function and not charged to whatever
     * the program was allocating at the time. */
    unsigned depth = 0;
    for (; i < n && depth < max; i++) {
        if (in_lib(raw[i])) {
            i++; /* (that frame decided where the stack ends) */
            break;
        }
        pcs[depth++] = raw[i];
    }
    *used = i;
    return depth;
}

/* ---- where a thread's stack ends (the stack cache) ----
 * The top of the stack holding anchor, found without a call that could
 * take a lock or allocate (pthread_getattr_np does both, and a program
 * inside it may be the one allocating): glibc puts a thread's descriptor
 * (pthread_self()) at the top of the thread's stack block, above its TLS,
 * so a frame of the thread's own stack lies below it and everything in
 * between is mapped; the main thread's stack ends at __libc_stack_end
 * (argv and the environment lie above, in the same mapping). A frame
 * elsewhere (a signal stack, a coroutine's) is more than the window away
 * from both but for a stack placed right below a thread stack smaller
 * than the window; with a chain that crosses stacks (a signal frame) the
 * scan could then read past that stack, hence signal frames of glibc's
 * trampoline are refused as well (xa_prof_is_sigreturn). Anything else:
 * 0, no caching. */
#define THREAD_WINDOW ((uintptr_t)1 << 20)
#define MAIN_WINDOW ((uintptr_t)8 << 20)

extern void *__libc_stack_end __attribute__((weak));

uintptr_t xa_prof_stack_top(uintptr_t anchor)
{
#if defined(__x86_64__) && defined(__GLIBC__)
    uintptr_t self = (uintptr_t)pthread_self() & ~(uintptr_t)7;
    if (anchor < self && self - anchor <= THREAD_WINDOW)
        return self;
    uintptr_t end = &__libc_stack_end ? (uintptr_t)__libc_stack_end & ~(uintptr_t)7 : 0;
    if (anchor < end && end - anchor <= MAIN_WINDOW)
        return end;
#else
    (void)anchor;
#endif
    return 0;
}

/* glibc's signal return trampoline (__restore_rt), the return address of
 * every handler it installs: mov $15, %rax; syscall. Read only inside
 * libc's text mapping (found at boot), where reading cannot fault. */
static uintptr_t libc_lo, libc_hi;

bool xa_prof_is_sigreturn(uintptr_t pc)
{
#if defined(__x86_64__)
    static const unsigned char code[9] = {0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05};
    if (pc < libc_lo || pc >= libc_hi || libc_hi - pc < sizeof code)
        return false;
    return memcmp((const void *)pc, code, sizeof code) == 0;
#else
    (void)pc;
    return false;
#endif
}

uintptr_t xa_prof_unwind_libc_probe(void)
{
    return (uintptr_t)&sigaction;
}

void xa_prof_unwind_boot_libc(uintptr_t lo, uintptr_t hi)
{
    libc_lo = lo;
    libc_hi = hi;
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
