// mem_common.h - process memory readings for the memory-policy system tests.
#pragma once
#include <fcntl.h>
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

// Address space in use (VmSize), read without malloc: under a limit it may fail.
static inline long vm_bytes(void) {
    static char buf[4096];
    int fd = open("/proc/self/status", O_RDONLY);
    CHECK(fd >= 0, "open /proc/self/status");
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    CHECK(n > 0, "read /proc/self/status");
    buf[n] = '\0';
    char *v = strstr(buf, "VmSize:");
    CHECK(v != NULL, "no VmSize in /proc/self/status");
    return atol(v + 7) * 1024;
}

// One allocation that leaves the thread's fast path (a medium size); volatile so that the
// compiler cannot drop the malloc/free pair.
static inline void one_further_malloc(void) {
    char *volatile p = malloc(100000);
    p[0] = 1;
    free(p);
}

// memset that the compiler cannot drop for a buffer it sees freed right after.
static void *(*volatile touch_memory)(void *, int, size_t) = memset;
