/* The shapes where an allocator's memory, not its speed, is what users see (issue 47).
 * Usage: memshapes SHAPE [threads] [scale]
 *   threads  T threads (scale 1: 1,000) each keep 20 objects of each of 12 sizes from 16 B to
 *            8 KB live (330 KB a thread), all alive at once; then each frees its objects and
 *            ends, and the program waits 3 s (past the default decay delay).
 *   shape    one thread fills 200 MB (scale 1) with 16-512 B objects, frees a random 90% of
 *            them, and fills back up to 200 MB with 1-4 KB objects: a live set that changes
 *            the sizes it is made of.
 *   churn    threads come and go: T threads at a time (scale 1: 200 generations), each
 *            allocating and freeing a working set of 64 KB to 1 MB, then ending.
 * Prints, besides the RESULT line (wall time of the work, without the waits), the resident
 * memory that matters for each shape, from /proc/self/status:
 *   threads: rss_alive_kb (all threads holding), rss_after_kb (3 s after they ended),
 *            payload_kb (the bytes the threads asked for)
 *   shape:   peak_kb (VmHWM), live_kb (bytes live at the end)
 *   churn:   rss_end_kb after the last generation and the wait
 * Every object is filled and checked before it is freed: a wrong byte fails the run. */
#include "common.h"
#include <unistd.h>

static long status_kb(const char *field)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        die("cannot read /proc/self/status");
    char line[256];
    long kb = -1;
    size_t n = strlen(field);
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, field, n) && line[n] == ':') {
            kb = atol(line + n + 1);
            break;
        }
    fclose(f);
    return kb;
}

static void fill(unsigned char *p, size_t n, unsigned char tag)
{
    memset(p, tag, n);
}

static void check(const unsigned char *p, size_t n, unsigned char tag)
{
    if (p[0] != tag || p[n / 2] != tag || p[n - 1] != tag)
        die("an object's contents changed");
}

/* ---- threads: many threads, each holding a little ------------------------------------ */

#define PER_SIZE 20
static const size_t thread_sizes[12] = {16, 24, 32, 48, 64, 128, 256, 512, 1024, 2048, 4096, 8192};
static pthread_barrier_t all_hold, all_measured;

static void *holder(void *arg)
{
    unsigned char tag = (unsigned char)(uintptr_t)arg;
    unsigned char *objs[12][PER_SIZE];
    for (int i = 0; i < PER_SIZE; i++)
        for (int s = 0; s < 12; s++) {
            objs[s][i] = xmalloc(thread_sizes[s]);
            fill(objs[s][i], thread_sizes[s], tag);
        }
    pthread_barrier_wait(&all_hold);
    pthread_barrier_wait(&all_measured);
    for (int s = 0; s < 12; s++)
        for (int i = 0; i < PER_SIZE; i++) {
            check(objs[s][i], thread_sizes[s], tag);
            free(objs[s][i]);
        }
    return NULL;
}

static void shape_threads(long threads)
{
    size_t per_thread = 0;
    for (int s = 0; s < 12; s++)
        per_thread += PER_SIZE * thread_sizes[s];
    pthread_t *t = xmalloc(sizeof *t * (size_t)threads);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 128 * 1024);
    pthread_barrier_init(&all_hold, NULL, (unsigned)threads + 1);
    pthread_barrier_init(&all_measured, NULL, (unsigned)threads + 1);
    double t0 = now_s();
    for (long i = 0; i < threads; i++)
        if (pthread_create(&t[i], &attr, holder, (void *)(uintptr_t)(i * 7 + 1)))
            die("pthread_create failed");
    pthread_barrier_wait(&all_hold);
    double work = now_s() - t0;
    sleep_s(0.2); /* the threads settle in the barrier */
    long alive = status_kb("VmRSS");
    pthread_barrier_wait(&all_measured);
    t0 = now_s();
    for (long i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    work += now_s() - t0;
    sleep_s(3);
    long after = status_kb("VmRSS");
    long payload = (long)(per_thread * (size_t)threads / 1024);
    printf("RESULT workload=memthreads threads=%ld scale=1 secs=%.4f throughput=%.1f unit=threads/s ops=%ld "
           "rss_alive_kb=%ld rss_after_kb=%ld payload_kb=%ld vmsize_alive_kb=NA\n",
           threads, work, threads / work, threads, alive, after, payload);
    free(t);
}

/* ---- shape: a live set that changes the sizes it is made of --------------------------- */

struct obj {
    unsigned char *p;
    size_t n;
    unsigned char tag;
};

static void shape_change(double scale)
{
    size_t target = (size_t)(200.0 * 1024 * 1024 * scale);
    uint64_t rs = rng_seed(47);
    size_t cap = target / 16 + 16, count = 0, live = 0;
    struct obj *o = xmalloc(cap * sizeof *o);
    double t0 = now_s();
    while (live < target) {
        size_t n = 16 + rng_next(&rs) % (512 - 16 + 1);
        o[count].p = xmalloc(n);
        o[count].n = n;
        o[count].tag = (unsigned char)count;
        fill(o[count].p, n, o[count].tag);
        live += n;
        count++;
    }
    size_t kept = 0;
    for (size_t i = 0; i < count; i++) {
        if (rng_next(&rs) % 10 != 0) { /* 90% go */
            check(o[i].p, o[i].n, o[i].tag);
            free(o[i].p);
            live -= o[i].n;
        } else {
            o[kept++] = o[i];
        }
    }
    while (live < target) {
        size_t n = 1024 + rng_next(&rs) % (4096 - 1024 + 1);
        if (kept == cap)
            die("object table full");
        o[kept].p = xmalloc(n);
        o[kept].n = n;
        o[kept].tag = (unsigned char)(kept * 3);
        fill(o[kept].p, n, o[kept].tag);
        live += n;
        kept++;
    }
    double secs = now_s() - t0;
    long peak = status_kb("VmHWM");
    for (size_t i = 0; i < kept; i++) {
        check(o[i].p, o[i].n, o[i].tag);
        free(o[i].p);
    }
    printf("RESULT workload=memshape threads=1 scale=%g secs=%.4f throughput=%.1f unit=objects/s ops=%zu "
           "peak_kb=%ld live_kb=%zu\n",
           scale, secs, (double)(count + kept) / secs, count + kept, peak, live / 1024);
    free(o);
}

/* ---- churn: threads that come and go ------------------------------------------------- */

static void *churner(void *arg)
{
    uint64_t rs = rng_seed((uintptr_t)arg);
    size_t want = 64 * 1024 + rng_next(&rs) % (1024 * 1024 - 64 * 1024);
    size_t have = 0, n = 0;
    struct obj o[4096];
    while (have < want && n < 4096) {
        size_t sz = 16 + rng_next(&rs) % 2048;
        o[n].p = xmalloc(sz);
        o[n].n = sz;
        o[n].tag = (unsigned char)n;
        fill(o[n].p, sz, o[n].tag);
        have += sz;
        n++;
    }
    for (size_t i = 0; i < n; i++) {
        check(o[i].p, o[i].n, o[i].tag);
        free(o[i].p);
    }
    return NULL;
}

static void shape_churn(long threads, double scale)
{
    long generations = (long)(200 * scale);
    if (generations < 1)
        generations = 1;
    pthread_t *t = xmalloc(sizeof *t * (size_t)threads);
    double t0 = now_s();
    for (long g = 0; g < generations; g++) {
        for (long i = 0; i < threads; i++)
            if (pthread_create(&t[i], NULL, churner, (void *)(uintptr_t)(g * threads + i)))
                die("pthread_create failed");
        for (long i = 0; i < threads; i++)
            pthread_join(t[i], NULL);
    }
    double secs = now_s() - t0;
    sleep_s(3);
    printf("RESULT workload=memchurn threads=%ld scale=%g secs=%.4f throughput=%.1f unit=threads/s ops=%ld "
           "rss_end_kb=%ld peak_kb=%ld\n",
           threads, scale, secs, (double)(generations * threads) / secs, generations * threads,
           status_kb("VmRSS"), status_kb("VmHWM"));
    free(t);
}

int main(int argc, char **argv)
{
    if (argc < 2)
        die("usage: memshapes threads|shape|churn [threads] [scale]");
    long threads = argc > 2 ? atol(argv[2]) : 0;
    double scale = argc > 3 ? atof(argv[3]) : 1.0;
    if (!strcmp(argv[1], "threads"))
        shape_threads(threads > 0 ? threads : (long)(1000 * scale));
    else if (!strcmp(argv[1], "shape"))
        shape_change(scale);
    else if (!strcmp(argv[1], "churn"))
        shape_churn(threads > 0 ? threads : 8, scale);
    else
        die("unknown shape");
    return 0;
}
