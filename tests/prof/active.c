/* active.c: prof_active switched at run time. Started with
 * prof_active:false, allocates from off_site (nothing may be sampled),
 * switches sampling on with xalloc_config_set("prof_active:true"),
 * allocates from on_site, and exits; the final dump must hold on_site and
 * not off_site. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


void off_site(void);
void on_site(void);
void *keep[20000];
static int nkeep;

__attribute__((noinline)) void off_site(void)
{
    for (int i = 0; i < 8192; i++)
        keep[nkeep++] = malloc(1024);
}

__attribute__((noinline)) void on_site(void)
{
    for (int i = 0; i < 8192; i++)
        keep[nkeep++] = malloc(1024);
}

int main(void)
{
    off_site();
    char msg[256];
    /* Looked up at run time: the library is preloaded, not linked. */
    int (*set)(const char *, char *, size_t) =
        (int (*)(const char *, char *, size_t))dlsym(RTLD_DEFAULT, "xalloc_config_set");
    if (!set) {
        fprintf(stderr, "active: xalloc_config_set not found (library not preloaded?)\n");
        return 1;
    }
    if (set("prof_active:true", msg, sizeof msg) != 0) {
        fprintf(stderr, "active: %s\n", msg);
        return 1;
    }
    on_site();
    return 0;
}
