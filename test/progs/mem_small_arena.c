// The small arena (arena.h): one reservation of read-only address space, 4-256 GB, that holds
// every small object; memory given back by malloc_trim leaves it; absent when the process
// starts under an address-space limit, and shrunk to what it uses when the program sets one
// itself, so that its own mappings still fit. Small objects work in every case.
// Usage: mem_small_arena reserved|absent|limited
#include <malloc.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include "mem_common.h"

#define MIN_ARENA (1UL << 32)

typedef struct {
    unsigned long start, end;
    long rss_kb;
} run_t;

// The arena: the largest run of adjacent anonymous private mappings, read-only or read-write
// (committed slots split the reservation), with its resident KB from smaps. Read with a
// static buffer and no malloc.
static run_t find_arena(void) {
    static char line[512];
    run_t best = {0, 0, 0}, run = {0, 0, 0};
    int in_run = 0;
    FILE *f = fopen("/proc/self/smaps", "r");
    CHECK(f != NULL, "cannot read /proc/self/smaps");
    setvbuf(f, NULL, _IONBF, 0);
    while (fgets(line, sizeof line, f)) {
        unsigned long start, end, offset;
        char perms[8], path[256] = "";
        if (sscanf(line, "%lx-%lx %7s %lx %*s %*s %255s", &start, &end, perms, &offset, path) >= 4) {
            int ours = path[0] == '\0' && (!strcmp(perms, "r--p") || !strcmp(perms, "rw-p"));
            if (in_run && ours && start == run.end) {
                run.end = end;
            } else {
                if (in_run && run.end - run.start > best.end - best.start) best = run;
                in_run = ours;
                run = (run_t){start, end, 0};
            }
        } else if (in_run && !strncmp(line, "Rss:", 4)) {
            run.rss_kb += atol(line + 4);
        }
    }
    if (in_run && run.end - run.start > best.end - best.start) best = run;
    fclose(f);
    return best;
}

enum { N = 50000 };
static unsigned char *objs[N];
static size_t sizes[N];

// Small objects of many sizes, freed in a scrambled order: contents survive. With `arena`,
// each lies inside it.
static void churn(const run_t *arena) {
    uint64_t s = 11;
    for (int i = 0; i < N; i++) {
        sizes[i] = 1 + (size_t)i % 2000;
        objs[i] = malloc(sizes[i]);
        CHECK(objs[i] != NULL, "malloc(%zu)", sizes[i]);
        memset(objs[i], (int)(sizes[i] & 0xff), sizes[i]);
        if (arena)
            CHECK((uintptr_t)objs[i] >= arena->start && (uintptr_t)objs[i] < arena->end,
                  "object %p of %zu bytes outside the arena %lx-%lx", (void *)objs[i], sizes[i], arena->start, arena->end);
    }
    for (int i = N - 1; i > 0; i--) {
        s = s * 6364136223846793005ULL + 1;
        int j = (int)((s >> 33) % (uint64_t)(i + 1));
        unsigned char *t = objs[i];
        size_t ts = sizes[i];
        objs[i] = objs[j];
        sizes[i] = sizes[j];
        objs[j] = t;
        sizes[j] = ts;
    }
    for (int i = 0; i < N; i++) {
        for (size_t k = 0; k < sizes[i]; k++)
            CHECK(objs[i][k] == (unsigned char)(sizes[i] & 0xff), "object %p of %zu bytes changed", (void *)objs[i], sizes[i]);
        free(objs[i]);
    }
}

int main(int argc, char **argv) {
    const char *mode = argc == 2 ? argv[1] : "";
    CHECK(!strcmp(mode, "reserved") || !strcmp(mode, "absent") || !strcmp(mode, "limited"),
          "usage: %s reserved|absent|limited", argv[0]);
    run_t arena = find_arena();
    unsigned long bytes = arena.end - arena.start;
    printf("largest anonymous run: %lu MB\n", bytes >> 20);
    if (!strcmp(mode, "absent")) {
        CHECK(bytes < MIN_ARENA, "an arena of %lu MB under an address-space limit", bytes >> 20);
        churn(NULL);
        return 0;
    }
    CHECK(bytes >= MIN_ARENA, "no arena: the largest anonymous run is %lu MB", bytes >> 20);
    churn(&arena);
    if (!strcmp(mode, "reserved")) {
        // The superblocks the churn filled go back to the OS: the arena keeps no memory.
        long before = find_arena().rss_kb;
        malloc_trim(0);
        run_t after = find_arena();
        printf("arena resident: %ld KB before malloc_trim, %ld KB after\n", before, after.rss_kb);
        CHECK(before >= 10 * 1024, "the churn left only %ld KB resident in the arena", before);
        CHECK(after.rss_kb * 4 < before, "malloc_trim left %ld KB of %ld resident in the arena", after.rss_kb, before);
        // The reservation is whole gigabytes; the run may also take in a neighbouring mapping
        // (a large object, a stack) that the trim unmaps, so it is compared in gigabytes.
        CHECK(after.start < arena.end && after.end > arena.start, "the arena moved");
        CHECK(after.end - after.start >= (bytes & ~((1UL << 30) - 1)), "the arena shrank from %lu to %lu MB",
              bytes >> 20, (after.end - after.start) >> 20);
        return 0;
    }
    // limited: the program lowers its own limit; its own 256 MB mapping must still fit.
    struct rlimit lim = {2UL << 30, 2UL << 30};
    CHECK(setrlimit(RLIMIT_AS, &lim) == 0, "setrlimit");
    run_t shrunk = find_arena();
    printf("arena after setrlimit: %lu MB\n", (shrunk.end - shrunk.start) >> 20);
    CHECK(shrunk.end - shrunk.start < (1UL << 30), "the arena still holds %lu MB", (shrunk.end - shrunk.start) >> 20);
    void *own = mmap(NULL, 256UL << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(own != MAP_FAILED, "the program's own 256 MB mapping failed under its limit");
    munmap(own, 256UL << 20);
    churn(NULL); // past the arena's slots too
    return 0;
}
