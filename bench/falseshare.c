/* (d) Allocator-induced false sharing with small (8 B) objects.
 * passive: the main thread allocates one object per worker back to back; each worker writes
 *   its object hard, frees it and allocates a replacement (cache-scratch). An allocator that
 *   packs the main thread's objects into one cache line makes the workers fight over it.
 * crossed: every worker allocates one object for itself and one for its neighbour, then
 *   writes its own and the one it received (allocated by one thread, written by another,
 *   in both directions), and frees both (one local and one remote free per round). */
#include "common.h"
#include <pthread.h>

#define OBJ 8
#define WRITES 10000          /* per passive round */
#define XWRITES 100000        /* per crossed round: fewer barriers */

static int nthreads;
static long rounds, xrounds;
static unsigned char **handoff;     /* passive: main -> worker; crossed: worker -> neighbour */
static pthread_barrier_t bar;

static void hammer(unsigned char *p, long n)
{
    volatile unsigned char *v = p;
    for (long i = 0; i < n; i++)
        v[i & (OBJ - 1)]++;
}

static void *passive(void *arg)
{
    long id = (long)arg;
    unsigned char *p = handoff[id];
    for (long r = 0; r < rounds; r++) {
        hammer(p, WRITES);
        free(p);
        p = xmalloc(OBJ);
        memset(p, 0, OBJ);
    }
    free(p);
    return NULL;
}

static void *crossed(void *arg)
{
    long id = (long)arg;
    for (long r = 0; r < xrounds; r++) {
        unsigned char *mine = xmalloc(OBJ);
        unsigned char *theirs = xmalloc(OBJ);
        memset(mine, 0, OBJ);
        memset(theirs, 0, OBJ);
        handoff[(id + 1) % nthreads] = theirs;
        pthread_barrier_wait(&bar);
        unsigned char *got = handoff[id];
        for (int k = 0; k < 8; k++) {
            hammer(mine, XWRITES / 16);
            hammer(got, XWRITES / 16);
        }
        pthread_barrier_wait(&bar);     /* nobody overwrites handoff[] before it was read */
        free(mine);
        free(got);
    }
    return NULL;
}

static double run_phase(void *(*fn)(void *))
{
    double t0 = now_s();
    bench_run_threads(nthreads, fn, NULL, 0, NULL);
    return now_s() - t0;
}

int main(int argc, char **argv)
{
    double scale;
    bench_args(argc, argv, 4, &nthreads, &scale);
    long writes = scaled(4e9, scale, 1000000);   /* per phase, all threads */
    rounds = writes / WRITES / nthreads;
    xrounds = writes / XWRITES / nthreads;
    if (rounds < 1)
        rounds = 1;
    if (xrounds < 1)
        xrounds = 1;
    handoff = calloc((size_t)nthreads, sizeof *handoff);
    pthread_barrier_init(&bar, NULL, (unsigned)nthreads);

    for (int t = 0; t < nthreads; t++) {
        handoff[t] = xmalloc(OBJ);
        memset(handoff[t], 0, OBJ);
    }
    double tp = run_phase(passive);
    double tc = run_phase(crossed);

    char extra[96];
    snprintf(extra, sizeof extra, "passive_s=%.4f crossed_s=%.4f", tp, tc);
    bench_report("falseshare", nthreads, scale, tp + tc,
                 ((double)rounds * WRITES + (double)xrounds * XWRITES) * nthreads,
                 "writes/s", extra);
    free(handoff);
    return 0;
}
