/* (g) Parallel merge sort of 2^24 ints (seed 003): top levels split across threads, and
 * every merge, down to two elements, merges into a calloc'ed temporary and copies back.
 * ~2^24 calloc/free pairs of every size from 8 B to 64 MB: small-object speed plus large
 * zeroed allocations (mmap and page faults). */
#include "common.h"
#include <pthread.h>

struct job {
    int *a;
    size_t n;
    int depth;
};

static void merge(int *a, size_t nl, size_t nr)
{
    int *tmp = calloc(nl + nr, sizeof *tmp);
    if (!tmp)
        die("out of memory");
    size_t i = 0, j = nl, k = 0, n = nl + nr;
    while (i < nl && j < n)
        tmp[k++] = a[j] < a[i] ? a[j++] : a[i++];
    while (i < nl)
        tmp[k++] = a[i++];
    while (j < n)
        tmp[k++] = a[j++];
    memcpy(a, tmp, n * sizeof *a);
    free(tmp);
}

static void *msort(void *arg);

static void msort_rec(int *a, size_t n, int depth)
{
    if (n < 2)
        return;
    size_t nl = n / 2;
    if (depth > 0) {
        struct job left = {a, nl, depth - 1};
        pthread_t th;
        int spawned = pthread_create(&th, NULL, msort, &left) == 0;
        if (!spawned)
            msort(&left);
        msort_rec(a + nl, n - nl, depth - 1);
        if (spawned)
            pthread_join(th, NULL);
    } else {
        msort_rec(a, nl, 0);
        msort_rec(a + nl, n - nl, 0);
    }
    merge(a, nl, n - nl);
}

static void *msort(void *arg)
{
    struct job *j = arg;
    msort_rec(j->a, j->n, j->depth);
    return NULL;
}

int main(int argc, char **argv)
{
    int threads;
    double scale;
    bench_args(argc, argv, 4, &threads, &scale);
    size_t n = (size_t)scaled((double)(1 << 24), scale, 1024);
    int depth = 0;
    while ((1 << depth) < threads)
        depth++;

    int *a = xmalloc(n * sizeof *a);
    uint64_t rs = rng_seed(3);
    for (size_t i = 0; i < n; i++)
        a[i] = (int)(rng_next(&rs) >> 33);

    double t0 = now_s();
    msort_rec(a, n, depth);
    double secs = now_s() - t0;

    for (size_t i = 1; i < n; i++)
        if (a[i - 1] > a[i])
            die("mergesort: result not sorted");
    free(a);
    char extra[48];
    snprintf(extra, sizeof extra, "n=%zu", n);
    bench_report("mergesort", threads, scale, secs, (double)n, "ints/s", extra);
    return 0;
}
