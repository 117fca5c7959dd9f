/* invariant.h: read-only consistency walk of the allocator's structures, for
 * tests, the fuzzer and debug builds (compiled to nothing elsewhere).
 * Layer: above heap (reads heaps, arenas, chunks, the chunk map). */
#ifndef XA_INVARIANT_H
#define XA_INVARIANT_H

#include <stddef.h>

/* Walks every arena (under its lock: chunks, runs, bins, dirty FIFO,
 * abandoned slabs with their free lists, huge blocks) and the calling
 * thread's heap (class lists, slabs' free lists, foreign stacks, large
 * cache). Other threads' private free lists are not read: they change
 * without a lock. Returns the number of inconsistencies found and writes
 * the first one into msg (len bytes). Changes nothing. */
size_t xa_invariant_check(char *msg, size_t len);

#endif /* XA_INVARIANT_H */
