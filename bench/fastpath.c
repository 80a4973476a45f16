/* Hot-path probe for scripts/fastpath.sh: PAIRS malloc+free pairs of one size, single thread.
 * Usage: fastpath SIZE PAIRS. Callgrind counts instructions inside pair() only
 * (--toggle-collect=pair); fastpath.sh runs PAIRS and 2*PAIRS and divides the difference by
 * PAIRS, so start-up and first-touch costs cancel out. LIVE objects of the same size stay
 * allocated throughout, as in a real program: otherwise each free empties its page, and an
 * allocator that retires empty pages (mimalloc) pays that slow path on every pair. */
#include "common.h"

__attribute__((noinline)) void pair(size_t sz)
{
    unsigned char *p = malloc(sz);
    if (!p)
        die("out of memory");
    *(volatile unsigned char *)p = 1;
    free(p);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s SIZE PAIRS\n", argv[0]);
        return 2;
    }
    size_t sz = (size_t)atol(argv[1]);
    long pairs = atol(argv[2]);
    enum { LIVE = 64 };
    static unsigned char *live[LIVE];
    for (int i = 0; i < LIVE; i++)
        if (!(live[i] = malloc(sz)))
            die("out of memory");
    for (long i = 0; i < pairs; i++)
        pair(sz);
    for (int i = 0; i < LIVE; i++)
        free(live[i]);
    printf("RESULT workload=fastpath size=%zu pairs=%ld\n", sz, pairs);
    return 0;
}
