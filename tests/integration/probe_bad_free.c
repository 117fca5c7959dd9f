/* tests/integration/probe_bad_free.c: invalid frees must end in a
 * controlled abort that names the address, never in silent corruption.
 * Each case runs in a forked child with stderr on a pipe; the parent
 * requires death by SIGABRT and, under xalloc, a message containing
 * "xalloc" and the address in hex. Under glibc (XT_ALLOCATOR=glibc) only
 * death by a signal is required: glibc's messages differ and free(0x1000)
 * faults. Exit 0 when every case behaves. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr, RTLD_DEFAULT */
#endif
#include <ctype.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/xt.h"

/* Keeps the compiler from seeing (and warning about) the bad frees. */
static void (*volatile free_fn)(void *) = free;

enum bad_case { DOUBLE_FREE_SMALL, DOUBLE_FREE_MEDIUM, STACK_ADDR, MID_LARGE, MID_SMALL, LOW_ADDR, N_CASES };
static const char *const case_names[N_CASES] = {
    "double free of a 32-byte block",     "double free of a 20000-byte block",
    "free of a stack address",            "free of a pointer into a 1 MiB block",
    "free of a pointer into a 64-byte block (+16)", "free((void *)0x1000)"};

/* The pointer each case passes to free; the double-free cases free it twice. */
static void *case_pointer(enum bad_case c, void *stack_addr)
{
    switch (c) {
    case DOUBLE_FREE_SMALL:
        return malloc(32);
    case DOUBLE_FREE_MEDIUM:
        return malloc(20000);
    case STACK_ADDR:
        return stack_addr;
    case MID_LARGE: {
        char *p = malloc(1 << 20);
        memset(p, 0, 1 << 20);
        return p + 4096 + 64;
    }
    case MID_SMALL: {
        char *p = malloc(64);
        memset(p, 0, 64);
        return p + 16;
    }
    default:
        return (void *)0x1000;
    }
}

static int run_case(enum bad_case c)
{
    char stack_buf[256] __attribute__((aligned(64)));
    memset(stack_buf, 0, sizeof stack_buf);
    /* Chosen in the parent, so the parent knows the address the child frees. */
    void *p = case_pointer(c, stack_buf + 64);
    if (p == NULL)
        return 1;
    int pipefd[2];
    if (pipe(pipefd) != 0)
        return 1;
    pid_t pid = fork();
    if (pid == 0) {
        struct rlimit no_core = {0, 0};
        setrlimit(RLIMIT_CORE, &no_core);
        dup2(pipefd[1], 2);
        close(pipefd[0]);
        alarm(10);
        free_fn(p);
        if (c == DOUBLE_FREE_SMALL || c == DOUBLE_FREE_MEDIUM) {
            /* Some churn between the frees, as in real double frees. */
            void *other = malloc(c == DOUBLE_FREE_SMALL ? 48 : 100);
            free_fn(p);
            free_fn(other);
        }
        _exit(0); /* survived: the bad free went unnoticed */
    }
    close(pipefd[1]);
    char msg[4096];
    size_t len = 0;
    ssize_t n;
    while (len < sizeof msg - 1 && (n = read(pipefd[0], msg + len, sizeof msg - 1 - len)) > 0)
        len += (size_t)n;
    msg[len] = '\0';
    close(pipefd[0]);
    int status;
    waitpid(pid, &status, 0);
    if (c == MID_LARGE)
        free((char *)p - 4096 - 64);
    else if (c == MID_SMALL)
        free((char *)p - 16);
    else if (c == DOUBLE_FREE_SMALL || c == DOUBLE_FREE_MEDIUM)
        free(p); /* freed only in the child */

    /* The address as hex digits, lower case, no 0x and no leading zeros. */
    char hex[32], lower[sizeof msg];
    snprintf(hex, sizeof hex, "%lx", (unsigned long)(uintptr_t)p);
    for (size_t i = 0; i <= len; i++)
        lower[i] = (char)tolower((unsigned char)msg[i]);

    int ok;
    if (xt_expect_xalloc())
        ok = WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT && strstr(lower, "xalloc") &&
             strstr(lower, hex);
    else
        ok = WIFSIGNALED(status) && (WTERMSIG(status) == SIGABRT || WTERMSIG(status) == SIGSEGV);
    printf("%s %s: %s, stderr: %s", ok ? "ok  " : "FAIL", case_names[c],
           WIFSIGNALED(status) ? strsignal(WTERMSIG(status)) : "exited", len ? msg : "(empty)\n");
    if (len && msg[len - 1] != '\n')
        printf("\n");
    if (!ok)
        fprintf(stderr, "%s: want SIGABRT and a message with \"xalloc\" and %s; got %s %d\n",
                case_names[c], hex, WIFSIGNALED(status) ? "signal" : "exit status",
                WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
    return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
    xt_require_allocator(argv[0]);
    int failures = 0;
    for (int c = 0; c < N_CASES; c++)
        failures += run_case((enum bad_case)c);
    return failures == 0 ? 0 : 1;
}
