/* The shape of glibc's own malloc micro-benchmark (benchtests' bench-malloc-thread): each
 * thread keeps a working set of WORKING_SET small objects and, in a loop doing nothing else,
 * frees the object of a slot and allocates a new one in its place. Slot and size both come
 * from a fixed table of pseudo-random entries made before the clock starts. Sizes 8..511 B,
 * an octave (8, 16, .., 256) chosen uniformly, then a size uniform within it: density about
 * 1/size, so small sizes dominate, as in that benchmark. Unlike
 * tightloop, the objects are never touched, so the loop is malloc and free alone, and the
 * working set is a few hundred objects (it fits in the first-level cache).
 * Threads share nothing; each starts at its own point of the table.
 * Usage: gmicro [threads] [scale]   (scale 1 = 100 M iterations per thread) */
#include "common.h"

#define WORKING_SET 256
#define TABLE 4096 /* a power of two */

static uint32_t table_size[TABLE];
static uint16_t table_slot[TABLE];
static long iters;

static void *worker(void *arg)
{
    long id = (long)(intptr_t)arg;
    void *ws[WORKING_SET];
    for (int i = 0; i < WORKING_SET; i++)
        ws[i] = xmalloc(table_size[i]);
    long start = id * (TABLE / 8);
    for (long k = 0; k < iters; k++) {
        long j = (start + k) & (TABLE - 1);
        unsigned s = table_slot[j];
        free(ws[s]);
        ws[s] = xmalloc(table_size[j]);
    }
    for (int i = 0; i < WORKING_SET; i++)
        free(ws[i]);
    return NULL;
}

int main(int argc, char **argv)
{
    int threads;
    double scale;
    bench_args(argc, argv, 1, &threads, &scale);
    iters = scaled(100e6, scale, 100000);

    uint64_t rs = rng_seed(1986);
    for (int j = 0; j < TABLE; j++) {
        unsigned lg = 3 + (unsigned)(rng_next(&rs) % 6); /* an octave: 8, 16, .., 256 */
        table_size[j] = (1u << lg) + (uint32_t)(rng_next(&rs) % (1u << lg));
        table_slot[j] = (uint16_t)(rng_next(&rs) % WORKING_SET);
    }

    double t0 = now_s();
    bench_run_threads(threads, worker, NULL, 0, NULL);
    double secs = now_s() - t0;
    bench_report("gmicro", threads, scale, secs, (double)iters * threads, "ops/s", NULL);
    return 0;
}
