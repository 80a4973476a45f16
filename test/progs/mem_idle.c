// mem_idle.c - a server after a spike: allocates about 1 GB (a million 200 B and 1 KB objects
// and eight 64 MB buffers, from two threads), frees all of it, and then makes no call at all.
// Prints the resident set at the peak and after `seconds` of sleep, and how many threads the
// process has. With `fork`, a child forked after the spike makes a spike of its own and
// reports the same (the allocator's reclaimer must start again there).
// With `pthread_exit`, the main thread ends with pthread_exit after a spike and a second
// thread makes another: the process must end when that thread does (the reclaimer may not be
// the thread that keeps it alive).
// Usage: mem_idle SECONDS [fork|pthread_exit]
#include <pthread.h>
#include <stdint.h>
#include <sys/wait.h>
#include "mem_common.h"

#define OBJECTS 500000

// arg: a barrier both spikes meet at before freeing, so the peak holds both (about 1.8 GB
// every run, not 1.1-1.8 GB as the threads happen to overlap), or NULL.
static void *spike(void *arg) {
    char **small = malloc(OBJECTS * sizeof *small), **big = malloc(OBJECTS * sizeof *big);
    for (int i = 0; i < OBJECTS; i++) {
        small[i] = malloc(200);
        big[i] = malloc(1024);
        memset(small[i], i, 200);
        memset(big[i], i, 1024);
    }
    char *buffers[4];
    for (int i = 0; i < 4; i++) {
        buffers[i] = malloc(64 << 20);
        memset(buffers[i], i, 64 << 20);
    }
    if (arg) pthread_barrier_wait(arg);
    for (int i = 0; i < 4; i++) free(buffers[i]);
    for (int i = 0; i < OBJECTS; i++) {
        free(small[i]);
        free(big[i]);
    }
    free(small);
    free(big);
    return NULL;
}

static int threads(void) {
    char line[256];
    int n = -1;
    FILE *f = fopen("/proc/self/status", "r");
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "Threads:", 8)) n = atoi(line + 8);
    if (f) fclose(f);
    return n;
}

int main(int argc, char **argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 3;
    pthread_t t;
    if (argc > 2 && !strcmp(argv[2], "pthread_exit")) {
        spike(NULL);
        if (pthread_create(&t, NULL, spike, NULL)) abort();
        pthread_exit(NULL);
    }
    // One spike on a thread that stays alive and idle (its heap's caches are the ones the
    // process must give back without a call), one on the main thread.
    pthread_barrier_t both;
    pthread_barrier_init(&both, NULL, 2);
    if (pthread_create(&t, NULL, spike, &both)) abort();
    spike(&both);
    pthread_join(t, NULL);
    if (argc > 2 && !strcmp(argv[2], "fork")) {
        pid_t child = fork();
        if (child < 0) abort();
        if (child > 0) {
            int status;
            waitpid(child, &status, 0);
            return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
        }
        spike(NULL); // peak_rss_kb counts from the fork: this spike is the child's own
    }
    long peak = peak_rss_kb();
    usleep((useconds_t)(seconds * 1e6));
    long now = rss_kb();
    printf("peak %ld KB, after %.1f s idle %ld KB (%.1f%%), threads %d\n", peak, seconds, now, 100.0 * now / peak,
           threads());
    return 0;
}
