/* numa.c: NUMA topology and placement policy (see numa.h and numa.md).
 * Layer: beside pages; uses os (os_numa.c, os_file.c), config and util.
 *
 * Where the topology comes from, and why so:
 * - Boot (inside the first malloc, which may come from any constructor,
 *   or from the loader in the middle of loading an object): sysfs
 *   node/online, nodeN/cpulist, nodeN/distance, Mems_allowed_list of
 *   /proc/self/status (the cpuset) and get_mempolicy (numactl --membind,
 *   --interleave, --preferred), all with raw system calls on static
 *   buffers: the files libnuma itself reads.
 * - libnuma (the reference, a declared package dependency) is dlopen'ed by
 *   this file's constructor, only on a machine with more than one node and
 *   numa not off. Not linked: DT_NEEDED would run libnuma's constructor in
 *   every process (about 50 system calls, two set_mempolicy probes, and a
 *   forced allocator start in processes that never allocate), so a
 *   one-node machine would not behave as before. Not from malloc: dlopen
 *   there can re-enter the loader mid-load. A constructor is where the
 *   loader allows dlopen, and dlopen returns only after libnuma's own
 *   constructor (which calls malloc) has finished. It confirms the
 *   topology: numa_available() (placement off when NUMA is unavailable),
 *   numa_get_mems_allowed() (never bind outside it), numa_distance().
 *   Slots never change once arenas may exist; a slot libnuma does not
 *   allow is then bound to its nearest allowed node.
 * Placement itself is a raw mbind (os_numa.c): libnuma's placement calls
 * allocate bitmasks with malloc, and placement runs under arena locks. */
#define _GNU_SOURCE
#include "numa.h"

#include <dlfcn.h>
#include <errno.h>

#include "config.h"
#include "os.h"
#include "os_numa.h"
#include "util.h"

/* The few libnuma (libnuma.so.1, ABI stable since 2.0) functions used,
 * found with dlsym (see "libnuma, from the constructor" below). */
struct bitmask {
    unsigned long size;
    unsigned long *maskp;
};
typedef struct libnuma_fns {
    int (*available)(void);
    struct bitmask *(*get_mems_allowed)(void);
    void (*bitmask_free)(struct bitmask *bmp);
    int (*bitmask_isbitset)(const struct bitmask *bmp, unsigned int n);
    int (*distance)(int node1, int node2);
} libnuma_fns;

#define BITS_PER_LONG (8 * (unsigned)sizeof(unsigned long))
#define NODE_LONGS XA_NUMA_LONGS(XA_NUMA_MAX_NODE_ID)
#define CPU_LONGS XA_NUMA_LONGS(XA_NUMA_MAX_CPUS)
#define LOCAL_DISTANCE 10
#define REMOTE_DISTANCE 20

int xa_numa_nodes = 1;
bool xa_numa_active;

static xa_numa_topo topo;
static int numa_mode;
/* slot -> node id that chunks of the slot are bound to; libnuma may move a
 * slot to its nearest allowed node after boot. */
static int16_t bind_node[XA_NUMA_MAX_NODES];
static int16_t allowed_ids[XA_NUMA_MAX_NODES]; /* allowed online node ids */
static int nallowed_ids;
static unsigned interleave_next; /* chunk rotation under numa:interleave */
static bool cpu_cheap; /* rseq: the current CPU is read without a syscall */
static xa_numa_counters counters[XA_NUMA_MAX_NODES];
static bool booted;
/* 0 not asked, 1 available, 2 NUMA unavailable, 3 not needed, 4 absent */
static int libnuma_state;

/* What libnuma said, kept until boot can use it (or applied at once when
 * boot already ran). Written by the constructor only. */
static struct {
    bool unavailable;
    bool have_allowed;
    unsigned long allowed[NODE_LONGS];
    bool have_dist;
    int16_t dist_nodes;
    uint8_t dist[XA_NUMA_MAX_NODES][XA_NUMA_MAX_NODES]; /* by online index */
} lview;

static inline bool mask_test(const unsigned long *m, unsigned bit)
{
    return (m[bit / BITS_PER_LONG] >> (bit % BITS_PER_LONG)) & 1;
}

static inline void mask_set(unsigned long *m, unsigned bit)
{
    m[bit / BITS_PER_LONG] |= 1UL << (bit % BITS_PER_LONG);
}

/* ---- parsing (no allocation, no stdio) ---- */

int xa_numa_parse_list(const char *s, unsigned long *mask, unsigned nbits)
{
    int count = 0;
    while (*s == ' ' || *s == '\t')
        s++;
    if (*s == '\n' || *s == 0)
        return 0; /* an empty list: a node without CPUs */
    for (;;) {
        if (*s < '0' || *s > '9')
            return -1;
        unsigned a = 0, b;
        while (*s >= '0' && *s <= '9' && a < 1000000)
            a = a * 10 + (unsigned)(*s++ - '0');
        b = a;
        if (*s == '-') {
            s++;
            if (*s < '0' || *s > '9')
                return -1;
            b = 0;
            while (*s >= '0' && *s <= '9' && b < 1000000)
                b = b * 10 + (unsigned)(*s++ - '0');
            if (b < a)
                return -1;
        }
        for (unsigned n = a; n <= b && n < nbits; n++) {
            if (!mask_test(mask, n))
                count++;
            mask_set(mask, n);
        }
        if (*s == ',') {
            s++;
            continue;
        }
        return (*s == 0 || *s == '\n' || *s == ' ') ? count : -1;
    }
}

/* Reads a small file into buf (NUL-terminated). Returns its length or -1. */
static ssize_t read_small(const char *path, char *buf, size_t len)
{
    int fd = xa_os_open_read(path);
    if (fd < 0)
        return -1;
    ssize_t n = xa_os_read(fd, buf, len - 1);
    xa_os_close(fd);
    if (n < 0)
        return -1;
    buf[n] = 0;
    return n;
}

static void node_path(char *buf, size_t len, const char *sysroot, int node, const char *leaf)
{
    if (node < 0)
        xa_snprintf(buf, len, "%s/sys/devices/system/node/%s", sysroot, leaf);
    else
        xa_snprintf(buf, len, "%s/sys/devices/system/node/node%d/%s", sysroot, node, leaf);
}

/* ---- the topology ---- */

void xa_numa_topo_reset(xa_numa_topo *t)
{
    __builtin_memset(t, 0, offsetof(xa_numa_topo, cpu_online)); /* ncpus 0 */
    t->nonline = 1;
    t->online_node[0] = 0;
    t->dist[0][0] = LOCAL_DISTANCE;
    for (unsigned i = 0; i < NODE_LONGS; i++)
        t->allowed[i] = ~0UL;
    t->nallowed = 1;
    t->nslots = 1;
}

/* Records that cpu belongs to online node index i, growing the CPU
 * entries in use up to it. */
static void set_cpu_online(xa_numa_topo *t, unsigned cpu, int i)
{
    for (; (unsigned)t->ncpus <= cpu; t->ncpus++) {
        t->cpu_online[t->ncpus] = -1;
        t->cpu_slot[t->ncpus] = -1;
    }
    t->cpu_online[cpu] = (int16_t)i;
}

int xa_numa_topo_read_online(xa_numa_topo *t, const char *sysroot)
{
    char path[256], buf[512];
    unsigned long mask[NODE_LONGS] = {0};
    node_path(path, sizeof path, sysroot, -1, "online");
    if (read_small(path, buf, sizeof buf) <= 0)
        return ENOENT;
    if (xa_numa_parse_list(buf, mask, XA_NUMA_MAX_NODE_ID) <= 0)
        return EINVAL;
    int n = 0;
    for (unsigned id = 0; id < XA_NUMA_MAX_NODE_ID && n < XA_NUMA_MAX_NODES; id++)
        if (mask_test(mask, id))
            t->online_node[n++] = (int16_t)id;
    t->nonline = n;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            t->dist[i][j] = i == j ? LOCAL_DISTANCE : REMOTE_DISTANCE;
    return 0;
}

int xa_numa_topo_read(xa_numa_topo *t, const char *sysroot)
{
    int err = xa_numa_topo_read_online(t, sysroot);
    if (err)
        return err;
    char path[256], buf[4096];
    for (int i = 0; i < t->nonline; i++) {
        int id = t->online_node[i];
        static unsigned long cpus[CPU_LONGS];
        __builtin_memset(cpus, 0, sizeof cpus);
        node_path(path, sizeof path, sysroot, id, "cpulist");
        if (read_small(path, buf, sizeof buf) < 0) {
            t->absent[i] = true; /* listed online, no directory: keep going */
            continue;
        }
        if (xa_numa_parse_list(buf, cpus, XA_NUMA_MAX_CPUS) > 0) {
            t->has_cpus[i] = true;
            for (unsigned c = 0; c < XA_NUMA_MAX_CPUS; c++)
                if (mask_test(cpus, c))
                    set_cpu_online(t, c, i);
        }
        /* "10 21 21 21": one distance per node id in the online list. */
        node_path(path, sizeof path, sysroot, id, "distance");
        if (read_small(path, buf, sizeof buf) <= 0)
            continue;
        uint8_t row[XA_NUMA_MAX_NODES];
        int k = 0;
        const char *s = buf;
        while (*s && k < XA_NUMA_MAX_NODES) {
            while (*s == ' ')
                s++;
            if (*s < '0' || *s > '9')
                break;
            unsigned v = 0;
            while (*s >= '0' && *s <= '9' && v < 1000)
                v = v * 10 + (unsigned)(*s++ - '0');
            row[k++] = (uint8_t)(v > 255 ? 255 : v);
        }
        if (k == t->nonline) /* a row of another length is not trusted */
            for (int j = 0; j < k; j++)
                t->dist[i][j] = row[j];
    }
    return 0;
}

static int count_allowed(const xa_numa_topo *t)
{
    int n = 0;
    for (int i = 0; i < t->nonline; i++)
        if (mask_test(t->allowed, (unsigned)t->online_node[i]))
            n++;
    return n;
}

int xa_numa_topo_restrict(xa_numa_topo *t, const unsigned long *mask, unsigned nbits)
{
    unsigned long next[NODE_LONGS];
    for (unsigned i = 0; i < NODE_LONGS; i++)
        next[i] = t->allowed[i] & (i * BITS_PER_LONG < nbits ? mask[i] : 0);
    if (nbits < XA_NUMA_MAX_NODE_ID && nbits % BITS_PER_LONG)
        next[nbits / BITS_PER_LONG] &= (1UL << (nbits % BITS_PER_LONG)) - 1;
    unsigned long saved[NODE_LONGS];
    __builtin_memcpy(saved, t->allowed, sizeof saved);
    __builtin_memcpy(t->allowed, next, sizeof next);
    if (count_allowed(t) == 0) {
        __builtin_memcpy(t->allowed, saved, sizeof saved);
        return EINVAL;
    }
    t->nallowed = count_allowed(t);
    return 0;
}

int xa_numa_topo_restrict_list(xa_numa_topo *t, const char *list)
{
    unsigned long mask[NODE_LONGS] = {0};
    if (xa_numa_parse_list(list, mask, XA_NUMA_MAX_NODE_ID) <= 0)
        return EINVAL;
    return xa_numa_topo_restrict(t, mask, XA_NUMA_MAX_NODE_ID);
}

int xa_numa_topo_restrict_status(xa_numa_topo *t, const char *status_path)
{
    char buf[8192];
    if (read_small(status_path, buf, sizeof buf) <= 0)
        return ENOENT;
    static const char key[] = "Mems_allowed_list:";
    for (const char *s = buf; *s;) {
        if (xa_strncmp(s, key, sizeof key - 1) == 0)
            return xa_numa_topo_restrict_list(t, s + sizeof key - 1);
        while (*s && *s != '\n')
            s++;
        if (*s)
            s++;
    }
    return ENOENT;
}

/* Nearest allowed online index to online index i (itself when allowed);
 * ties go to the lower node id. */
static int nearest_allowed(const xa_numa_topo *t, int i)
{
    int best = -1;
    for (int j = 0; j < t->nonline; j++) {
        if (!mask_test(t->allowed, (unsigned)t->online_node[j]))
            continue;
        if (best < 0 || t->dist[i][j] < t->dist[i][best] || (j == i && t->dist[i][j] <= t->dist[i][best]))
            best = j;
    }
    return best;
}

void xa_numa_topo_finish(xa_numa_topo *t)
{
    int near[XA_NUMA_MAX_NODES];
    bool is_slot[XA_NUMA_MAX_NODES] = {false};
    bool any_cpu = false;
    t->nallowed = count_allowed(t);
    for (int i = 0; i < t->nonline; i++) {
        near[i] = nearest_allowed(t, i);
        if (t->has_cpus[i] && near[i] >= 0) {
            is_slot[near[i]] = true;
            any_cpu = true;
        }
    }
    /* Without CPU information every allowed node gets arenas. */
    if (!any_cpu)
        for (int i = 0; i < t->nonline; i++)
            if (near[i] == i)
                is_slot[i] = true;
    t->nslots = 0;
    for (int i = 0; i < t->nonline; i++) {
        t->online_slot[i] = -1;
        if (is_slot[i])
            t->slot_online[t->nslots++] = (int16_t)i;
    }
    if (t->nslots == 0) { /* cannot happen with a non-empty allowed set */
        t->nslots = 1;
        t->slot_online[0] = 0;
    }
    for (int i = 0; i < t->nonline; i++) {
        int best = 0;
        for (int s = 1; s < t->nslots; s++)
            if (t->dist[i][t->slot_online[s]] < t->dist[i][t->slot_online[best]])
                best = s;
        /* An allowed node that is itself a slot is its own slot. */
        for (int s = 0; s < t->nslots; s++)
            if (t->slot_online[s] == (near[i] >= 0 ? near[i] : i) &&
                t->dist[i][t->slot_online[s]] <= t->dist[i][t->slot_online[best]])
                best = s;
        t->online_slot[i] = (int16_t)best;
    }
    for (int c = 0; c < t->ncpus; c++)
        t->cpu_slot[c] = t->cpu_online[c] < 0 ? -1 : t->online_slot[t->cpu_online[c]];
}

void xa_numa_install(const xa_numa_topo *t, int mode)
{
    if (t != &topo) {
        __builtin_memcpy(&topo, t, offsetof(xa_numa_topo, cpu_online));
        __builtin_memcpy(topo.cpu_online, t->cpu_online, (size_t)t->ncpus * sizeof t->cpu_online[0]);
        __builtin_memcpy(topo.cpu_slot, t->cpu_slot, (size_t)t->ncpus * sizeof t->cpu_slot[0]);
    }
    numa_mode = mode;
    for (int s = 0; s < topo.nslots; s++)
        bind_node[s] = topo.online_node[topo.slot_online[s]];
    __builtin_memset(counters, 0, sizeof counters);
    nallowed_ids = 0;
    for (int i = 0; i < topo.nonline; i++)
        if (mask_test(topo.allowed, (unsigned)topo.online_node[i]))
            allowed_ids[nallowed_ids++] = topo.online_node[i];
    if (mode == XA_NUMA_OFF) {
        xa_numa_nodes = 1;
        xa_numa_active = false;
    } else if (mode == XA_NUMA_INTERLEAVE) {
        xa_numa_nodes = 1; /* one set of arenas; chunks go everywhere */
        xa_numa_active = topo.nallowed > 1;
    } else {
        xa_numa_nodes = topo.nslots;
        xa_numa_active = topo.nslots > 1;
    }
    cpu_cheap = xa_numa_active && xa_os_cpu_now_is_cheap();
}

const xa_numa_topo *xa_numa_topo_current(void)
{
    return &topo;
}

/* ---- boot ---- */

static void read_online_once(void);
static void libnuma_apply(bool slots_fixed);
static void report_if_done(void);

void xa_numa_boot(void)
{
    /* The one read a one-node machine has always paid; nothing more there
     * (the constructor may have done it already). */
    read_online_once();
    booted = true;
    if (topo.nonline <= 1 || xa_opt.numa == XA_NUMA_OFF) {
        xa_numa_install(&topo, xa_opt.numa);
        report_if_done();
        return;
    }
    xa_numa_topo_read(&topo, "");
    /* cpuset.mems of our cgroup */
    xa_numa_topo_restrict_status(&topo, "/proc/self/status");
    /* numactl --membind/--interleave/--preferred set the task policy: its
     * nodes are the operator's choice, so arenas live only there. */
    static unsigned long pol[NODE_LONGS];
    int mode = 0;
    if (xa_os_get_mempolicy(&mode, pol, XA_NUMA_MAX_NODE_ID) == 0) {
        mode &= 0xff; /* without its flags (static/relative nodes, balancing) */
        if (mode == XA_MPOL_BIND || mode == XA_MPOL_INTERLEAVE || mode == XA_MPOL_PREFERRED ||
            mode == XA_MPOL_PREFERRED_MANY || mode == XA_MPOL_WEIGHTED_INTERLEAVE)
            xa_numa_topo_restrict(&topo, pol, XA_NUMA_MAX_NODE_ID);
    }
    libnuma_apply(false); /* when the constructor already asked libnuma */
    xa_numa_topo_finish(&topo);
    xa_numa_install(&topo, xa_opt.numa);
    if (lview.unavailable)
        libnuma_apply(true);
    /* Absent node directories: say it once, carry on without them. */
    for (int i = 0; i < topo.nonline; i++)
        if (topo.absent[i])
            xa_message("numa: node %d is online but has no sysfs directory; "
                       "treated as a node without CPUs",
                       topo.online_node[i]);
    report_if_done();
}

/* ---- libnuma, from the constructor ---- */

/* Applies lview to topo. Before finish (from boot): the allowed set shapes
 * the slots. After (from the constructor, arenas may exist): slots stay,
 * a slot libnuma does not allow is bound to its nearest allowed node. */
static void libnuma_apply(bool slots_fixed)
{
    if (libnuma_state != 1 && libnuma_state != 2)
        return;
    if (lview.unavailable) {
        xa_numa_active = false;
        xa_numa_nodes = 1;
        return;
    }
    if (lview.have_dist && lview.dist_nodes == topo.nonline)
        for (int i = 0; i < topo.nonline; i++)
            for (int j = 0; j < topo.nonline; j++)
                topo.dist[i][j] = lview.dist[i][j];
    if (lview.have_allowed && xa_numa_topo_restrict(&topo, lview.allowed, XA_NUMA_MAX_NODE_ID) == 0 &&
        slots_fixed) {
        for (int s = 0; s < topo.nslots; s++) {
            int i = topo.slot_online[s];
            if (!mask_test(topo.allowed, (unsigned)topo.online_node[i])) {
                int j = nearest_allowed(&topo, i);
                bind_node[s] = (int16_t)(j >= 0 ? topo.online_node[j] : -1);
            }
        }
    }
}

static void libnuma_ask(void)
{
    /* The loader allows dlopen from a constructor (not from inside malloc,
     * where it may be mid-way through loading another object). dlopen
     * runs libnuma's constructor to the end before it returns, even when
     * the application links libnuma and its turn had not come yet. */
    void *h = dlopen("libnuma.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        libnuma_state = 4;
        return;
    }
    libnuma_fns f = {
        (int (*)(void))dlsym(h, "numa_available"),
        (struct bitmask * (*)(void)) dlsym(h, "numa_get_mems_allowed"),
        (void (*)(struct bitmask *))dlsym(h, "numa_bitmask_free"),
        (int (*)(const struct bitmask *, unsigned int))dlsym(h, "numa_bitmask_isbitset"),
        (int (*)(int, int))dlsym(h, "numa_distance"),
    };
    if (!f.available || !f.get_mems_allowed || !f.bitmask_free || !f.bitmask_isbitset ||
        !f.distance) {
        libnuma_state = 4;
        return;
    }
    if (f.available() < 0) {
        lview.unavailable = true;
        libnuma_state = 2;
        return;
    }
    struct bitmask *m = f.get_mems_allowed();
    if (m) {
        for (unsigned id = 0; id < XA_NUMA_MAX_NODE_ID && id < m->size; id++)
            if (f.bitmask_isbitset(m, id))
                mask_set(lview.allowed, id);
        f.bitmask_free(m);
        lview.have_allowed = true;
    }
    bool ok = true;
    for (int i = 0; i < topo.nonline && ok; i++)
        for (int j = 0; j < topo.nonline; j++) {
            int d = f.distance(topo.online_node[i], topo.online_node[j]);
            if (d <= 0 || d > 255) {
                ok = false;
                break;
            }
            lview.dist[i][j] = (uint8_t)d;
        }
    lview.have_dist = ok;
    lview.dist_nodes = (int16_t)topo.nonline;
    libnuma_state = 1;
}

/* Online nodes read once, by whichever of the constructor and boot comes
 * first: a one-node machine pays the same single read as before. */
static int online_state; /* 0 not read, 1 read */

static void read_online_once(void)
{
    if (online_state)
        return;
    online_state = 1;
    xa_numa_topo_reset(&topo);
    xa_numa_topo_read_online(&topo, "");
}

/* verbose:true prints the NUMA set-up once both halves have run (boot and
 * the constructor, in either order), next to the configuration dump; on a
 * machine with more than one node only (one node has nothing to say). */
static int report_halves;

static void report_if_done(void)
{
    if (__atomic_add_fetch(&report_halves, 1, __ATOMIC_ACQ_REL) != 2 || !xa_opt.verbose ||
        topo.nonline <= 1)
        return;
    char buf[512];
    xa_numa_describe(buf, sizeof buf);
    xa_message("numa: %s", buf);
}

static void ctor_body(void)
{
    if (!booted)
        read_online_once();
    if (topo.nonline <= 1) {
        libnuma_state = 3; /* one node: no libnuma, no system call */
        return;
    }
    /* numa:off needs no libnuma; the configuration is parsed once,
     * whoever asks first. */
    xa_config_init();
    if (xa_opt.numa == XA_NUMA_OFF) {
        libnuma_state = 3;
        return;
    }
    libnuma_ask();
    if (booted)
        libnuma_apply(true);
}

__attribute__((constructor)) static void numa_ctor(void)
{
    ctor_body();
    report_if_done();
}

/* ---- current node ---- */

int xa_numa_slot_of_cpu(int cpu)
{
    if (cpu < 0 || cpu >= topo.ncpus)
        return -1;
    return topo.cpu_slot[cpu];
}

int xa_numa_current_node(void)
{
    if (!xa_numa_active || xa_numa_nodes <= 1)
        return 0;
    int s = xa_numa_slot_of_cpu(xa_os_cpu_now());
    return s < 0 ? 0 : s;
}

int xa_numa_recheck(xa_numa_thread *t)
{
    if (!xa_numa_active || xa_numa_nodes <= 1)
        return -1;
    if (!cpu_cheap && t->slot != 0 && ++t->ticks < XA_NUMA_RECHECK_EVERY)
        return -1;
    t->ticks = 0;
    int s = xa_numa_slot_of_cpu(xa_os_cpu_now());
    if (s < 0 || s + 1 == t->slot)
        return -1;
    t->slot = s + 1;
    return s;
}

/* ---- arenas ---- */

int xa_numa_arena_slot(unsigned arena)
{
    if (!xa_numa_active || xa_numa_nodes <= 1)
        return -1;
    return (int)(arena % (unsigned)xa_numa_nodes);
}

unsigned xa_numa_arenas_of_slot(int slot, unsigned narenas, unsigned *step)
{
    if (!xa_numa_active || xa_numa_nodes <= 1 || slot < 0 || slot >= xa_numa_nodes ||
        narenas == 0) {
        *step = 1;
        return 0;
    }
    *step = (unsigned)xa_numa_nodes;
    if ((unsigned)slot < narenas)
        return (unsigned)slot;
    /* Fewer arenas than slots: the nearest slot that has an arena. */
    int order[XA_NUMA_MAX_NODES];
    int n = xa_numa_slots_by_distance(slot, order, XA_NUMA_MAX_NODES);
    for (int k = 0; k < n; k++)
        if ((unsigned)order[k] < narenas)
            return (unsigned)order[k];
    return 0;
}

/* ---- placement ---- */

int xa_numa_place_chunk(void *p, size_t size, int slot)
{
    if (!xa_numa_active)
        return 0;
    int err;
    int cs = slot >= 0 && slot < topo.nslots ? slot : 0;
    if (numa_mode == XA_NUMA_INTERLEAVE && size <= XA_CHUNK_SIZE && nallowed_ids > 0) {
        /* Whole chunks in turn over the allowed nodes: a chunk is one huge
         * page, which the kernel places whole anyway, and the turn makes
         * the spread even whatever the chunks' addresses are. */
        unsigned k = __atomic_fetch_add(&interleave_next, 1, __ATOMIC_RELAXED);
        unsigned long mask[NODE_LONGS] = {0};
        mask_set(mask, (unsigned)allowed_ids[k % (unsigned)nallowed_ids]);
        err = xa_os_mbind(p, size, XA_MPOL_PREFERRED, mask, XA_NUMA_MAX_NODE_ID + 1);
    } else if (numa_mode == XA_NUMA_INTERLEAVE) {
        /* A huge block: its pages spread over the allowed nodes. */
        err = xa_os_mbind(p, size, XA_MPOL_INTERLEAVE, topo.allowed, XA_NUMA_MAX_NODE_ID + 1);
    } else {
        if (slot < 0 || slot >= topo.nslots || bind_node[slot] < 0)
            return EINVAL;
        unsigned long mask[NODE_LONGS] = {0};
        mask_set(mask, (unsigned)bind_node[slot]);
        /* PREFERRED, not BIND: when the node is full the memory comes from
         * another node instead of the OOM killer. */
        err = xa_os_mbind(p, size, XA_MPOL_PREFERRED, mask, XA_NUMA_MAX_NODE_ID + 1);
    }
    if (err) {
        __atomic_fetch_add(&counters[cs].place_errors, 1, __ATOMIC_RELAXED);
    } else {
        __atomic_fetch_add(&counters[cs].chunks_placed, 1, __ATOMIC_RELAXED);
        __atomic_fetch_add(&counters[cs].bytes_placed, size, __ATOMIC_RELAXED);
    }
    return err;
}

void xa_numa_place(void *p, size_t size, int slot)
{
    if (!xa_numa_active)
        return;
    (void)xa_numa_place_chunk(p, size, slot);
}

/* ---- queries ---- */

int xa_numa_node_of_slot(int slot)
{
    if (slot < 0 || slot >= topo.nslots)
        return -1;
    return topo.online_node[topo.slot_online[slot]];
}

int xa_numa_slot_of_node(int node)
{
    for (int s = 0; s < topo.nslots; s++)
        if (topo.online_node[topo.slot_online[s]] == node)
            return s;
    return -1;
}

int xa_numa_distance(int a, int b)
{
    if (a < 0 || b < 0 || a >= topo.nslots || b >= topo.nslots)
        return -1;
    return topo.dist[topo.slot_online[a]][topo.slot_online[b]];
}

int xa_numa_slots_by_distance(int slot, int *out, int max)
{
    if (slot < 0 || slot >= topo.nslots || max <= 0)
        return 0;
    int n = 0;
    bool used[XA_NUMA_MAX_NODES] = {false};
    while (n < max && n < topo.nslots) {
        int best = -1;
        for (int s = 0; s < topo.nslots; s++) {
            if (used[s])
                continue;
            if (best < 0 || xa_numa_distance(slot, s) < xa_numa_distance(slot, best) ||
                (s == slot && xa_numa_distance(slot, s) <= xa_numa_distance(slot, best)))
                best = s;
        }
        used[best] = true;
        out[n++] = best;
    }
    return n;
}

int xa_numa_online_count(void)
{
    return topo.nonline;
}

int xa_numa_allowed_count(void)
{
    return topo.nallowed;
}

void xa_numa_counters_get(int slot, xa_numa_counters *out)
{
    __builtin_memset(out, 0, sizeof *out);
    if (slot < 0 || slot >= topo.nslots)
        return;
    out->chunks_placed = __atomic_load_n(&counters[slot].chunks_placed, __ATOMIC_RELAXED);
    out->bytes_placed = __atomic_load_n(&counters[slot].bytes_placed, __ATOMIC_RELAXED);
    out->place_errors = __atomic_load_n(&counters[slot].place_errors, __ATOMIC_RELAXED);
    out->pages_checked = __atomic_load_n(&counters[slot].pages_checked, __ATOMIC_RELAXED);
    out->pages_off_node = __atomic_load_n(&counters[slot].pages_off_node, __ATOMIC_RELAXED);
}

int xa_numa_query(const void *p, size_t size, size_t stride, int slot,
                  xa_numa_query_result *out)
{
    __builtin_memset(out, 0, sizeof *out);
    if (stride < 4096 || (stride & (stride - 1)))
        return EINVAL;
    if (slot >= topo.nslots)
        return EINVAL;
    int want = slot >= 0 ? bind_node[slot] : -1;
    uintptr_t a = XA_ALIGN_DOWN((uintptr_t)p, 4096), end = (uintptr_t)p + size;
    enum { BATCH = 64 };
    void *pages[BATCH];
    int status[BATCH];
    while (a < end) {
        unsigned long n = 0;
        for (; n < BATCH && a < end; a += stride)
            pages[n++] = (void *)a;
        int err = xa_os_move_pages_query(n, pages, status);
        if (err)
            return err;
        for (unsigned long k = 0; k < n; k++) {
            if (status[k] < 0)
                continue; /* not resident (-ENOENT) or not ours (-EFAULT) */
            out->present++;
            int s = xa_numa_slot_of_node(status[k]);
            if (s >= 0)
                out->per_slot[s]++;
            if (want >= 0 && status[k] == want)
                out->on_node++;
            else if (want >= 0)
                out->off_node++;
        }
    }
    if (slot >= 0) {
        __atomic_fetch_add(&counters[slot].pages_checked, out->present, __ATOMIC_RELAXED);
        __atomic_fetch_add(&counters[slot].pages_off_node, out->off_node, __ATOMIC_RELAXED);
    }
    return 0;
}

/* ---- reports ---- */

typedef struct sbuf {
    char *buf;
    size_t len, at;
} sbuf;

static void put(sbuf *b, const char *s)
{
    for (; *s; s++, b->at++)
        if (b->at + 1 < b->len)
            b->buf[b->at] = *s;
    if (b->len)
        b->buf[b->at + 1 < b->len ? b->at : b->len - 1] = 0;
}

/* A node id list in the compact sysfs syntax ("0-3", "1,3"). */
static void put_list(sbuf *b, const int *ids, int n)
{
    if (n == 0)
        put(b, "none");
    for (int k = 0; k < n;) {
        int e = k;
        while (e + 1 < n && ids[e + 1] == ids[e] + 1)
            e++;
        char tmp[32];
        if (e > k + 1)
            xa_snprintf(tmp, sizeof tmp, "%s%d-%d", k ? "," : "", ids[k], ids[e]);
        else
            xa_snprintf(tmp, sizeof tmp, "%s%d", k ? "," : "", ids[k]);
        put(b, tmp);
        k = e > k + 1 ? e + 1 : k + 1;
    }
}

size_t xa_numa_describe(char *buf, size_t len)
{
    sbuf b = {buf, len, 0};
    int ids[XA_NUMA_MAX_NODES], n = 0;
    static const char *const names[] = {"on", "off", "interleave"};
    static const char *const lib[] = {"not asked", "available", "says NUMA unavailable",
                                         "not needed", "not found"};
    put(&b, numa_mode >= 0 && numa_mode <= 2 ? names[numa_mode] : "?");
    put(&b, xa_numa_active ? "; arenas on nodes " : " (inactive); arenas on nodes ");
    for (int s = 0; s < xa_numa_nodes; s++)
        ids[n++] = xa_numa_node_of_slot(s);
    put_list(&b, ids, n);
    put(&b, "; allowed ");
    n = 0;
    for (int i = 0; i < topo.nonline; i++)
        if (mask_test(topo.allowed, (unsigned)topo.online_node[i]))
            ids[n++] = topo.online_node[i];
    put_list(&b, ids, n);
    put(&b, "; online ");
    n = 0;
    for (int i = 0; i < topo.nonline; i++)
        ids[n++] = topo.online_node[i];
    put_list(&b, ids, n);
    put(&b, "; libnuma ");
    put(&b, lib[libnuma_state]);
    return b.at;
}
