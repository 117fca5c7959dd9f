/* init.h: process and thread set-up, fork and thread-exit handling. init.c
 * is the one orchestrator allowed to call every module's boot and fork
 * hooks. Nothing here runs on a fast path: a thread's first allocation
 * misses in the empty heap and lands here through the slow path. */
#ifndef XA_INIT_H
#define XA_INIT_H

#include "heap.h"

/* True once the process is initialised. */
extern bool xa_ready;

/* Initialises the process once (idempotent, thread-safe, allocation-free).
 * Returns false only when called recursively from inside init. */
bool xa_init_process(void);
/* The calling thread's heap, created if needed; NULL when out of memory. */
xa_heap *xa_init_thread(void);

#endif /* XA_INIT_H */
