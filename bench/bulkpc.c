/* Producer -> consumer in bulk, the shape of Lever and Boreham's xmalloc test (USENIX 2000):
 * half the threads allocate batches of 4,096 objects of 64 B, write the first 64 bytes of
 * each and push the batch onto one mutex-protected stack of at most 100 batches; the other
 * half pop batches and free every object, in the order it was allocated. Up to 400,000
 * objects are in flight and every free is remote: what the allocator pays per object to
 * take back memory freed by another thread, in long runs from the same blocks.
 * The consumer checks each object's first word (its batch and index), so a broken allocator
 * fails instead of running fast. Reports objects per second (allocated, passed on, freed).
 * Usage: bulkpc [threads] [scale]   (scale 1 = 12M objects, about 1.5 s) */
#include "common.h"
#include <pthread.h>

#define BATCH 4096
#define OBJECT_SIZE 64
#define STACK_MAX 100

struct batch {
    uint64_t id;
    void *obj[BATCH];
};

static struct {
    pthread_mutex_t mu;
    pthread_cond_t not_empty, not_full;
    struct batch *stack[STACK_MAX];
    int n;
    int producers_left;
} s = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER, {0}, 0, 0};

static long batches_per_producer;
static uint64_t bad_objects;

static void push(struct batch *b)
{
    pthread_mutex_lock(&s.mu);
    while (s.n == STACK_MAX)
        pthread_cond_wait(&s.not_full, &s.mu);
    s.stack[s.n++] = b;
    pthread_cond_signal(&s.not_empty);
    pthread_mutex_unlock(&s.mu);
}

/* NULL once every producer finished and the stack is empty. */
static struct batch *pop(void)
{
    pthread_mutex_lock(&s.mu);
    while (s.n == 0 && s.producers_left > 0)
        pthread_cond_wait(&s.not_empty, &s.mu);
    struct batch *b = NULL;
    if (s.n > 0) {
        b = s.stack[--s.n];
        pthread_cond_signal(&s.not_full);
    }
    pthread_mutex_unlock(&s.mu);
    return b;
}

static void *producer(void *arg)
{
    uint64_t id = (uint64_t)(intptr_t)arg << 32;
    for (long i = 0; i < batches_per_producer; i++, id++) {
        struct batch *b = xmalloc(sizeof *b);
        b->id = id;
        for (int j = 0; j < BATCH; j++) {
            uint64_t *o = xmalloc(OBJECT_SIZE);
            o[0] = id * BATCH + (uint64_t)j;
            memset(o + 1, j, OBJECT_SIZE - sizeof *o);
            b->obj[j] = o;
        }
        push(b);
    }
    pthread_mutex_lock(&s.mu);
    if (--s.producers_left == 0)
        pthread_cond_broadcast(&s.not_empty);
    pthread_mutex_unlock(&s.mu);
    return NULL;
}

static void *consumer(void *arg)
{
    (void)arg;
    uint64_t bad = 0;
    struct batch *b;
    while ((b = pop())) {
        for (int j = 0; j < BATCH; j++) {
            uint64_t *o = b->obj[j];
            bad += o[0] != b->id * BATCH + (uint64_t)j;
            free(o);
        }
        free(b);
    }
    __atomic_fetch_add(&bad_objects, bad, __ATOMIC_RELAXED);
    return NULL;
}

int main(int argc, char **argv)
{
    int threads;
    double scale;
    bench_args(argc, argv, 4, &threads, &scale);
    int np = threads / 2 > 0 ? threads / 2 : 1;
    int nc = threads - np > 0 ? threads - np : 1;
    long objects = scaled(12e6, scale, 2L * BATCH);
    batches_per_producer = objects / BATCH / np;
    if (batches_per_producer < 1)
        batches_per_producer = 1;
    s.producers_left = np;

    pthread_t th[np + nc];
    double t0 = now_s();
    bench_spawn_threads(th, np, producer, NULL, 0);
    bench_spawn_threads(th + np, nc, consumer, NULL, 0);
    bench_join_threads(th, np + nc, NULL);
    double secs = now_s() - t0;
    if (bad_objects) {
        fprintf(stderr, "bulkpc: %llu objects changed on their way to the consumer\n",
                (unsigned long long)bad_objects);
        return 1;
    }
    bench_report("bulkpc", np + nc, scale, secs, (double)batches_per_producer * np * BATCH, "objs/s", NULL);
    return 0;
}
