/* dl_obj.c: a shared object the deadlock test loads and unloads in a loop.
 * Its constructor and destructor allocate, so allocations (and, with
 * prof_sample:1, unwinding) happen while the loader holds its lock. */
#include <stdlib.h>
#include <string.h>

static char *held;

__attribute__((constructor)) static void dl_obj_init(void)
{
    held = malloc(1000);
    if (held)
        memset(held, 7, 1000);
}

__attribute__((destructor)) static void dl_obj_fini(void)
{
    free(held);
}

int dl_obj_value(void);
int dl_obj_value(void)
{
    char *p = malloc(64);
    int v = p ? 42 : 0;
    free(p);
    return v;
}
