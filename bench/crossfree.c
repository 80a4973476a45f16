/* Threads free each other's batches: each of T threads allocates a batch of BATCH objects of
 * random sizes 16 B..16 KB (uniform), publishes it in its mailbox, takes the batch its
 * neighbour published and frees it. So every thread allocates and frees at the same rate, and
 * every object it frees was allocated by another thread: remote frees in bulk across the size
 * classes up to medium objects, with no thread that only allocates (prodcons) or only frees.
 * The mailboxes form a ring (thread i takes from thread i+1's), each holding one batch.
 * Each object carries a tag at both ends, checked before the free.
 * Fixed work: scale 1 = 40,000 batches per thread. Reports objects freed per second.
 * Usage: crossfree [threads] [scale] */
#include "common.h"
#include <sched.h>
#include <stdatomic.h>

#define BATCH 256
#define MIN_SIZE 16
#define MAX_SIZE 16384

struct batch {
    unsigned char *obj[BATCH];
    uint32_t size[BATCH];
};

/* One batch in flight per thread; on its own line so neighbours do not share one. */
struct mailbox {
    _Alignas(64) _Atomic(struct batch *) batch;
};

struct worker {
    int id;
    uint64_t bad;
};

static struct mailbox *boxes;
static int nthreads;
static long batches_per_thread;

static unsigned char tag_of(uint32_t size)
{
    return (unsigned char)(size * 131 >> 4);
}

static struct batch *allocate_batch(uint64_t *rs)
{
    struct batch *b = xmalloc(sizeof *b);
    for (int j = 0; j < BATCH; j++) {
        uint32_t size = MIN_SIZE + (uint32_t)(rng_next(rs) % (MAX_SIZE - MIN_SIZE + 1));
        unsigned char *p = xmalloc(size);
        p[0] = p[size - 1] = tag_of(size);
        b->obj[j] = p;
        b->size[j] = size;
    }
    return b;
}

static uint64_t free_batch(struct batch *b)
{
    uint64_t bad = 0;
    for (int j = 0; j < BATCH; j++) {
        unsigned char t = tag_of(b->size[j]);
        bad += (b->obj[j][0] != t) + (b->obj[j][b->size[j] - 1] != t);
        free(b->obj[j]);
    }
    free(b);
    return bad;
}

/* Yields while the other side is behind: there may be more threads than cores. */
static void publish(struct mailbox *m, struct batch *b)
{
    struct batch *empty = NULL;
    while (!atomic_compare_exchange_weak_explicit(&m->batch, &empty, b, memory_order_release,
                                                  memory_order_relaxed)) {
        empty = NULL;
        sched_yield();
    }
}

static struct batch *take(struct mailbox *m)
{
    struct batch *b;
    while (!(b = atomic_exchange_explicit(&m->batch, NULL, memory_order_acquire)))
        sched_yield();
    return b;
}

static void *worker(void *arg)
{
    struct worker *w = arg;
    uint64_t rs = rng_seed((uint64_t)w->id + 77), bad = 0;
    struct mailbox *mine = &boxes[w->id], *neighbours = &boxes[(w->id + 1) % nthreads];
    for (long i = 0; i < batches_per_thread; i++) {
        publish(mine, allocate_batch(&rs));
        bad += free_batch(take(neighbours));
    }
    w->bad = bad;
    return NULL;
}

int main(int argc, char **argv)
{
    int threads;
    double scale;
    bench_args(argc, argv, 2, &threads, &scale);
    nthreads = threads;
    batches_per_thread = scaled(40000, scale, 10);
    boxes = aligned_alloc(64, sizeof *boxes * (size_t)threads);
    if (!boxes)
        die("out of memory");
    for (int t = 0; t < threads; t++)
        atomic_init(&boxes[t].batch, NULL);

    struct worker ws[threads];
    for (int t = 0; t < threads; t++)
        ws[t] = (struct worker){.id = t};
    double t0 = now_s();
    bench_run_threads(threads, worker, ws, sizeof *ws, NULL);
    double secs = now_s() - t0;
    free(boxes);

    uint64_t bad = 0;
    for (int t = 0; t < threads; t++)
        bad += ws[t].bad;
    if (bad) {
        fprintf(stderr, "crossfree: %llu objects lost their contents\n", (unsigned long long)bad);
        return 1;
    }
    bench_report("crossfree", threads, scale, secs, (double)batches_per_thread * threads * BATCH,
                 "objs/s", NULL);
    return 0;
}
