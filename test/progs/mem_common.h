// mem_common.h - process memory readings for the memory-policy system tests.
#pragma once
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

// Resident set size now, in KB.
static inline long rss_kb(void) {
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f || fscanf(f, "%ld %ld", &pages, &resident) != 2) abort();
    fclose(f);
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

// Peak resident set size (VmHWM), in KB.
static inline long peak_rss_kb(void) {
    char line[256];
    long kb = -1;
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) abort();
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "VmHWM:", 6)) kb = atol(line + 6);
    fclose(f);
    return kb;
}

static inline long env_long(const char *name, long fallback) {
    const char *s = getenv(name);
    return s ? atol(s) : fallback;
}

#define CHECK(cond, ...)                                                                        \
    do {                                                                                        \
        if (!(cond)) {                                                                          \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                     \
            fprintf(stderr, __VA_ARGS__);                                                       \
            fprintf(stderr, "\n");                                                              \
            exit(1);                                                                            \
        }                                                                                       \
    } while (0)

// One allocation that leaves the thread's fast path (a medium size); volatile so that the
// compiler cannot drop the malloc/free pair.
static inline void one_further_malloc(void) {
    char *volatile p = malloc(100000);
    p[0] = 1;
    free(p);
}

// memset that the compiler cannot drop for a buffer it sees freed right after.
static void *(*volatile touch_memory)(void *, int, size_t) = memset;
