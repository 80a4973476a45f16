/* (i) realloc growth: each thread grows many vectors and strings side by side, round robin
 * (so a neighbour often blocks growing in place): vectors by doubling up to 1 MB, vectors by
 * small steps (16-64 B) up to 16 KB, strings by appends of 1-16 chars up to 4 KB; then frees
 * them all and starts over. */
#include "common.h"

#define NVEC 96

struct vec {
    unsigned char *p;
    size_t len, cap, limit;
    int kind;
};

static long reallocs_per_thread;

static void *worker(void *arg)
{
    uint64_t rs = rng_seed((uint64_t)(long)arg + 5);
    struct vec v[NVEC];
    long n = 0;
    uint64_t sum = 0;
    while (n < reallocs_per_thread) {
        for (int i = 0; i < NVEC; i++) {
            v[i] = (struct vec){NULL, 0, 0, 0, i % 3};
            v[i].limit = v[i].kind == 0 ? (1u << 20) : v[i].kind == 1 ? 16384 : 4096;
        }
        int active = NVEC;
        while (active > 0) {
            active = 0;
            for (int i = 0; i < NVEC; i++) {
                struct vec *x = &v[i];
                if (x->len >= x->limit)
                    continue;
                active++;
                size_t newlen;
                if (x->kind == 0)
                    newlen = x->cap ? x->cap * 2 : 16;
                else if (x->kind == 1)
                    newlen = x->len + 16 + rng_next(&rs) % 49;
                else
                    newlen = x->len + 1 + rng_next(&rs) % 16;
                unsigned char *p = realloc(x->p, newlen + (x->kind == 2));
                if (!p)
                    die("out of memory");
                sum += p[0];
                memset(p + x->len, 'a' + i % 26, newlen - x->len);
                if (x->kind == 2)
                    p[newlen] = 0;
                x->p = p;
                x->len = x->cap = newlen;
                n++;
            }
        }
        for (int i = 0; i < NVEC; i++)
            free(v[i].p);
    }
    bench_sink += sum;
    return (void *)n;
}

int main(int argc, char **argv)
{
    int threads;
    double scale;
    bench_args(argc, argv, 2, &threads, &scale);
    reallocs_per_thread = scaled(6e6, scale, 1000) / threads;

    void *done[threads];
    double t0 = now_s();
    bench_run_threads(threads, worker, NULL, 0, done);
    double secs = now_s() - t0;
    long total = 0;
    for (int t = 0; t < threads; t++)
        total += (long)done[t];
    bench_report("realloc", threads, scale, secs, (double)total, "reallocs/s", NULL);
    return 0;
}
