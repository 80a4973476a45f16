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
//   mem_threads join        The main thread builds 30 MB of objects of 16 B to 1 KB and
//                           joins two workers that replace them at random (other sizes):
//                           when they end, what bobox counts in use is at most 1.1x what is
//                           live. The main thread's objects they freed stayed in use while it
//                           waited, its heap undrained (1.2x after 0.5 s, 2x after 2 s).
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sched.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
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

/* ---- join: workers replace what the main thread built while it waits ---------------------- */

#define JOIN_SLOTS 60000
#define JOIN_OPS 1500000 /* per worker: each slot replaced about 50 times in all */
static _Atomic(unsigned char *) join_slots[JOIN_SLOTS];

static uint64_t join_next(uint64_t *rs) {
    *rs = *rs * 6364136223846793005ULL + 1442695040888963407ULL;
    return *rs >> 33;
}

/* An object of 16 B to 1 KB that holds its size at both ends. */
static unsigned char *join_make(uint64_t *rs) {
    uint32_t size = 16 + (uint32_t)(join_next(rs) % 1009);
    unsigned char *p = malloc(size);
    CHECK(p != NULL, "malloc(%u) failed", size);
    memcpy(p, &size, sizeof size);
    memcpy(p + size - sizeof size, &size, sizeof size);
    return p;
}

static size_t join_size(const unsigned char *p) {
    uint32_t size, tail;
    memcpy(&size, p, sizeof size);
    CHECK(size >= 16 && size <= 1024, "an object's size was overwritten: %u", size);
    memcpy(&tail, p + size - sizeof tail, sizeof tail);
    CHECK(tail == size, "an object's contents changed");
    return size;
}

static void join_drop(unsigned char *p) {
    join_size(p);
    free(p);
}

static pthread_barrier_t join_done;
static long join_end_rss_kb;
static size_t join_end_in_use, join_end_live;

static void *join_worker(void *arg) {
    uint64_t rs = (uintptr_t)arg + 99;
    /* The main thread waits in pthread_join meanwhile: it leaves its heap after 100 ms there. */
    struct timespec wait = {0, 200 * 1000 * 1000};
    nanosleep(&wait, NULL);
    for (long i = 0; i < JOIN_OPS; i++) {
        unsigned char *p = join_make(&rs);
        unsigned char *old = atomic_exchange(&join_slots[join_next(&rs) % JOIN_SLOTS], p);
        join_drop(old);
    }
    /* Read while the main thread still waits: its heap holds what it was not given back. */
    if (pthread_barrier_wait(&join_done) == PTHREAD_BARRIER_SERIAL_THREAD) {
        void (*get)(struct bobox_stats *) = (void (*)(struct bobox_stats *))dlsym(RTLD_DEFAULT, "bobox_get_stats");
        CHECK(get != NULL, "bobox_get_stats missing: libbobox.so is not preloaded");
        struct bobox_stats st;
        get(&st);
        join_end_in_use = st.allocated_bytes;
        join_end_rss_kb = rss_kb();
        for (size_t i = 0; i < JOIN_SLOTS; i++) join_end_live += join_size(atomic_load(&join_slots[i]));
    }
    return NULL;
}

static void join_reuse(void) {
    uint64_t rs = 12345;
    for (size_t i = 0; i < JOIN_SLOTS; i++) atomic_store(&join_slots[i], join_make(&rs));
    long built_kb = rss_kb();
    pthread_t t[2];
    pthread_barrier_init(&join_done, NULL, 2);
    for (uintptr_t k = 0; k < 2; k++) CHECK(pthread_create(&t[k], NULL, join_worker, (void *)k) == 0, "pthread_create");
    for (int k = 0; k < 2; k++) CHECK(pthread_join(t[k], NULL) == 0, "pthread_join");
    long grown_kb = peak_rss_kb() - built_kb;
    printf("join: RSS %ld KB when built (30 MB of objects), peak %ld KB more while the workers replaced them, "
           "%ld KB when they ended; then %zu KB in use for %zu KB live\n",
           built_kb, grown_kb, join_end_rss_kb, join_end_in_use / 1024, join_end_live / 1024);
    /* In use counts what was handed out and not yet taken back: the main thread's objects
     * that the workers freed stayed in use while it waited (1.2x after 0.5 s, and growing:
     * 2x after 2 s, all it had built). Kept objects count as freed; bins round sizes up. */
    CHECK(join_end_in_use * 10 <= join_end_live * 11, "%zu KB in use for %zu KB live", join_end_in_use / 1024,
          join_end_live / 1024);
    for (size_t i = 0; i < JOIN_SLOTS; i++) join_drop(atomic_load(&join_slots[i]));
}

int main(int argc, char **argv) {
    CHECK(argc >= 2, "usage: mem_threads threads N | pinned | churn | join");
    if (!strcmp(argv[1], "threads"))
        threads(argc > 2 ? atoi(argv[2]) : 300);
    else if (!strcmp(argv[1], "pinned"))
        pinned();
    else if (!strcmp(argv[1], "churn"))
        churn();
    else if (!strcmp(argv[1], "join"))
        join_reuse();
    else
        CHECK(0, "unknown mode %s", argv[1]);
    printf("ok\n");
    return 0;
}
