/* field_own_malloc: a program that brings its own malloc family (as a program statically linked
 * with its allocator does). The executable comes first in symbol lookup, before any preload,
 * so its functions serve the whole process, libc's internal calls included. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* A bump allocator with a size header; free only counts. */
static char *arena, *arena_end;
static atomic_size_t used, calls;

/* Not named malloc: gcc would turn bump + memset in calloc into a call to calloc itself. */
static void *bump(size_t n) {
    atomic_fetch_add(&calls, 1);
    if (!arena) {
        char *a = mmap(NULL, 256 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (a == MAP_FAILED) return NULL;
        arena = a;
        arena_end = a + (256 << 20);
    }
    size_t need = ((n + 15) & ~(size_t)15) + 16;
    size_t at = atomic_fetch_add(&used, need);
    if (arena + at + need > arena_end) return NULL;
    *(size_t *)(arena + at) = n;
    return arena + at + 16;
}
void *malloc(size_t n) { return bump(n); }
void free(void *p) { (void)p; }
void *calloc(size_t k, size_t n) {
    void *p = bump(k * n);
    if (p) memset(p, 0, k * n);
    return p;
}
void *realloc(void *p, size_t n) {
    void *q = bump(n);
    if (q && p) memcpy(q, p, *((size_t *)p - 2) < n ? *((size_t *)p - 2) : n);
    return q;
}
void *aligned_alloc(size_t a, size_t n) {
    char *p = bump(n + a);
    return p ? (void *)(((uintptr_t)p + a - 1) & ~(uintptr_t)(a - 1)) : NULL;
}
int posix_memalign(void **out, size_t a, size_t n) {
    *out = aligned_alloc(a, n);
    return *out ? 0 : 12;
}
void *memalign(size_t a, size_t n) { return aligned_alloc(a, n); }
size_t malloc_usable_size(void *p) { return p ? *((size_t *)p - 2) : 0; }

static void *work(void *arg) {
    char *s = NULL;
    for (int i = 0; i < 1000; i++) {
        free(s);
        if (asprintf(&s, "thread %ld line %d", (long)(intptr_t)arg, i) < 0) return NULL;
    }
    return s;
}

int main(void) {
    pthread_t t[4];
    for (long i = 0; i < 4; i++) pthread_create(&t[i], NULL, work, (void *)i);
    for (int i = 0; i < 4; i++) {
        void *r;
        pthread_join(t[i], &r);
        puts(r ? (char *)r : "(failed)");
    }
    FILE *f = fopen("/proc/self/stat", "r"); /* stdio buffers come from malloc */
    if (f) fclose(f);
    printf("own malloc served: %s\n", atomic_load(&calls) > 4000 ? "yes" : "no");
    return 0;
}
