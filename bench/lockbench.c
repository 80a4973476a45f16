// lockbench: the node lock under contention (issue: keep the lock that measures better).
// Threads repeatedly take a lock around a short critical section shaped like a node
// superblock cache operation (pop and push a list head, bump two counters), with some
// private work in between. Compares the allocator's test-and-test-and-set spinlock with
// pause and yield (allocator/base/lock.h), a plain test-and-set spinlock, and a pthread mutex,
// interleaved, and prints the median time per lock acquisition.
// Usage: lockbench [threads...]   (default 2 4 8)
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "base/lock.h"

#define OPS_PER_THREAD 200000
#define REPS 5

typedef struct node { struct node *next; } node_t;
static node_t pool[64];
static node_t *head;
static size_t in_use, cached;

static bx_lock_t ttas = BX_LOCK_INIT;
static atomic_int tas;
static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static int kind;

static void critical(void) {
    node_t *n = head;
    if (n) head = n->next;
    in_use++;
    if (n) {
        n->next = head;
        head = n;
    }
    cached += in_use & 1;
}

static void lock_it(void) {
    switch (kind) {
    case 0: bx_lock(&ttas); break;
    case 1: while (atomic_exchange_explicit(&tas, 1, memory_order_acquire)) {} break;
    default: pthread_mutex_lock(&mutex);
    }
}

static void unlock_it(void) {
    switch (kind) {
    case 0: bx_unlock(&ttas); break;
    case 1: atomic_store_explicit(&tas, 0, memory_order_release); break;
    default: pthread_mutex_unlock(&mutex);
    }
}

static void *worker(void *arg) {
    volatile unsigned local = (unsigned)(size_t)arg;
    for (int i = 0; i < OPS_PER_THREAD; i++) {
        lock_it();
        critical();
        unlock_it();
        for (int j = 0; j < 50; j++) local = local * 1103515245u + 12345u; // private work
    }
    return NULL;
}

static double run(int threads) {
    pthread_t t[64];
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int i = 0; i < threads; i++) pthread_create(&t[i], NULL, worker, (void *)(size_t)i);
    for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
    clock_gettime(CLOCK_MONOTONIC, &b);
    double ns = (b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec);
    return ns / ((double)threads * OPS_PER_THREAD);
}

static int cmp(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

int main(int argc, char **argv) {
    static const char *names[] = {"ttas-pause-yield", "tas-spin", "pthread-mutex"};
    int counts[16], ncounts = 0;
    for (int i = 1; i < argc && ncounts < 16; i++) counts[ncounts++] = atoi(argv[i]);
    if (!ncounts) {
        counts[0] = 2, counts[1] = 4, counts[2] = 8;
        ncounts = 3;
    }
    for (int i = 0; i < 63; i++) pool[i].next = &pool[i + 1];
    head = &pool[0];
    printf("lock,threads,median_ns_per_op,ratio_to_ttas\n");
    for (int c = 0; c < ncounts; c++) {
        double samples[3][REPS];
        for (int r = 0; r < REPS; r++) // interleaved: A B C A B C ...
            for (kind = 0; kind < 3; kind++) samples[kind][r] = run(counts[c]);
        double median[3];
        for (int k = 0; k < 3; k++) {
            qsort(samples[k], REPS, sizeof(double), cmp);
            median[k] = samples[k][REPS / 2];
        }
        for (int k = 0; k < 3; k++)
            printf("%s,%d,%.1f,%.2f\n", names[k], counts[c], median[k], median[k] / median[0]);
    }
    return 0;
}
