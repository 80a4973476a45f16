// The reclaimer and the owner's decay tick in a program that starts small and grows:
//   1. a thread allocates 8 MB of small objects, frees them and ends: its heap keeps those
//      pages for the next thread, so the reclaimer must start at once (to give them back if
//      none comes) although the process is small, and give them back while the program
//      makes no call at all; printed as "reclaimer yes|no" and "exit_pages_back_kb N";
//   2. the program then maps 96 MB (past the size at which every heap's next slow path ticks
//      once, for the reclaimer to take note) and alternates two sizes, each round filling
//      and emptying 2-4 MB of one in blocks a few live objects keep: its page faults over
//      that phase are printed as "churn_faults N". Ticks once per decay delay leave the
//      other size's pages alone; a tick at every slow path gives them back each round, to
//      be faulted in again (found with BOBOX_STATS_LIVE=1, which starts the reclaimer at
//      once: every slow path ticked for the rest of the run).
#define _GNU_SOURCE
#include <dirent.h>
#include <sys/syscall.h>
#include <pthread.h>
#include <sys/resource.h>
#include <time.h>
#include "mem_common.h"

#define ROUND_OBJECTS 4096

static void *objs[ROUND_OBJECTS];

#define THREAD_OBJECTS (8 << 20) / 64

static void *busy_thread(void *arg) {
    void **held = arg;
    for (int i = 0; i < THREAD_OBJECTS; i++) touch_memory(held[i] = malloc(64), 1, 64);
    for (int i = 0; i < THREAD_OBJECTS; i++) free(held[i]);
    return NULL;
}

// The readings below make no malloc: a call of ours could start the reclaimer at a tick.
static int read_small(const char *path, char *buf, size_t size) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) return 0;
    ssize_t n = read(fd, buf, size - 1);
    close(fd);
    buf[n > 0 ? n : 0] = '\0';
    return n > 0;
}

static int reclaimer_running(void) {
    static char entries[16384];
    int dir = open("/proc/self/task", O_RDONLY | O_DIRECTORY);
    CHECK(dir >= 0, "open /proc/self/task");
    int found = 0;
    long n;
    while ((n = syscall(SYS_getdents64, dir, entries, sizeof entries)) > 0)
        for (long at = 0; at < n;) {
            struct dirent64 *e = (struct dirent64 *)(entries + at);
            char path[300], name[64];
            snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
            if (read_small(path, name, sizeof name) && !strncmp(name, "bobox-reclaim", 13)) found = 1;
            at += e->d_reclen;
        }
    close(dir);
    return found;
}

static long resident_kb(void) {
    char statm[128];
    long pages = 0, resident = 0;
    CHECK(read_small("/proc/self/statm", statm, sizeof statm), "read /proc/self/statm");
    CHECK(sscanf(statm, "%ld %ld", &pages, &resident) == 2, "statm: %s", statm);
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
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
    void **held = malloc(THREAD_OBJECTS * sizeof *held);
    CHECK(held != NULL, "malloc");
    pthread_t t;
    CHECK(pthread_create(&t, NULL, busy_thread, held) == 0, "pthread_create");
    pthread_join(t, NULL);
    // No call of ours from here until the reclaimer ran and the pages went back: three
    // decay delays (BOBOX_DECAY_MS, default 1 s) and a pass.
    long ended = resident_kb();
    const char *decay_setting = getenv("BOBOX_DECAY_MS");
    double decay_s = (decay_setting ? atof(decay_setting) : 1000) / 1000, start = now_s();
    int running = 0;
    long back = 0;
    while (now_s() - start < 3 * decay_s + 0.5) {
        running = running || reclaimer_running();
        back = ended - resident_kb();
        if (running && back >= 6 * 1024) break;
        usleep(20000);
    }
    printf("reclaimer %s\nexit_pages_back_kb %ld\n", running ? "yes" : "no", back);
    free(held);

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
