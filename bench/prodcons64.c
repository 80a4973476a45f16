/* Producer -> consumer of one size: a producer thread mallocs 64 B objects and passes each
 * through a lock-free single-producer single-consumer ring to a consumer thread that frees it.
 * Every free is remote and all of one size class, so the allocator's cross-thread free path
 * and the return of memory to the producer are nearly all that is measured (prodcons mixes
 * sizes, batches objects and locks its queue). T threads form T/2 producer-consumer pairs.
 * Runs for a fixed time; reports objects per second (produced, passed on and freed).
 * Each object carries its sequence number, checked by the consumer.
 * Usage: prodcons64 [threads] [scale]   (scale 1 = 2 s) */
#include "common.h"
#include "spsc_ring.h"

#define OBJECT_SIZE 64
#define MAX_PAIRS 64

struct pair {
    struct spsc_ring ring;
    long consumed;
    uint64_t bad;
};

static struct pair pairs[MAX_PAIRS];
static atomic_bool stop;

static void *producer(void *arg)
{
    struct pair *p = arg;
    for (uint64_t seq = 0; !atomic_load_explicit(&stop, memory_order_relaxed); seq++) {
        uint64_t *obj = xmalloc(OBJECT_SIZE);
        obj[0] = seq;
        spsc_push(&p->ring, obj);
    }
    spsc_close(&p->ring);
    return NULL;
}

static void *consumer(void *arg)
{
    struct pair *p = arg;
    uint64_t *obj, bad = 0;
    long n = 0;
    while ((obj = spsc_pop(&p->ring))) {
        bad += obj[0] != (uint64_t)n;
        free(obj);
        n++;
    }
    p->consumed = n;
    p->bad = bad;
    return NULL;
}

int main(int argc, char **argv)
{
    int threads;
    double scale;
    bench_args(argc, argv, 2, &threads, &scale);
    int npairs = threads / 2 > 0 ? threads / 2 : 1;
    if (npairs > MAX_PAIRS)
        die("prodcons64: at most 128 threads");
    double run_secs = 2.0 * scale;

    pthread_t th[2 * npairs];
    double t0 = now_s();
    for (int i = 0; i < npairs; i++) {
        if (pthread_create(&th[2 * i], NULL, producer, &pairs[i]) ||
            pthread_create(&th[2 * i + 1], NULL, consumer, &pairs[i]))
            die("pthread_create");
    }
    sleep_s(run_secs);
    atomic_store(&stop, true);
    bench_join_threads(th, 2 * npairs, NULL);
    double secs = now_s() - t0;

    long objects = 0;
    uint64_t bad = 0;
    for (int i = 0; i < npairs; i++) {
        objects += pairs[i].consumed;
        bad += pairs[i].bad;
    }
    if (bad) {
        fprintf(stderr, "prodcons64: %llu objects lost their contents\n", (unsigned long long)bad);
        return 1;
    }
    bench_report("prodcons64", 2 * npairs, scale, secs, (double)objects, "objs/s", NULL);
    return 0;
}
