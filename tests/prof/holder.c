/* holder.c: keeps about 24 MiB live from hold_big and 3 MiB from
 * hold_small, prints "ready PID" and waits (up to 120 s, or until stdin
 * closes) so that a dump can be requested from outside. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void *hold_big(size_t size);
void *hold_small(size_t size);

__attribute__((noinline)) void *hold_big(size_t size)
{
    void *p = malloc(size);
    __asm__ volatile("" ::: "memory");
    return p;
}

__attribute__((noinline)) void *hold_small(size_t size)
{
    void *p = malloc(size);
    __asm__ volatile("" ::: "memory");
    return p;
}

int main(void)
{
    static void *keep[100000];
    int n = 0;
    for (int i = 0; i < 24 * 1024; i++) {
        keep[n] = hold_big(1024);
        memset(keep[n++], 1, 1024);
        if (i % 8 == 0) {
            keep[n] = hold_small(1024);
            memset(keep[n++], 2, 1024);
        }
    }
    printf("ready %d\n", (int)getpid());
    fflush(stdout);
    char c;
    alarm(120);
    while (read(0, &c, 1) > 0)
        ;
    return 0;
}
