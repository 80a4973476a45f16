/* (h) Programs 7.1 and 7.2 of the thesis (DESIGN §1, Paging), 256 MB buffers.
 *   paging 71: each iteration mallocs a fresh buffer, fills it, frees it.
 *   paging 72: the same mallocs and frees, but the fill goes to one buffer kept throughout.
 * The difference is the cost of first-touch page faults on fresh memory; an allocator that
 * recycles large blocks makes 7.1 as fast as 7.2.
 * Usage: paging 71|72 [scale]  (single-threaded; scale 1 = 50 iterations as in the thesis) */
#include "common.h"

#define SIZE ((size_t)256 << 20 >> 2)      /* ints in 256 MB */

int main(int argc, char **argv)
{
    int prog = argc > 1 ? atoi(argv[1]) : 71;
    double scale = argc > 2 ? atof(argv[2]) : 1.0;
    if ((prog != 71 && prog != 72) || !(scale > 0)) {
        fprintf(stderr, "usage: %s 71|72 [scale>0]\n", argv[0]);
        return 2;
    }
    long iters = scaled(50, scale, 2);

    double t0 = now_s();
    if (prog == 71) {
        for (long i = 0; i < iters; i++) {
            int *buf = xmalloc(SIZE * sizeof(int));
            for (size_t j = 0; j < SIZE; j++)
                buf[j] = (int)(j + (size_t)i);
            bench_sink += (uint64_t)buf[SIZE / 2];
            free(buf);
        }
    } else {
        int *buf = xmalloc(SIZE * sizeof(int));
        for (long i = 0; i < iters; i++) {
            int *tmp = xmalloc(SIZE * sizeof(int));
            for (size_t j = 0; j < SIZE; j++)
                buf[j] = (int)(j + (size_t)i);
            bench_sink += (uint64_t)buf[SIZE / 2];
            free(tmp);
        }
        free(buf);
    }
    double secs = now_s() - t0;
    char name[16];
    snprintf(name, sizeof name, "paging%d", prog);
    bench_report(name, 1, scale, secs, (double)iters * 256, "MB/s", NULL);
    return 0;
}
