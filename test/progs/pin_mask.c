/* Test program for oversubscription: starts N threads that stay alive together, and each reads
 * its own affinity from inside with sched_getaffinity; prints, for the main thread (thread=0) and
 * each thread k in creation order, "thread=K count=C mask=LIST".
 * usage: pin_mask N */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXT 256

static pthread_barrier_t all_up;
static cpu_set_t masks[MAXT];
static int counts[MAXT];

static void record(int k)
{
    counts[k] = sched_getaffinity(0, sizeof masks[k], &masks[k]) == 0 ? CPU_COUNT(&masks[k]) : -1;
}

static void *worker(void *arg)
{
    record((int)(long)arg);
    pthread_barrier_wait(&all_up); /* alive until every thread has its place */
    return NULL;
}

static void print_mask(int k)
{
    char list[1024] = "";
    size_t pos = 0;
    for (int c = 0; c < CPU_SETSIZE && pos + 16 < sizeof list; c++) {
        if (!CPU_ISSET(c, &masks[k]))
            continue;
        int e = c;
        while (e + 1 < CPU_SETSIZE && CPU_ISSET(e + 1, &masks[k]))
            e++;
        pos += (size_t)(e > c ? snprintf(list + pos, sizeof list - pos, "%s%d-%d", pos ? "," : "", c, e)
                              : snprintf(list + pos, sizeof list - pos, "%s%d", pos ? "," : "", c));
        c = e;
    }
    printf("thread=%d count=%d mask=%s\n", k, counts[k], list);
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 0;
    if (n < 1 || n >= MAXT) {
        fprintf(stderr, "usage: pin_mask N (1 to %d)\n", MAXT - 1);
        return 2;
    }
    pthread_t th[MAXT];
    pthread_barrier_init(&all_up, NULL, (unsigned)n + 1);
    record(0);
    for (int k = 1; k <= n; k++)
        if (pthread_create(&th[k], NULL, worker, (void *)(long)k) != 0) {
            fprintf(stderr, "pin_mask: pthread_create failed\n");
            return 1;
        }
    pthread_barrier_wait(&all_up);
    for (int k = 1; k <= n; k++)
        pthread_join(th[k], NULL);
    for (int k = 0; k <= n; k++)
        print_mask(k);
    return 0;
}
