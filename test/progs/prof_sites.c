/* Three call sites that keep known amounts live (and a fourth, one large calloc), one that
 * allocates and frees as much again, and one that leaks: the profiler must name each with its
 * bytes (test/system/prof_*.sh).
 * Usage: prof_sites [DUMP-PATH]: with a path, also asks the preloaded allocator for a
 * profile there (bobox_prof_dump) before printing its result. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MB (1024 * 1024)

static void **keep(size_t n) {
    void **v = calloc(n, sizeof *v);
    if (!v) abort();
    return v;
}

/* Each site fills its objects, so the allocation cannot be elided. */
__attribute__((noinline)) void **site_small(size_t total) { /* 64-byte objects */
    size_t n = total / 64;
    void **v = keep(n);
    for (size_t i = 0; i < n; i++) memset(v[i] = malloc(64), 1, 64);
    return v;
}

__attribute__((noinline)) void **site_medium(size_t total) { /* 1000-byte objects */
    size_t n = total / 1000;
    void **v = keep(n);
    for (size_t i = 0; i < n; i++) memset(v[i] = malloc(1000), 2, 1000);
    return v;
}

__attribute__((noinline)) void **site_large(size_t total) { /* 100 KB objects */
    size_t n = total / (100 * 1024);
    void **v = keep(n);
    for (size_t i = 0; i < n; i++) memset(v[i] = malloc(100 * 1024), 3, 100 * 1024);
    return v;
}

__attribute__((noinline)) char *site_calloc(size_t total) { /* one large zeroed object */
    char *p = calloc(1, total);
    if (!p || p[total - 1]) abort();
    return p;
}

__attribute__((noinline)) void site_transient(size_t total) { /* freed before exit */
    size_t n = total / 256;
    void **v = keep(n);
    for (size_t i = 0; i < n; i++) memset(v[i] = malloc(256), 4, 256);
    for (size_t i = 0; i < n; i++) free(v[i]);
    free(v);
}

__attribute__((noinline)) void leak_some(size_t total) { /* never freed, never kept */
    for (size_t i = 0; i < total / 512; i++) {
        char *p = malloc(512);
        memset(p, 5, 512);
        __asm__ volatile("" : : "r"(p) : "memory");
    }
}

int main(int argc, char **argv) {
    void **a = site_small(24 * MB), **b = site_medium(12 * MB), **c = site_large(6 * MB);
    char *z = site_calloc(4 * MB);
    site_transient(16 * MB);
    leak_some(3 * MB);
    if (argc > 1) {
        int (*dump)(const char *) = (int (*)(const char *))dlsym(RTLD_DEFAULT, "bobox_prof_dump");
        if (!dump || dump(argv[1]) != 0) {
            perror("bobox_prof_dump");
            return 1;
        }
    }
    /* Sites a, b and c stay live to the end: the exit profile names them and the leak. */
    unsigned long sum = 0;
    sum += ((unsigned char *)a[7])[3] + ((unsigned char *)b[7])[3] + ((unsigned char *)c[7])[3] + (unsigned char)z[5];
    printf("%lu\n", sum);
    return 0;
}
