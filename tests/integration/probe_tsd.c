/* tests/integration/probe_tsd.c: pthread_key destructors that allocate and
 * free at thread exit, possibly after the allocator's own per-thread
 * teardown has run. A destructor frees the thread's value, allocates a new
 * one and sets it again (so glibc runs the destructors a second round), and
 * frees memory other threads' destructors handed it. Exit 0 on success. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr, RTLD_DEFAULT */
#endif
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xt.h"

static pthread_key_t key_a, key_b;
static atomic_int destructor_runs, errors;
static _Atomic(void *) mailbox; /* a block passed from one exiting thread to the next */

struct val {
    int round;
    size_t size;
    unsigned char *data;
};

static void dtor(void *v)
{
    struct val *val = v;
    atomic_fetch_add(&destructor_runs, 1);
    if (xt_verify(val->data, val->size, val->size) != val->size)
        atomic_fetch_add(&errors, 1);
    free(val->data);
    /* Churn, and swap a block with whichever thread exits next. */
    for (int i = 0; i < 16; i++) {
        void *p = malloc((size_t)(i + 1) * 48);
        if (p == NULL)
            atomic_fetch_add(&errors, 1);
        free(p);
    }
    unsigned char *mine = malloc(777);
    if (mine == NULL) {
        atomic_fetch_add(&errors, 1);
    } else {
        memset(mine, 0x77, 777);
        unsigned char *theirs = atomic_exchange(&mailbox, mine);
        if (theirs != NULL) {
            for (int i = 0; i < 777; i++)
                if (theirs[i] != 0x77) {
                    atomic_fetch_add(&errors, 1);
                    break;
                }
            free(theirs);
        }
    }
    if (val->round == 0) {
        /* Set a fresh value: the destructor runs again in the next round. */
        val->round = 1;
        val->size = 5000;
        val->data = malloc(val->size);
        if (val->data == NULL) {
            atomic_fetch_add(&errors, 1);
            free(val);
            return;
        }
        xt_fill(val->data, val->size, val->size);
        pthread_setspecific(key_a, val);
    } else {
        free(val);
    }
}

static void *worker(void *arg)
{
    size_t id = (size_t)arg;
    struct val *a = malloc(sizeof *a), *b = malloc(sizeof *b);
    if (a == NULL || b == NULL) {
        atomic_fetch_add(&errors, 1);
        return NULL;
    }
    a->round = 0;
    a->size = 100 + id;
    a->data = malloc(a->size);
    b->round = 1;
    b->size = 70000;
    b->data = malloc(b->size);
    if (a->data == NULL || b->data == NULL) {
        atomic_fetch_add(&errors, 1);
        return NULL;
    }
    xt_fill(a->data, a->size, a->size);
    xt_fill(b->data, b->size, b->size);
    pthread_setspecific(key_a, a);
    pthread_setspecific(key_b, b);
    return NULL;
}

int main(int argc, char **argv)
{
    xt_require_allocator(argv[0]);
    enum { NTHREADS = 64 };
    pthread_key_create(&key_a, dtor);
    pthread_key_create(&key_b, dtor);
    pthread_t th[NTHREADS];
    for (size_t i = 0; i < NTHREADS; i++)
        if (pthread_create(&th[i], NULL, worker, (void *)i) != 0)
            return 3;
    for (size_t i = 0; i < NTHREADS; i++)
        pthread_join(th[i], NULL);
    free(atomic_exchange(&mailbox, NULL));
    /* Each thread: key_a (round 0, then re-set), key_b, then key_a again. */
    int runs = atomic_load(&destructor_runs);
    if (atomic_load(&errors) != 0 || runs != 3 * NTHREADS) {
        fprintf(stderr, "errors %d, destructor runs %d (want %d)\n", atomic_load(&errors), runs,
                3 * NTHREADS);
        return 1;
    }
    return 0;
}
