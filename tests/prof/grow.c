/* grow.c: buffers built up by realloc, 128 bytes at a time, to 128 KiB
 * each (25 MiB in all) from grow_site; prints "grow_site BYTES". With
 * byte sampling counting only growth, the estimate of grow_site must match
 * the live bytes as for blocks allocated at once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *grow_site(void *p, size_t size);
void *bufs[200];

__attribute__((noinline)) void *grow_site(void *p, size_t size)
{
    void *q = realloc(p, size);
    __asm__ volatile("" ::: "memory");
    return q;
}

int main(void)
{
    size_t total = 0;
    for (int i = 0; i < 200; i++) {
        size_t len = 0;
        while (len < 128 * 1024) {
            bufs[i] = grow_site(bufs[i], len + 128);
            memset((char *)bufs[i] + len, i, 128);
            len += 128;
        }
        total += len;
    }
    printf("grow_site %zu\n", total);
    return 0;
}
