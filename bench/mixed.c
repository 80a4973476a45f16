/* (e) Single thread, mixed sizes 8 B..64 KB (log-uniform), random lifetimes: half the
 * objects die at once, the rest replace a random live slot (geometric lifetimes).
 * Stresses size-class lookup, medium sizes and fragmentation. */
#include "common.h"

#define LIVE 8192

static size_t rand_size(uint64_t *rs)
{
    uint64_t r = rng_next(rs);
    unsigned e = (unsigned)(r % 13);          /* 8 B << 0..12: up to 32 KB base */
    size_t base = (size_t)8 << e;
    size_t sz = base + (r >> 8) % base;       /* [base, 2*base) */
    return sz > 65536 ? 65536 : sz;
}

static unsigned char *make(uint64_t *rs)
{
    size_t sz = rand_size(rs);
    unsigned char *p = xmalloc(sz);
    memset(p, 0x5a, sz < 64 ? sz : 64);
    for (size_t o = 4096; o < sz; o += 4096)
        p[o] = 1;                             /* touch every page once */
    p[sz - 1] = 2;
    return p;
}

int main(int argc, char **argv)
{
    int threads;
    double scale;
    bench_args(argc, argv, 1, &threads, &scale);
    long ops = scaled(30e6, scale, 10000);
    unsigned char **live = calloc(LIVE, sizeof *live);
    uint64_t rs = rng_seed(11), sum = 0;

    double t0 = now_s();
    for (long i = 0; i < ops; i++) {
        unsigned char *p = make(&rs);
        if (rng_next(&rs) & 1) {              /* short-lived temporary */
            sum += p[0];
            free(p);
        } else {
            size_t k = rng_next(&rs) % LIVE;
            if (live[k]) {
                sum += live[k][0];
                free(live[k]);
            }
            live[k] = p;
        }
    }
    for (int k = 0; k < LIVE; k++)
        free(live[k]);
    double secs = now_s() - t0;
    free(live);
    bench_sink += sum;
    bench_report("mixed", 1, scale, secs, (double)ops, "allocs/s", NULL);
    return 0;
}
