/* (a) Server simulation: threads replace random slots of one shared array with new objects
 * of 16 B..1 KB, so most objects are freed by a thread other than the one that allocated them
 * (the remote-free path). */
#include "common.h"
#include <stdatomic.h>

#define NSLOTS 20000

static _Atomic(unsigned char *) slots[NSLOTS];
static long ops_per_thread;

static unsigned char *make_obj(uint64_t *rs)
{
    size_t sz = 16 + rng_next(rs) % (1024 - 16 + 1);
    unsigned char *p = xmalloc(sz);
    /* A server fills its objects: touch the head and the tail. */
    memset(p, (int)sz, sz < 64 ? sz : 64);
    p[sz - 1] = 1;
    return p;
}

static void *worker(void *arg)
{
    long id = (long)arg;
    uint64_t rs = rng_seed((uint64_t)id + 100);
    uint64_t sum = 0;
    for (long i = 0; i < ops_per_thread; i++) {
        unsigned char *p = make_obj(&rs);
        unsigned char *old = atomic_exchange_explicit(&slots[rng_next(&rs) % NSLOTS], p,
                                                      memory_order_acq_rel);
        if (old) {
            sum += old[0];
            free(old);
        }
    }
    bench_sink += sum;
    return NULL;
}

int main(int argc, char **argv)
{
    int threads;
    double scale;
    bench_args(argc, argv, 4, &threads, &scale);
    long total = scaled(12e6, scale, 10000);
    ops_per_thread = total / threads;

    uint64_t rs = rng_seed(7);
    for (int i = 0; i < NSLOTS; i++)
        atomic_store(&slots[i], make_obj(&rs));

    double t0 = now_s();
    bench_run_threads(threads, worker, NULL, 0, NULL);
    double secs = now_s() - t0;

    for (int i = 0; i < NSLOTS; i++)
        free(atomic_load(&slots[i]));
    bench_report("server", threads, scale, secs, (double)ops_per_thread * threads, "ops/s", NULL);
    return 0;
}
