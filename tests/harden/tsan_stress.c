/* tests/harden/tsan_stress.c: the concurrent parts of the allocator under
 * ThreadSanitizer, on the internal test build (xa_test_*, linked
 * statically, compiled with -fsanitize=thread by mk/sanitize.mk):
 *  - remote frees: blocks made by one thread, freed by others (foreign
 *    stacks, thread_free lists, the notify hand-off of full slabs);
 *  - abandonment and adoption: threads exit holding blocks that others
 *    free later, and new threads adopt their slabs;
 *  - statistics: publication every 10 ms by ticks and the statistics
 *    thread while other threads read totals (mallinfo2) and purge.
 * TSan reports any data race and fails the run (halt_on_error). */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *xa_test_malloc(size_t size);
void xa_test_free(void *p);
void *xa_test_realloc(void *p, size_t size);
struct mallinfo2 xa_test_mallinfo2(void);
int xa_test_malloc_trim(size_t pad);
int xalloc_config_set(const char *key_value, char *msg, size_t msg_len);

#define SLOTS 1024
static _Atomic(uintptr_t) box[SLOTS];
static atomic_int stop;

static void *mixer(void *arg)
{
    uint64_t r = (uintptr_t)arg * 0x9e3779b97f4a7c15ULL + 1;
    for (int k = 0; k < 20000; k++) {
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        size_t size = r % 16 == 0 ? 70000 + r % 300000 : 16 + r % 2000;
        char *p = xa_test_malloc(size);
        memset(p, (int)k, 16);
        uintptr_t old = atomic_exchange(&box[(r >> 20) % SLOTS], (uintptr_t)p);
        if (old) {
            if (r % 5 == 0)
                old = (uintptr_t)xa_test_realloc((void *)old, 100 + r % 5000);
            xa_test_free((void *)old);
        }
    }
    return NULL; /* exits holding nothing itself, but its blocks stay in box */
}

static void *observer(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop)) {
        struct mallinfo2 mi = xa_test_mallinfo2();
        if (mi.uordblks == (size_t)-1)
            abort();
        xa_test_malloc_trim(0);
    }
    return NULL;
}

int main(void)
{
    char msg[128];
    xa_test_free(xa_test_malloc(1));
    if (xalloc_config_set("stats_interval_ms:10", msg, sizeof msg))
        fprintf(stderr, "stats_interval_ms: %s\n", msg);
    xalloc_config_set("background_thread:true", msg, sizeof msg);
    pthread_t obs;
    pthread_create(&obs, NULL, observer, NULL);
    for (int wave = 0; wave < 4; wave++) { /* threads exit and are replaced */
        pthread_t t[8];
        for (int i = 0; i < 8; i++)
            pthread_create(&t[i], NULL, mixer, (void *)(uintptr_t)(wave * 8 + i + 1));
        for (int i = 0; i < 8; i++)
            pthread_join(t[i], NULL);
    }
    atomic_store(&stop, 1);
    pthread_join(obs, NULL);
    for (int i = 0; i < SLOTS; i++) {
        uintptr_t p = atomic_exchange(&box[i], 0);
        if (p)
            xa_test_free((void *)p);
    }
    printf("tsan_stress: 32 threads in 4 waves, 640000 cross-thread operations, no race\n");
    return 0;
}
