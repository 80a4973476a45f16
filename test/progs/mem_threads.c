// Memory that must not grow with the number of threads, and freed memory that goes back
// without waiting for a whole superblock to empty (docs/memory-policy.md). Under
// LD_PRELOAD=libbobox.so:
//   mem_threads threads N   N threads each keep 20 objects of each of 12 sizes (16 B to 8 KB,
//                           330 KB a thread) live at once: RSS at most 1.15x what they asked
//                           for (every thread with a heap of its own: 1.45x), and bobox's
//                           mapped bytes at most 2x RSS (a superblock of address space per
//                           heap: 20x at 300 threads). Then every thread frees its objects and
//                           ends: within a few decay delays RSS is back below 0.15x.
//   mem_threads pinned      60 MB of 64 B objects, all freed but one per 2 MB: every superblock
//                           stays in use. After malloc_trim(0), RSS is back within 8 MB of where
//                           it started (a free block keeps only the page of its link: 1/16);
//                           a free block used to keep its pages while its superblock was in
//                           use: all 60 MB stayed.
//   mem_threads churn       On one CPU, 60 threads one after another each allocate 64 KB to
//                           1 MB of 16 B to 2 KB objects (54 sizes) and free them all: the
//                           heap they take in turn grows by at most 2.4 MB (1.5 MB, about
//                           its widest thread's set and a partly used page per size). Each
//                           size's next block used to be whichever block was emptied last:
//                           every block it had ended with all 64 KB resident (3.7 MB).
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sched.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <time.h>
#include "bobox.h"
#include "mem_common.h"

#define PER_SIZE 20
static const size_t sizes[12] = {16, 24, 32, 48, 64, 128, 256, 512, 1024, 2048, 4096, 8192};
static pthread_barrier_t held, measured;

static size_t bobox_mapped(void) {
    void (*get)(struct bobox_stats *) = (void (*)(struct bobox_stats *))dlsym(RTLD_DEFAULT, "bobox_get_stats");
    CHECK(get != NULL, "bobox_get_stats missing: libbobox.so is not preloaded");
    struct bobox_stats s;
    get(&s);
    return s.mapped_bytes;
}

static void *holder(void *arg) {
    unsigned char tag = (unsigned char)(uintptr_t)arg, *objs[12][PER_SIZE];
    for (int i = 0; i < PER_SIZE; i++)
        for (int s = 0; s < 12; s++) {
            objs[s][i] = malloc(sizes[s]);
            CHECK(objs[s][i] != NULL, "malloc(%zu)", sizes[s]);
            memset(objs[s][i], tag, sizes[s]);
        }
    pthread_barrier_wait(&held);
    pthread_barrier_wait(&measured);
    for (int s = 0; s < 12; s++)
        for (int i = 0; i < PER_SIZE; i++) {
            CHECK(objs[s][i][0] == tag && objs[s][i][sizes[s] - 1] == tag, "an object changed");
            free(objs[s][i]);
        }
    return NULL;
}

static void threads(int n) {
    size_t per_thread = 0;
    for (int s = 0; s < 12; s++) per_thread += PER_SIZE * sizes[s];
    long payload_kb = (long)(per_thread * (size_t)n / 1024);
    pthread_t *t = malloc(sizeof *t * (size_t)n);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 128 * 1024);
    pthread_barrier_init(&held, NULL, (unsigned)n + 1);
    pthread_barrier_init(&measured, NULL, (unsigned)n + 1);
    long base_kb = rss_kb();
    for (int i = 0; i < n; i++) CHECK(pthread_create(&t[i], &attr, holder, (void *)(uintptr_t)(i + 1)) == 0, "pthread_create");
    pthread_barrier_wait(&held);
    usleep(100 * 1000); // the threads settle in the barrier
    long alive_kb = rss_kb() - base_kb;
    long mapped_kb = (long)(bobox_mapped() / 1024);
    printf("%d threads holding %ld KB: RSS +%ld KB (%.2fx), bobox mapped %ld KB (%.2fx RSS)\n", n, payload_kb, alive_kb,
           (double)alive_kb / payload_kb, mapped_kb, (double)mapped_kb / rss_kb());
    CHECK(alive_kb <= payload_kb * 115 / 100, "RSS %.2fx what the threads hold", (double)alive_kb / payload_kb);
    CHECK(mapped_kb <= 2 * rss_kb(), "bobox mapped %.2fx RSS", (double)mapped_kb / rss_kb());
    pthread_barrier_wait(&measured);
    for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
    // Back within a few decay delays (BOBOX_DECAY_MS, set short by the script): the threads
    // ended, their objects are free, and nothing allocates meanwhile.
    long decay_ms = env_long("BOBOX_DECAY_MS", 1000), after_kb = 0;
    int waited = 0;
    for (; waited < 8; waited++) {
        usleep((useconds_t)decay_ms * 1000);
        after_kb = rss_kb() - base_kb;
        if (after_kb <= payload_kb * 15 / 100 && waited >= 1) break;
    }
    printf("after the threads ended: RSS +%ld KB (%.2fx) after %d decay delays\n", after_kb,
           (double)after_kb / payload_kb, waited + 1);
    CHECK(after_kb <= payload_kb * 15 / 100, "RSS %.2fx the payload after the threads ended", (double)after_kb / payload_kb);
    free(t);
}

static void pinned(void) {
    enum { SIZE = 64, TOTAL = 60 << 20, KEEP_EVERY = (2 << 20) / SIZE };
    size_t n = TOTAL / SIZE;
    char **objs = malloc(n * sizeof *objs);
    touch_memory(objs, 0, n * sizeof *objs); // resident before the baseline
    long base_kb = rss_kb();
    for (size_t i = 0; i < n; i++) {
        objs[i] = malloc(SIZE);
        CHECK(objs[i] != NULL, "malloc");
        memset(objs[i], 7, SIZE);
    }
    long full_kb = rss_kb() - base_kb;
    for (size_t i = 0; i < n; i++)
        if (i % KEEP_EVERY) free(objs[i]);
    malloc_trim(0);
    long after_kb = rss_kb() - base_kb;
    printf("60 MB of 64 B objects: RSS +%ld KB; all but one per 2 MB freed, trimmed: +%ld KB\n", full_kb, after_kb);
    CHECK(full_kb > 50 * 1024, "the objects were not resident");
    CHECK(after_kb < 8 * 1024, "%ld KB stayed resident", after_kb);
    for (size_t i = 0; i < n; i += KEEP_EVERY) {
        CHECK(objs[i][0] == 7 && objs[i][SIZE - 1] == 7, "a kept object changed");
        free(objs[i]);
    }
    free(objs);
}

static uint64_t churn_seed = 12345;
static uint64_t churn_random(void) {
    churn_seed = churn_seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return churn_seed >> 33;
}

static void *churner(void *arg) {
    static unsigned char *objs[4096];
    static size_t sizes_of[4096];
    size_t want = 64 * 1024 + (size_t)(uintptr_t)arg % (1024 * 1024 - 64 * 1024), have = 0, n = 0;
    while (have < want && n < 4096) {
        sizes_of[n] = 16 + churn_random() % 2048;
        objs[n] = malloc(sizes_of[n]);
        CHECK(objs[n] != NULL, "malloc(%zu)", sizes_of[n]);
        memset(objs[n], (int)(n & 0xff), sizes_of[n]);
        have += sizes_of[n++];
    }
    for (size_t i = 0; i < n; i++) {
        CHECK(objs[i][0] == (unsigned char)i && objs[i][sizes_of[i] - 1] == (unsigned char)i, "an object changed");
        free(objs[i]);
    }
    return NULL;
}

static void churn(void) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(sched_getcpu(), &one);
    CHECK(sched_setaffinity(0, sizeof one, &one) == 0, "sched_setaffinity"); // one shared heap slot
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 64 * 1024);
    pthread_t t;
    // The first thread's stack and the heap's own pages before the baseline.
    CHECK(pthread_create(&t, &attr, churner, (void *)(uintptr_t)0) == 0, "pthread_create");
    pthread_join(t, NULL);
    long base_kb = rss_kb();
    for (int g = 0; g < 60; g++) {
        uintptr_t want = (uintptr_t)churn_random() * 4096;
        CHECK(pthread_create(&t, &attr, churner, (void *)want) == 0, "pthread_create");
        pthread_join(t, NULL);
    }
    long grown_kb = rss_kb() - base_kb;
    printf("60 threads one after another, each up to 1 MB of 16 B-2 KB objects: RSS +%ld KB\n", grown_kb);
    CHECK(grown_kb <= 2400, "RSS grew by %ld KB", grown_kb);
}

int main(int argc, char **argv) {
    CHECK(argc >= 2, "usage: mem_threads threads N | pinned | churn");
    if (!strcmp(argv[1], "threads"))
        threads(argc > 2 ? atoi(argv[2]) : 300);
    else if (!strcmp(argv[1], "pinned"))
        pinned();
    else if (!strcmp(argv[1], "churn"))
        churn();
    else
        CHECK(0, "unknown mode %s", argv[1]);
    printf("ok\n");
    return 0;
}
