/* Random size at random position: 256 K live objects whose sizes follow a power law (Pareto
 * with exponent 1: P(size > s) = 8 / s, from 8 B to a 48 KB cap; half are under 16 B, 1 in 128
 * is over 1 KB), accessed 80/20: 80% of the operations hit the hottest 20% of the slots.
 * Each operation frees the object in the chosen slot and allocates a new one there, writing
 * all of it. The threads split the slots (each owns 256 K / T of them) and the operations;
 * each thread fills its own slots before the clock starts, so frees are local, as in a
 * program whose threads build and then work on their own data.
 * Every object is filled with a byte derived from its slot and size, checked at both ends
 * before it is freed; a mismatch fails the run.
 * Usage: powerlaw [threads] [scale]   (scale 1 = 16 M operations in all) */
#include "common.h"
#include <pthread.h>

#define LIVE (256 * 1024)
#define MIN_SIZE 8
#define MAX_SIZE (48 * 1024)

struct part {
    unsigned char **slot;
    uint32_t *size;
    long nslots, ops, id;
    uint64_t bad, bytes;
};

/* Inverse of the Pareto CDF with exponent 1: MIN / u for u uniform in (0, 1]. */
static uint32_t draw_size(uint64_t *rs)
{
    for (;;) {
        double u = (double)((rng_next(rs) >> 11) + 1) * 0x1.0p-53;
        double s = MIN_SIZE / u;
        if (s <= MAX_SIZE)
            return (uint32_t)s;
    }
}

static unsigned char fill_byte(long slot, uint32_t size)
{
    return (unsigned char)(slot * 7 + size);
}

static void put(struct part *p, long i, uint64_t *rs)
{
    uint32_t sz = draw_size(rs);
    unsigned char *o = xmalloc(sz);
    memset(o, fill_byte(i, sz), sz);
    p->slot[i] = o;
    p->size[i] = sz;
    p->bytes += sz;
}

/* 80% of picks from the first fifth of the slots, 20% from the rest. */
static long pick(const struct part *p, uint64_t *rs)
{
    uint64_t r = rng_next(rs);
    long hot = p->nslots / 5;
    if (r % 10 < 8)
        return (long)((r >> 8) % (uint64_t)hot);
    return hot + (long)((r >> 8) % (uint64_t)(p->nslots - hot));
}

static pthread_barrier_t filled;

static void *worker(void *arg)
{
    struct part *p = arg;
    uint64_t rs = rng_seed((uint64_t)p->id + 900);
    for (long i = 0; i < p->nslots; i++)
        put(p, i, &rs);
    pthread_barrier_wait(&filled);
    for (long k = 0; k < p->ops; k++) {
        long i = pick(p, &rs);
        unsigned char *o = p->slot[i];
        unsigned char b = fill_byte(i, p->size[i]);
        p->bad += (o[0] != b) + (o[p->size[i] - 1] != b);
        free(o);
        put(p, i, &rs);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int threads;
    double scale;
    bench_args(argc, argv, 1, &threads, &scale);
    long ops = scaled(16e6, scale, 100000);

    struct part *parts = xmalloc(sizeof *parts * (size_t)threads);
    for (int t = 0; t < threads; t++) {
        struct part *p = &parts[t];
        memset(p, 0, sizeof *p);
        p->id = t;
        p->nslots = LIVE / threads;
        p->ops = ops / threads;
        p->slot = xmalloc(sizeof *p->slot * (size_t)p->nslots);
        p->size = xmalloc(sizeof *p->size * (size_t)p->nslots);
    }

    pthread_t th[threads];
    if (pthread_barrier_init(&filled, NULL, (unsigned)threads + 1))
        die("pthread_barrier_init");
    bench_spawn_threads(th, threads, worker, parts, sizeof *parts);
    pthread_barrier_wait(&filled);
    double t0 = now_s();
    bench_join_threads(th, threads, NULL);
    double secs = now_s() - t0;

    uint64_t bad = 0, bytes = 0;
    for (int t = 0; t < threads; t++) {
        struct part *p = &parts[t];
        for (long i = 0; i < p->nslots; i++)
            free(p->slot[i]);
        free(p->slot);
        free(p->size);
        bad += p->bad;
        bytes += p->bytes;
    }
    free(parts);
    if (bad) {
        fprintf(stderr, "powerlaw: %llu objects lost their contents\n", (unsigned long long)bad);
        return 1;
    }
    char extra[64];
    snprintf(extra, sizeof extra, "mean_size=%.1f", (double)bytes / (double)(ops / threads * threads + LIVE));
    bench_report("powerlaw", threads, scale, secs, (double)(ops / threads) * threads, "ops/s", extra);
    return 0;
}
