/* (c) Per-thread batches: each thread allocates N objects, frees them all, repeats
 * (threadtest-style). Purely thread-local: measures the local fast path and how a
 * freshly emptied block is reused. */
#include "common.h"

#define N 10000
static const size_t sizes[] = {16, 24, 48, 64, 96, 128, 256};
static long rounds;

static void *worker(void *arg)
{
    (void)arg;
    unsigned char **objs = xmalloc(N * sizeof *objs);
    uint64_t sum = 0;
    for (long r = 0; r < rounds; r++) {
        size_t sz = sizes[r % (sizeof sizes / sizeof sizes[0])];
        for (int i = 0; i < N; i++) {
            objs[i] = xmalloc(sz);
            objs[i][0] = (unsigned char)i;
        }
        for (int i = 0; i < N; i++) {
            sum += objs[i][0];
            free(objs[i]);
        }
    }
    free(objs);
    bench_sink += sum;
    return NULL;
}

int main(int argc, char **argv)
{
    int threads;
    double scale;
    bench_args(argc, argv, 4, &threads, &scale);
    long total = scaled(60e6, scale, 100000);
    rounds = total / N / threads;
    if (rounds < 1)
        rounds = 1;

    double t0 = now_s();
    bench_run_threads(threads, worker, NULL, 0, NULL);
    double secs = now_s() - t0;
    bench_report("batches", threads, scale, secs, (double)rounds * N * threads, "pairs/s", NULL);
    return 0;
}
