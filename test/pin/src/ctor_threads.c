/* Built by test/system/pin_foreign.sh into a library the test program depends on: its
 * constructor creates a thread before libbobox-pin.so's own constructor has run. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>

static void *report(void *arg)
{
    cpu_set_t s;
    (void)arg;
    sched_getaffinity(0, sizeof s, &s);
    printf("ctor_thread cpus=%d cpu=%d\n", CPU_COUNT(&s), sched_getcpu());
    fflush(stdout);
    return NULL;
}

__attribute__((constructor)) static void start_thread_early(void)
{
    pthread_t t;
    if (pthread_create(&t, NULL, report, NULL) == 0)
        pthread_join(t, NULL);
}
