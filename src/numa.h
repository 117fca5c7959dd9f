/* numa.h: NUMA topology and placement policy. Layer: beside pages; uses
 * os only. One node on a machine without NUMA; everything still works. */
#ifndef XA_NUMA_H
#define XA_NUMA_H

#include "common.h"

/* Number of nodes (>= 1) and whether node binding is in force. */
extern int xa_numa_nodes;
extern bool xa_numa_active;

void xa_numa_boot(void);
/* Node the calling thread runs on (0 when unknown). */
int xa_numa_current_node(void);
/* Places a fresh mapping on node (or interleaves, per the numa option). */
void xa_numa_place(void *p, size_t size, int node);

#endif /* XA_NUMA_H */
