/* FIFO queue: each malloc is followed by the free of the object allocated LIVE mallocs
 * earlier (a queue of LIVE messages of one size), for LIVE = 64, 256, 1024 and 4096 in turn.
 * The reverse of the LIFO reuse most allocators are tuned for: the object freed is always the
 * oldest, so a page or block fills completely before any of it is freed, and empties
 * completely before it is refilled. Each object carries its sequence number in its first
 * word and a copy in its last; both are checked when it leaves the queue.
 * Usage: fifo SIZE [scale]   (single thread; scale 1 = 16 M operations per queue length) */
#include "common.h"

static const long lives[] = {64, 256, 1024, 4096};

int main(int argc, char **argv)
{
    long size = argc > 1 ? atol(argv[1]) : 1024;
    double scale = argc > 2 ? atof(argv[2]) : 1.0;
    if (size < 16 || size > (64 << 20) || !(scale > 0)) {
        fprintf(stderr, "usage: %s SIZE(>=16) [scale>0]\n", argv[0]);
        return 2;
    }
    long ops = scaled(16e6, scale, 20000);
    size_t words = (size_t)size / sizeof(uint64_t);
    uint64_t **ring = xmalloc(sizeof *ring * 4096);
    uint64_t bad = 0;

    double t0 = now_s();
    for (size_t l = 0; l < sizeof lives / sizeof lives[0]; l++) {
        long live = lives[l];
        for (long k = 0; k < live; k++) {
            ring[k] = xmalloc((size_t)size);
            ring[k][0] = ring[k][words - 1] = (uint64_t)k;
        }
        for (long k = live; k < live + ops; k++) {
            uint64_t *p = xmalloc((size_t)size);
            p[0] = p[words - 1] = (uint64_t)k;
            uint64_t *old = ring[k % live];
            bad += (old[0] != (uint64_t)(k - live)) + (old[words - 1] != (uint64_t)(k - live));
            free(old);
            ring[k % live] = p;
        }
        for (long k = 0; k < live; k++)
            free(ring[k]);
    }
    double secs = now_s() - t0;
    free(ring);
    if (bad) {
        fprintf(stderr, "fifo: %llu objects lost their contents\n", (unsigned long long)bad);
        return 1;
    }
    char name[32];
    snprintf(name, sizeof name, "fifo%ld", size);
    bench_report(name, 1, scale, secs, (double)ops * (double)(sizeof lives / sizeof lives[0]),
                 "ops/s", NULL);
    return 0;
}
