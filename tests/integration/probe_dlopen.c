/* tests/integration/probe_dlopen.c: dlopen of a library that allocates in
 * its constructor, blocks passed both ways across the library boundary,
 * dlclose (the library's destructor frees), repeated. argv[1] is the path of
 * the library built from dlopen_lib.c. Exit 0 on success. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr, RTLD_DEFAULT */
#endif
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xt.h"

int main(int argc, char **argv)
{
    xt_require_allocator(argv[0]);
    if (argc < 2) {
        fprintf(stderr, "usage: %s LIBRARY\n", argv[0]);
        return 2;
    }
    for (int round = 0; round < 20; round++) {
        void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
        if (h == NULL) {
            fprintf(stderr, "dlopen: %s\n", dlerror());
            return 1;
        }
        char *(*greeting)(void) = (char *(*)(void))dlsym(h, "xt_dl_greeting");
        void (*take)(void *, size_t) = (void (*)(void *, size_t))dlsym(h, "xt_dl_take");
        int (*lib_ok)(void) = (int (*)(void))dlsym(h, "xt_dl_ok");
        if (greeting == NULL || take == NULL || lib_ok == NULL) {
            fprintf(stderr, "dlsym failed\n");
            return 1;
        }
        char *g = greeting();
        if (g == NULL || strcmp(g, "allocated in a dlopen constructor") != 0) {
            fprintf(stderr, "round %d: bad greeting\n", round);
            return 1;
        }
        free(g);
        for (size_t n = 1; n < 300000; n = n * 3 + 1) {
            void *p = malloc(n);
            if (p == NULL)
                return 1;
            memset(p, 0x42, n);
            take(p, n);
        }
        if (!lib_ok()) {
            fprintf(stderr, "round %d: the library's blocks are corrupted\n", round);
            return 1;
        }
        if (dlclose(h) != 0) {
            fprintf(stderr, "dlclose: %s\n", dlerror());
            return 1;
        }
    }
    return 0;
}
