/* The Larson & Krishnan server benchmark ("Memory allocation for long-running server
 * applications", ISMM 1998) with its published parameters: T threads each own SLOTS objects
 * of 8..1000 B (uniform), all allocated by the main thread before the clock starts. A thread
 * repeatedly frees the object of a random slot and allocates a new one of a random size there;
 * after ROUNDS x SLOTS replacements it starts a successor that takes over its slots, and exits.
 * So a successor frees what its predecessor allocated (the remote frees), and an exited
 * thread's memory must be reused. Unlike handoff (fixed work, short generations), this runs
 * for a fixed time and reports replacements per second.
 * Each object's first byte holds a tag of its slot, checked before the free.
 * Usage: larson [threads] [scale]   (scale 1 = 5 s, the published run length) */
#include "common.h"
#include <semaphore.h>
#include <stdatomic.h>
#include <stdbool.h>

#define SLOTS 5000
#define ROUNDS 100
#define MIN_SIZE 8
#define MAX_SIZE 1000

struct lineage {
    unsigned char *slot[SLOTS];
    uint64_t rng;
    long ops;
    long generations;
    uint64_t bad_tags;
};

static atomic_bool stop;
static sem_t finished;

static unsigned char *new_object(long slot, uint64_t *rs)
{
    size_t size = MIN_SIZE + rng_next(rs) % (MAX_SIZE - MIN_SIZE + 1);
    unsigned char *p = xmalloc(size);
    p[0] = (unsigned char)slot;
    return p;
}

static void *generation(void *arg);

/* Detached: the predecessor exits at once and nobody joins it, as in the original. */
static void start_detached(struct lineage *l)
{
    pthread_t th;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&th, &at, generation, l))
        die("pthread_create");
    pthread_attr_destroy(&at);
}

static void *generation(void *arg)
{
    struct lineage *l = arg;
    uint64_t rs = l->rng, bad = 0;
    long done = 0;
    /* The stop flag is read every replacement: a generation lasts tens of milliseconds,
     * too coarse a step for a run of 0.5 s. */
    while (done < (long)ROUNDS * SLOTS && !atomic_load_explicit(&stop, memory_order_relaxed)) {
        long i = (long)(rng_next(&rs) % SLOTS);
        bad += l->slot[i][0] != (unsigned char)i;
        free(l->slot[i]);
        l->slot[i] = new_object(i, &rs);
        done++;
    }
    l->rng = rs;
    l->ops += done;
    l->bad_tags += bad;
    l->generations++;
    if (atomic_load(&stop))
        sem_post(&finished);
    else
        start_detached(l);
    return NULL;
}

int main(int argc, char **argv)
{
    int threads;
    double scale;
    bench_args(argc, argv, 2, &threads, &scale);
    double run_secs = 5.0 * scale;

    if (sem_init(&finished, 0, 0))
        die("sem_init");
    struct lineage *ls = xmalloc(sizeof *ls * (size_t)threads);
    for (int t = 0; t < threads; t++) {
        struct lineage *l = &ls[t];
        memset(l, 0, sizeof *l);
        l->rng = rng_seed((uint64_t)t + 4141);
        for (long i = 0; i < SLOTS; i++)
            l->slot[i] = new_object(i, &l->rng);
    }

    double t0 = now_s();
    for (int t = 0; t < threads; t++)
        start_detached(&ls[t]);
    sleep_s(run_secs);
    atomic_store(&stop, true);
    for (int t = 0; t < threads; t++)
        sem_wait(&finished);
    double secs = now_s() - t0;

    uint64_t bad = 0;
    long ops = 0, gens = 0;
    for (int t = 0; t < threads; t++) {
        for (long i = 0; i < SLOTS; i++)
            free(ls[t].slot[i]);
        bad += ls[t].bad_tags;
        ops += ls[t].ops;
        gens += ls[t].generations;
    }
    free(ls);
    if (bad) {
        fprintf(stderr, "larson: %llu objects lost their contents\n", (unsigned long long)bad);
        return 1;
    }
    char extra[64];
    snprintf(extra, sizeof extra, "threads_started=%ld", gens);
    bench_report("larson", threads, scale, secs, (double)ops, "ops/s", extra);
    return 0;
}
