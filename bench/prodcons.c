/* (b) Producer/consumer: half the threads allocate batches of objects, the other half read
 * and free them. Every free is remote; the allocator must move memory back to the producers. */
#include "common.h"
#include <pthread.h>

#define BATCH 64
#define QCAP 256

struct batch {
    int n;
    unsigned char *obj[BATCH];
};

static struct {
    pthread_mutex_t mu;
    pthread_cond_t not_empty, not_full;
    struct batch *ring[QCAP];
    unsigned head, tail;
    int producers_left;
} q = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER,
       {0}, 0, 0, 0};

static long batches_per_producer;

static void push(struct batch *b)
{
    pthread_mutex_lock(&q.mu);
    while (q.tail - q.head == QCAP)
        pthread_cond_wait(&q.not_full, &q.mu);
    q.ring[q.tail++ % QCAP] = b;
    pthread_cond_signal(&q.not_empty);
    pthread_mutex_unlock(&q.mu);
}

/* NULL once all producers finished and the queue is drained. */
static struct batch *pop(void)
{
    pthread_mutex_lock(&q.mu);
    while (q.tail == q.head && q.producers_left > 0)
        pthread_cond_wait(&q.not_empty, &q.mu);
    struct batch *b = NULL;
    if (q.tail != q.head) {
        b = q.ring[q.head++ % QCAP];
        pthread_cond_signal(&q.not_full);
    }
    pthread_mutex_unlock(&q.mu);
    return b;
}

static void *producer(void *arg)
{
    uint64_t rs = rng_seed((uint64_t)(long)arg);
    for (long i = 0; i < batches_per_producer; i++) {
        struct batch *b = xmalloc(sizeof *b);
        b->n = BATCH;
        for (int j = 0; j < BATCH; j++) {
            size_t sz = 16 + rng_next(&rs) % (512 - 16 + 1);
            b->obj[j] = xmalloc(sz);
            memset(b->obj[j], j, sz < 32 ? sz : 32);
        }
        push(b);
    }
    pthread_mutex_lock(&q.mu);
    if (--q.producers_left == 0)
        pthread_cond_broadcast(&q.not_empty);
    pthread_mutex_unlock(&q.mu);
    return NULL;
}

static void *consumer(void *arg)
{
    (void)arg;
    uint64_t sum = 0;
    struct batch *b;
    while ((b = pop())) {
        for (int j = 0; j < b->n; j++) {
            sum += b->obj[j][0];
            free(b->obj[j]);
        }
        free(b);
    }
    bench_sink += sum;
    return NULL;
}

int main(int argc, char **argv)
{
    int threads;
    double scale;
    bench_args(argc, argv, 4, &threads, &scale);
    int np = threads / 2 > 0 ? threads / 2 : 1;
    int nc = threads - np > 0 ? threads - np : 1;
    long objects = scaled(24e6, scale, 10000);
    batches_per_producer = objects / BATCH / np;
    q.producers_left = np;

    pthread_t th[np + nc];
    double t0 = now_s();
    bench_spawn_threads(th, np, producer, NULL, 0);
    bench_spawn_threads(th + np, nc, consumer, NULL, 0);
    bench_join_threads(th, np + nc, NULL);
    double secs = now_s() - t0;
    bench_report("prodcons", np + nc, scale, secs, (double)batches_per_producer * np * BATCH,
                 "objs/s", NULL);
    return 0;
}
