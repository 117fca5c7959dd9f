/* background.h: the optional background purge thread (background_thread
 * option). It wakes when dirty memory comes due, purges every arena and
 * the idle threads' caches, and sleeps long when there is nothing to do.
 * Layer: above heap and arena (it drives their decay); called by init.c
 * and by the run-time configuration hook. */
#ifndef XA_BACKGROUND_H
#define XA_BACKGROUND_H

#include "common.h"

/* True while the background thread runs (slow paths then skip decay). */
extern bool xa_background_running;

/* Starts or stops the thread to match the option; no lock may be held
 * (it creates a thread, which allocates). */
void xa_background_update(void);
/* In the fork child: the thread did not survive. */
void xa_background_fork_child(void);
/* One pass of what the thread does: decay every arena and every heap's
 * large-block cache. Returns the nanoseconds until something comes due
 * (UINT64_MAX when nothing is dirty). */
uint64_t xa_background_pass(uint64_t now);

#endif /* XA_BACKGROUND_H */
