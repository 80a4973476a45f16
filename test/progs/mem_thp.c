// Which transparent-huge-page advice the allocator gave its mappings: for a small, a medium
// and a large object, prints the VmFlags advice of the mapping holding it (hg, nh or -) and its
// AnonHugePages, from /proc/self/smaps. Also prints whether the kernel fell back to small
// pages for a huge-page fault while the objects were touched (thp_fault_fallback).
// Run under LD_PRELOAD=libbobox.so with BOBOX_THP set; mem_thp.sh checks the lines.
#include <stdint.h>
#include "mem_common.h"

static long vmstat(const char *name) {
    char line[256];
    long v = -1;
    FILE *f = fopen("/proc/vmstat", "r");
    if (!f) return -1;
    size_t n = strlen(name);
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, name, n) && line[n] == ' ') v = atol(line + n + 1);
    fclose(f);
    return v;
}

// Advice and AnonHugePages (KB) of the mapping holding p.
static void mapping_of(const void *p, const char **advice, long *huge_kb) {
    char line[512];
    FILE *f = fopen("/proc/self/smaps", "r");
    CHECK(f != NULL, "/proc/self/smaps");
    int inside = 0, found = 0;
    *advice = "-";
    *huge_kb = -1;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        char c;
        // A mapping's first line: "lo-hi perms ...".
        if (sscanf(line, "%lx-%lx %c", &lo, &hi, &c) == 3 && strchr(line, '-') < strchr(line, ' ')) {
            inside = (uintptr_t)p >= lo && (uintptr_t)p < hi;
            found |= inside;
        } else if (inside && !strncmp(line, "AnonHugePages:", 14)) {
            *huge_kb = atol(line + 14);
        } else if (inside && !strncmp(line, "VmFlags:", 8)) {
            *advice = strstr(line, " hg") ? "hg" : strstr(line, " nh") ? "nh" : "-";
        }
    }
    fclose(f);
    CHECK(found, "no mapping holds %p", p);
}

int main(void) {
    long fallback_before = vmstat("thp_fault_fallback");
    // 8 MB of 64-byte objects: whole superblock regions touched.
    enum { SMALL_COUNT = 131072 };
    char **small = malloc(SMALL_COUNT * sizeof *small);
    CHECK(small != NULL, "malloc");
    for (int i = 0; i < SMALL_COUNT; i++) {
        small[i] = malloc(64);
        CHECK(small[i] != NULL, "malloc(64)");
        memset(small[i], 1, 64);
    }
    char *medium = malloc(200000);
    char *large = malloc(8 << 20);
    CHECK(medium && large, "malloc");
    memset(medium, 2, 200000);
    memset(large, 3, 8 << 20);
    long fallback_after = vmstat("thp_fault_fallback");

    const struct { const char *name; const void *p; } objects[] = {
        {"small", small[SMALL_COUNT / 2]}, {"medium", medium}, {"large", large}};
    for (size_t i = 0; i < sizeof objects / sizeof objects[0]; i++) {
        const char *advice;
        long huge_kb;
        mapping_of(objects[i].p, &advice, &huge_kb);
        printf("%s advice=%s huge_kb=%ld\n", objects[i].name, advice, huge_kb);
    }
    printf("fallbacks=%ld\n", fallback_before < 0 ? -1 : fallback_after - fallback_before);
    return 0;
}
