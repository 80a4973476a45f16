/* Server thread replacement, the shape of Larson & Krishnan (1998): T threads each own an
 * array of SLOTS objects; each round a thread frees the object of a random slot and
 * allocates a new 8..1000 B object there. After GENERATION rounds the thread starts a
 * successor, hands it the array and exits. So objects are freed by a thread other than the
 * one that allocated them, and an exited thread's heap must be found and reused.
 * The main thread fills the arrays, so the first generation's frees are remote too.
 * Fixed work (not fixed time): scale 1 = 50 M rounds in all. Every object carries a tag
 * derived from its slot and size, checked before it is freed; a mismatch fails the run.
 * Usage: handoff [threads] [scale] */
#include "common.h"
#include <pthread.h>
#include <semaphore.h>

#define SLOTS 5000
#define GENERATION 4000
#define MIN_SIZE 8
#define MAX_SIZE 1000

struct lineage {
    unsigned char *slot[SLOTS];
    size_t size[SLOTS];
    long rounds_left;
    uint64_t rng;
    long generations;
    uint64_t bad_tags;
};

static sem_t finished;

static unsigned char tag_of(long slot, size_t size)
{
    return (unsigned char)(slot * 31 + size);
}

/* Writes the tag at both ends, as a server fills a new object's header and trailer. */
static void fill(struct lineage *l, long i, uint64_t *rs)
{
    size_t sz = MIN_SIZE + rng_next(rs) % (MAX_SIZE - MIN_SIZE + 1);
    unsigned char *p = xmalloc(sz);
    p[0] = p[sz - 1] = tag_of(i, sz);
    l->slot[i] = p;
    l->size[i] = sz;
}

static void *generation(void *arg)
{
    struct lineage *l = arg;
    uint64_t rs = l->rng;
    long n = l->rounds_left < GENERATION ? l->rounds_left : GENERATION;
    for (long r = 0; r < n; r++) {
        long i = (long)(rng_next(&rs) % SLOTS);
        unsigned char *old = l->slot[i];
        unsigned char t = tag_of(i, l->size[i]);
        l->bad_tags += (old[0] != t) + (old[l->size[i] - 1] != t);
        free(old);
        fill(l, i, &rs);
    }
    l->rng = rs;
    l->rounds_left -= n;
    l->generations++;
    if (l->rounds_left > 0) {
        pthread_t next;
        pthread_attr_t at;
        pthread_attr_init(&at);
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&next, &at, generation, l))
            die("pthread_create");
        pthread_attr_destroy(&at);
    } else {
        sem_post(&finished);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int threads;
    double scale;
    bench_args(argc, argv, 2, &threads, &scale);
    long total = scaled(50e6, scale, 20000);
    if (sem_init(&finished, 0, 0))
        die("sem_init");

    struct lineage *ls = xmalloc(sizeof *ls * (size_t)threads);
    for (int t = 0; t < threads; t++) {
        struct lineage *l = &ls[t];
        memset(l, 0, sizeof *l);
        l->rng = rng_seed((uint64_t)t + 300);
        l->rounds_left = total / threads;
        for (long i = 0; i < SLOTS; i++)
            fill(l, i, &l->rng);
    }

    double t0 = now_s();
    for (int t = 0; t < threads; t++) {
        pthread_t th;
        pthread_attr_t at;
        pthread_attr_init(&at);
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&th, &at, generation, &ls[t]))
            die("pthread_create");
        pthread_attr_destroy(&at);
    }
    for (int t = 0; t < threads; t++)
        sem_wait(&finished);
    double secs = now_s() - t0;

    uint64_t bad = 0;
    long gens = 0;
    for (int t = 0; t < threads; t++) {
        for (long i = 0; i < SLOTS; i++)
            free(ls[t].slot[i]);
        bad += ls[t].bad_tags;
        gens += ls[t].generations;
    }
    free(ls);
    if (bad) {
        fprintf(stderr, "handoff: %llu objects lost their contents\n", (unsigned long long)bad);
        return 1;
    }
    char extra[64];
    snprintf(extra, sizeof extra, "threads_started=%ld", gens);
    bench_report("handoff", threads, scale, secs, (double)(total / threads) * threads, "ops/s", extra);
    return 0;
}
