/* Built by test/system/pin_foreign.sh: a crude malloc of somebody else's (a bump pointer that
 * never frees) which starts a thread from its first call, as some allocators start a
 * background thread. The shim must neither deadlock nor crash under it. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stddef.h>
#include <string.h>

static char heap[256 << 20] __attribute__((aligned(64)));
static size_t top;
static int started;

static void *idle(void *arg) { return arg; }

void *memalign(size_t align, size_t n)
{
    if (align < 16)
        align = 16;
    size_t old = __atomic_load_n(&top, __ATOMIC_RELAXED), at, next;
    do {
        at = (old + align - 1) & ~(align - 1);
        next = at + ((n + 15) & ~(size_t)15);
        if (next > sizeof heap)
            return NULL;
    } while (!__atomic_compare_exchange_n(&top, &old, next, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
    if (!__atomic_exchange_n(&started, 1, __ATOMIC_RELAXED)) {
        pthread_t t;
        if (pthread_create(&t, NULL, idle, NULL) == 0)
            pthread_detach(t);
    }
    return heap + at;
}
void *malloc(size_t n) { return memalign(16, n); }
void free(void *p) { (void)p; }
void *calloc(size_t a, size_t b) { return malloc(a * b); } /* the heap starts zeroed, never reused */
void *realloc(void *p, size_t n)
{
    void *q = malloc(n);
    if (p && q)
        memcpy(q, p, n < (size_t)(heap + sizeof heap - (char *)p) ? n : (size_t)(heap + sizeof heap - (char *)p));
    return q;
}
int posix_memalign(void **out, size_t align, size_t n) { return (*out = memalign(align, n)) ? 0 : 12; }
void *aligned_alloc(size_t align, size_t n) { return memalign(align, n); }
