/* Tight malloc/free loops in the style of glibc's own malloc micro-benchmarks: each thread
 * keeps a working set of 1,024 objects and, in a loop doing nothing else, frees the object of
 * a slot and allocates a new one there. Slots and sizes come from one sequence of 8,192
 * (slot, size) pairs generated before the clock starts, so the loop is the allocator and
 * little else. Sizes are small and log-uniform: a power of two from 8 to 1024 B, then a
 * uniform size below the next one (8..2047 B). Threads run the same loop on their own working
 * sets (one per core for the multi-threaded form), each starting at its own point of the
 * sequence. Each object's first byte is written and read back before it is freed.
 * Usage: tightloop [threads] [scale]   (scale 1 = 100 M iterations per thread) */
#include "common.h"

#define WORKING_SET 1024
#define SEQ 8192

static uint32_t seq_size[SEQ];
static uint16_t seq_slot[SEQ];
static long iters;

struct worker_state {
    long id;
    uint64_t bad;
};

static void *worker(void *arg)
{
    struct worker_state *w = arg;
    unsigned char *ws[WORKING_SET];
    for (int i = 0; i < WORKING_SET; i++) {
        ws[i] = xmalloc(seq_size[i]);
        ws[i][0] = (unsigned char)i;
    }
    uint64_t bad = 0;
    long start = w->id * (SEQ / 8);
    for (long k = 0; k < iters; k++) {
        long j = (start + k) & (SEQ - 1);
        unsigned s = seq_slot[j];
        bad += ws[s][0] != (unsigned char)s;
        free(ws[s]);
        ws[s] = xmalloc(seq_size[j]);
        ws[s][0] = (unsigned char)s;
    }
    for (int i = 0; i < WORKING_SET; i++)
        free(ws[i]);
    w->bad = bad;
    return NULL;
}

int main(int argc, char **argv)
{
    int threads;
    double scale;
    bench_args(argc, argv, 1, &threads, &scale);
    iters = scaled(100e6, scale, 100000);

    uint64_t rs = rng_seed(4242);
    for (int j = 0; j < SEQ; j++) {
        unsigned lg = 3 + (unsigned)(rng_next(&rs) % 8);     /* 8 .. 1024 */
        seq_size[j] = (1u << lg) + (uint32_t)(rng_next(&rs) % (1u << lg));
        seq_slot[j] = (uint16_t)(rng_next(&rs) % WORKING_SET);
    }

    struct worker_state st[threads];
    for (int t = 0; t < threads; t++)
        st[t] = (struct worker_state){.id = t};
    double t0 = now_s();
    bench_run_threads(threads, worker, st, sizeof *st, NULL);
    double secs = now_s() - t0;
    uint64_t bad = 0;
    for (int t = 0; t < threads; t++)
        bad += st[t].bad;
    if (bad) {
        fprintf(stderr, "tightloop: %llu objects lost their contents\n", (unsigned long long)bad);
        return 1;
    }
    bench_report("tightloop", threads, scale, secs, (double)iters * threads, "ops/s", NULL);
    return 0;
}
