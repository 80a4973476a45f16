/* A fixed sequence of small mallocs and frees (a FIFO queue, LIFO bursts, sizes 16 B to 16 KB)
 * that prints where each object lands: its offset from the 16 MB boundary below the first
 * object (superblocks are aligned so), or "S" for an object the profiler sampled (a mapping
 * of its own: usable size above the small range). The profiler must leave every other object
 * where it lands without it (test/system/prof_shadow.sh).
 * Usage: prof_shadow [OPERATIONS] */
#include <dlfcn.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define QUEUE 700
#define SMALL_MAX 16352

static uint64_t rng = 88172645463325252ull;
static uint64_t next(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static uintptr_t base;
static char *out, *at;

static void *take(size_t size) {
    void *p = malloc(size);
    if (!p) abort();
    memset(p, 0x5a, size < 64 ? size : 64);
    if (!base) base = (uintptr_t)p & ~(uintptr_t)((16u << 20) - 1);
    if (malloc_usable_size(p) > SMALL_MAX)
        at += sprintf(at, "S\n");
    else
        at += sprintf(at, "%lx\n", (unsigned long)((uintptr_t)p - base));
    return p;
}

int main(int argc, char **argv) {
    long ops = argc > 1 ? atol(argv[1]) : 60000;
    /* On a heap of its own from the start: a thread begins on the shared heap of the CPU it
     * runs on, and leaves it when busy by the clock; either would differ between the runs. */
    int (*own_heap)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "bobox_thread_own_heap");
    if (!own_heap || own_heap() != 0) {
        fprintf(stderr, "prof_shadow: bobox_thread_own_heap is missing or failed\n");
        return 1;
    }
    out = at = malloc((size_t)ops * 3 * 24); /* printed at the end: stdio allocates */
    if (!out) return 1;
    void *queue[QUEUE] = {0};
    static const size_t sizes[] = {16, 48, 200, 1024, 4000, 8192, 16352};
    for (long i = 0; i < ops; i++) {
        size_t size = sizes[next() % 7];
        long slot = i % QUEUE;
        free(queue[slot]); /* FIFO: the oldest */
        queue[slot] = take(size);
        if (i % 97 == 0) { /* a LIFO burst */
            void *burst[24];
            for (int k = 0; k < 24; k++) burst[k] = take(sizes[next() % 7]);
            for (int k = 23; k >= 0; k--) free(burst[k]);
        }
    }
    for (long slot = 0; slot < QUEUE; slot++) free(queue[slot]);
    fwrite(out, 1, (size_t)(at - out), stdout);
    free(out);
    return 0;
}
