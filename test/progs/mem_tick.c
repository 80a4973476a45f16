// The reclaimer and the owner's decay tick in a program that starts small and grows:
//   1. a thread allocates 2 MB of small objects, frees them and ends: its heap keeps those
//      pages for the next thread, so the reclaimer must start (to give them back if none
//      comes) although the process is small; printed as "reclaimer yes|no";
//   2. the program then maps 96 MB (past the size at which every heap's next slow path ticks
//      once, for the reclaimer to take note) and alternates two sizes, each round filling
//      and emptying 2-4 MB of one in blocks a few live objects keep: its page faults over
//      that phase are printed as "churn_faults N". Ticks once per decay delay leave the
//      other size's pages alone; a tick at every slow path gives them back each round, to
//      be faulted in again (found with BOBOX_STATS_LIVE=1, which starts the reclaimer at
//      once: every slow path ticked for the rest of the run).
#define _GNU_SOURCE
#include <dirent.h>
#include <pthread.h>
#include <sys/resource.h>
#include <time.h>
#include "mem_common.h"

#define ROUND_OBJECTS 4096

static void *objs[ROUND_OBJECTS];

static void *busy_thread(void *arg) {
    (void)arg;
    for (int i = 0; i < ROUND_OBJECTS; i++) touch_memory(objs[i] = malloc(64), 1, 64);
    for (int i = 0; i < ROUND_OBJECTS; i++) free(objs[i]);
    return NULL;
}

static int reclaimer_running(void) {
    DIR *d = opendir("/proc/self/task");
    CHECK(d != NULL, "opendir /proc/self/task");
    int found = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        char path[300], name[64] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        if (fgets(name, sizeof name, f) && !strncmp(name, "bobox-reclaim", 13)) found = 1;
        fclose(f);
    }
    closedir(d);
    return found;
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static long minor_faults(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_minflt;
}

static void round_of(size_t size) {
    for (int i = 0; i < ROUND_OBJECTS; i++) touch_memory(objs[i] = malloc(size), 1, size);
    for (int i = 0; i < ROUND_OBJECTS; i++) free(objs[i]);
}

// One object in 32 of a round of each size stays live: their blocks stay in use, partly
// free, and a tick gives back the free pages of a size that allocated nothing since the last.
static void *pinned[2][ROUND_OBJECTS / 32];
static void pin_blocks(int which, size_t size) {
    for (int i = 0; i < ROUND_OBJECTS; i++) touch_memory(objs[i] = malloc(size), 1, size);
    for (int i = 0; i < ROUND_OBJECTS; i++)
        if (i % 32)
            free(objs[i]);
        else
            pinned[which][i / 32] = objs[i];
}

int main(void) {
    pthread_t t;
    CHECK(pthread_create(&t, NULL, busy_thread, NULL) == 0, "pthread_create");
    pthread_join(t, NULL);
    // The reclaimer starts at a tick of a running thread: slow paths for up to three delays.
    double start = now_s();
    int running = 0;
    while (!(running = reclaimer_running()) && now_s() - start < 3.5) {
        round_of(64); // a slow path or more: the tick runs there
        usleep(5000);
    }
    printf("reclaimer %s\n", running ? "yes" : "no");

    char *big = malloc(96 << 20);
    CHECK(big != NULL, "malloc(96 MB)");
    touch_memory(big, 1, 96 << 20);
    pin_blocks(0, 512);
    pin_blocks(1, 1024);
    for (int r = 0; r < 4; r++) round_of(r % 2 ? 1024 : 512); // both sizes' pages resident
    long before = minor_faults();
    for (int r = 0; r < 200; r++) round_of(r % 2 ? 1024 : 512);
    printf("churn_faults %ld\n", minor_faults() - before);
    for (int i = 0; i < ROUND_OBJECTS / 32; i++) free(pinned[0][i]), free(pinned[1][i]);
    free(big);
    return 0;
}
