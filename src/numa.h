/* numa.h: NUMA topology and placement policy. Layer: beside pages; uses os
 * (os_numa.c, os_file.c), config and util only; libnuma is dlopen'ed by
 * numa.c's constructor alone, never from inside malloc (see numa.c).
 *
 * Words used here (and in src/numa.md, which says how arena.c and heap.c
 * wire this in):
 *   node id  the kernel's node number; may have holes (0, 2, 5).
 *   slot     a dense index 0..xa_numa_nodes-1 over the nodes this process
 *            keeps arenas on: the allowed nodes (cpuset mems, numactl
 *            --membind / --interleave / --preferred) that are the nearest
 *            allowed node of at least one CPU. Arenas, heaps and statistics
 *            speak slots; only mbind and reports speak node ids.
 * The "node" of the older interface (arena->node, xa_numa_current_node,
 * xa_numa_place) is a slot. On a machine with one node, or with numa:off,
 * there is one slot and nothing here makes a system call after boot. */
#ifndef XA_NUMA_H
#define XA_NUMA_H

#include "common.h"

#define XA_NUMA_MAX_NODE_ID 1024 /* kernel MAX_NUMNODES with NODES_SHIFT 10 */
#define XA_NUMA_MAX_NODES 64     /* online nodes tracked; more are ignored */
#define XA_NUMA_MAX_CPUS 8192    /* Debian's NR_CPUS */
#define XA_NUMA_LONGS(bits) ((bits) / (8 * sizeof(unsigned long)))

/* ---- the interface arena.c / stats_collect.c already call ---- */

/* Number of slots (>= 1) and whether placement is in force (numa:on with
 * more than one slot, or numa:interleave with more than one allowed node). */
extern XA_HIDDEN int xa_numa_nodes;
extern XA_HIDDEN bool xa_numa_active;

/* Reads the topology (sysfs, /proc/self/status, get_mempolicy) with raw
 * system calls; no allocation, no libnuma. Called by init before arenas
 * exist. One node: one open/read/close, as before. */
void xa_numa_boot(void);
/* Slot of the CPU the calling thread runs on; 0 when inactive. */
int xa_numa_current_node(void);
/* Places a fresh mapping on slot's node (or interleaves it over the
 * allowed nodes, per numa:), before first touch. Does nothing when
 * inactive. Failures are counted, never fatal. */
void xa_numa_place(void *p, size_t size, int slot);

/* ---- additions for the NUMA-aware core (issue 12) ---- */

/* Arenas -> slots: arena i belongs to slot i % xa_numa_nodes, so arenas:N
 * is spread evenly. -1 when inactive (arena->node today). */
int xa_numa_arena_slot(unsigned arena);
/* The arenas of slot form the sequence first, first+step, ... < narenas.
 * When narenas < xa_numa_nodes and slot has no arena of its own, the
 * arenas of the nearest slot that has one are returned. Inactive: first 0,
 * step 1 (every arena). */
unsigned xa_numa_arenas_of_slot(int slot, unsigned narenas, unsigned *step);

/* Re-check for slow paths. The caller keeps one of these per thread heap
 * (zero-initialised = "not yet known"). Returns the slot the thread runs
 * on now when it differs from t->slot (and updates t->slot), else -1.
 * Costs no system call when glibc registered rseq (each call checks);
 * otherwise getcpu(2) every XA_NUMA_RECHECK_EVERY calls, so a migrated
 * thread follows within that many slow paths. Inactive: always -1. */
#define XA_NUMA_RECHECK_EVERY 16
typedef struct xa_numa_thread {
    int slot;       /* last slot seen + 1; 0 = unknown */
    uint32_t ticks; /* slow paths since the last getcpu */
} xa_numa_thread;
int xa_numa_recheck(xa_numa_thread *t);

/* Places a chunk (or huge mapping) for slot; returns 0 or the errno of
 * mbind (the memory stays usable, the failure is counted). Same as
 * xa_numa_place with a result. */
int xa_numa_place_chunk(void *p, size_t size, int slot);

/* Topology queries, for heaps choosing a neighbour and for reports. */
int xa_numa_node_of_slot(int slot);   /* node id, -1 if no such slot */
int xa_numa_slot_of_node(int node);   /* slot, -1 if not a slot */
int xa_numa_slot_of_cpu(int cpu);     /* slot, -1 if unknown */
int xa_numa_distance(int slot_a, int slot_b); /* 10 = local, -1 bad slot */
/* Slots ordered by distance from slot (slot itself first); writes at most
 * max, returns how many. */
int xa_numa_slots_by_distance(int slot, int *out, int max);
/* Online node count of the machine and allowed node count, for reports. */
int xa_numa_online_count(void);
int xa_numa_allowed_count(void);
/* "on", "off", "interleave", or "on (inactive: one node)" etc., and the
 * node list, e.g. "on: slots 0-3 = nodes 0,1,2,3; allowed 0-3; online 0-3;
 * libnuma: available". Returns the length it would have had. */
size_t xa_numa_describe(char *buf, size_t len);

/* Per-slot counters, cheap (relaxed atomics), kept by numa.c itself.
 * Resident/dirty/live bytes per node are the arenas' counters summed by
 * arena->node (stats_collect), not these. */
typedef struct xa_numa_counters {
    uint64_t chunks_placed;  /* mbind calls that succeeded */
    uint64_t bytes_placed;   /* bytes they covered */
    uint64_t place_errors;   /* mbind calls that failed */
    uint64_t pages_checked;  /* resident pages looked at by xa_numa_query */
    uint64_t pages_off_node; /* of those, pages found on another node */
} xa_numa_counters;
/* Copies slot's counters (all zero for a bad slot). */
void xa_numa_counters_get(int slot, xa_numa_counters *out);

/* move_pages(2) in query mode over [p, p+size), one page every stride
 * bytes (4096: every page; 2 MiB: one per huge page). Pages not resident
 * are not counted. When slot >= 0, pages not on slot's node are "off" and
 * the counters of slot are updated. Slow: for slow paths, xalloc-stat
 * requests and tests, never the fast path. Returns 0 or an errno. */
typedef struct xa_numa_query_result {
    uint64_t present;  /* resident pages looked at */
    uint64_t on_node;  /* on slot's node */
    uint64_t off_node; /* on another node */
    uint64_t per_slot[XA_NUMA_MAX_NODES]; /* resident pages per slot; pages on
                                           * a node that is not a slot are
                                           * counted in off_node only */
} xa_numa_query_result;
int xa_numa_query(const void *p, size_t size, size_t stride, int slot,
                  xa_numa_query_result *out);

/* ---- the topology as data, so the policy can be tested ---- */

/* Everything numa.c decides from. xa_numa_boot fills one from the real
 * machine; the unit tests fill theirs from a fake sysfs tree. */
typedef struct xa_numa_topo {
    /* the machine */
    int nonline;                                  /* online nodes, >= 1 */
    int16_t online_node[XA_NUMA_MAX_NODES];       /* index -> node id */
    bool has_cpus[XA_NUMA_MAX_NODES];             /* by online index */
    bool absent[XA_NUMA_MAX_NODES];               /* node dir missing */
    uint8_t dist[XA_NUMA_MAX_NODES][XA_NUMA_MAX_NODES]; /* by online index */
    /* the process */
    unsigned long allowed[XA_NUMA_LONGS(XA_NUMA_MAX_NODE_ID)]; /* node ids */
    int nallowed;
    /* derived by xa_numa_topo_finish */
    int nslots;
    int16_t slot_online[XA_NUMA_MAX_NODES]; /* slot -> online index */
    int16_t online_slot[XA_NUMA_MAX_NODES]; /* online index -> its slot */
    /* Per CPU, last: entries from ncpus on (1 + the highest CPU id listed)
     * are never read or written, so the pages of 8192 CPUs' entries stay
     * untouched on a machine with a few. */
    int ncpus;
    int16_t cpu_online[XA_NUMA_MAX_CPUS];   /* cpu -> online index, -1 none */
    int16_t cpu_slot[XA_NUMA_MAX_CPUS];     /* cpu -> slot, -1 unknown */
} xa_numa_topo;

/* One node (id 0), every node allowed, CPUs unknown. */
void xa_numa_topo_reset(xa_numa_topo *t);
/* Reads sysroot + "/sys/devices/system/node/{online,nodeN/cpulist,
 * nodeN/distance}" (sysroot "" for the machine). Returns 0, or ENOENT when
 * there is no node directory (the topology stays one node). A missing or
 * unreadable node directory marks that node absent (no CPUs, default
 * distances) instead of failing. */
int xa_numa_topo_read(xa_numa_topo *t, const char *sysroot);
/* Only the "online" file: the node count, as boot needs first. */
int xa_numa_topo_read_online(xa_numa_topo *t, const char *sysroot);
/* Restricts the allowed nodes to mask (nbits bits of node ids). A mask
 * that leaves no online node is ignored and gives EINVAL: never fail
 * because of one. */
int xa_numa_topo_restrict(xa_numa_topo *t, const unsigned long *mask, unsigned nbits);
/* Restricts to "Mems_allowed_list:" of a /proc/PID/status file. */
int xa_numa_topo_restrict_status(xa_numa_topo *t, const char *status_path);
/* Restricts to a node list in the sysfs syntax ("0,2-3"). */
int xa_numa_topo_restrict_list(xa_numa_topo *t, const char *list);
/* Computes slots, the CPU -> slot table and the nearest-slot fallbacks. */
void xa_numa_topo_finish(xa_numa_topo *t);
/* Makes t the process's topology under mode (enum xa_numa_mode). Tests
 * call this with fake topologies; boot with the real one. Not thread-safe:
 * before arenas exist, or in tests. */
void xa_numa_install(const xa_numa_topo *t, int mode);
/* The installed topology (read-only). */
const xa_numa_topo *xa_numa_topo_current(void);
/* Parses a node or CPU list ("0", "0-3", "0,2-3,8") into mask (nbits
 * bits). Returns the number of bits set, -1 on a syntax error. */
int xa_numa_parse_list(const char *s, unsigned long *mask, unsigned nbits);

#endif /* XA_NUMA_H */
