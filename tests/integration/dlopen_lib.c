/* tests/integration/dlopen_lib.c: the library probe_dlopen loads. Its
 * constructor allocates while dlopen holds the loader lock, it hands blocks
 * to and takes blocks from the program, and its destructor frees at dlclose. */
#include <stdlib.h>
#include <string.h>

char *xt_dl_greeting(void);
void xt_dl_take(void *p, size_t n);
int xt_dl_ok(void);

static char *ctor_copy;
static void *blocks[100];
static int ok = 1;

__attribute__((constructor)) static void dl_init(void)
{
    ctor_copy = strdup("allocated in a dlopen constructor");
    for (int i = 0; i < 100; i++) {
        blocks[i] = malloc((size_t)(i + 1) * 100);
        if (blocks[i] == NULL)
            ok = 0;
        else
            memset(blocks[i], i, (size_t)(i + 1) * 100);
    }
    if (ctor_copy == NULL)
        ok = 0;
}

__attribute__((destructor)) static void dl_fini(void)
{
    for (int i = 0; i < 100; i++)
        free(blocks[i]);
    free(ctor_copy);
}

/* A block for the program to free. */
char *xt_dl_greeting(void)
{
    return ctor_copy != NULL ? strdup(ctor_copy) : NULL;
}

/* Frees a block the program allocated, after checking it is all 0x42. */
void xt_dl_take(void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        if (b[i] != 0x42)
            ok = 0;
    free(p);
}

int xt_dl_ok(void)
{
    for (int i = 0; i < 100 && ok; i++) {
        const unsigned char *b = blocks[i];
        for (size_t k = 0; k < (size_t)(i + 1) * 100; k++)
            if (b[k] != (unsigned char)i)
                ok = 0;
    }
    return ok;
}
