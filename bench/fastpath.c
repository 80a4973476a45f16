/* Hot-path probe for scripts/bench/fastpath.sh: PAIRS malloc+free pairs of one size, single thread.
 * Usage: fastpath SIZE PAIRS [lifo|fifo]. Callgrind counts instructions inside pair*() only
 * (--toggle-collect=pair*); fastpath.sh runs PAIRS and 2*PAIRS and divides the difference by
 * PAIRS, so start-up and first-touch costs cancel out. LIVE objects of the same size stay
 * allocated throughout, as in a real program: otherwise each free empties its page, and an
 * allocator that retires empty pages (mimalloc) pays that slow path on every pair.
 *   lifo (default): malloc, store, free the same object: the freed object is the next one
 *                   returned, and the LIVE objects are never touched.
 *   fifo: the LIVE objects form a queue: each malloc is followed by the free of the object
 *         allocated LIVE mallocs earlier, so the allocator cycles through LIVE + 1 objects. */
#include "common.h"

enum { LIVE = 64 };
static unsigned char *live[LIVE];

__attribute__((noinline)) void pair(size_t sz)
{
    unsigned char *p = malloc(sz);
    if (!p)
        die("out of memory");
    *(volatile unsigned char *)p = 1;
    free(p);
}

__attribute__((noinline)) void pair_fifo(size_t sz, unsigned slot)
{
    unsigned char *p = malloc(sz);
    if (!p)
        die("out of memory");
    *(volatile unsigned char *)p = 1;
    unsigned char *old = live[slot];
    live[slot] = p;
    free(old);
}

int main(int argc, char **argv)
{
    if (argc < 3 || (argc > 3 && strcmp(argv[3], "lifo") && strcmp(argv[3], "fifo"))) {
        fprintf(stderr, "usage: %s SIZE PAIRS [lifo|fifo]\n", argv[0]);
        return 2;
    }
    size_t sz = (size_t)atol(argv[1]);
    long pairs = atol(argv[2]);
    int fifo = argc > 3 && !strcmp(argv[3], "fifo");
    for (int i = 0; i < LIVE; i++)
        if (!(live[i] = malloc(sz)))
            die("out of memory");
    if (fifo)
        for (long i = 0; i < pairs; i++)
            pair_fifo(sz, (unsigned)(i % LIVE));
    else
        for (long i = 0; i < pairs; i++)
            pair(sz);
    for (int i = 0; i < LIVE; i++)
        free(live[i]);
    printf("RESULT workload=fastpath size=%zu pairs=%ld pattern=%s\n", sz, pairs, fifo ? "fifo" : "lifo");
    return 0;
}
