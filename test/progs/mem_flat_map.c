// free's flat map of small-block regions (pagemap.h): reserved as 64 MB of read-only address
// space that costs almost no memory; absent when the process starts under an address-space
// limit, where free takes the two-level map and small objects still work.
// Usage: mem_flat_map reserved|absent
#include <stdint.h>
#include "mem_common.h"

#define FLAT_MAP_BYTES (64UL << 20)

// The flat map: a run of adjacent anonymous mappings of exactly its size, read-only but for
// the pages made writable (mprotect splits the reservation). Its resident KB (smaps) go to
// *rss_out; returns whether it was found.
static int find_flat_map(long *rss_out) {
    char line[512];
    unsigned long run_start = 0, run_end = 0;
    long run_rss = 0;
    int in_run = 0, found = 0;
    FILE *f = fopen("/proc/self/smaps", "r");
    CHECK(f != NULL, "cannot read /proc/self/smaps");
    while (!found && fgets(line, sizeof line, f)) {
        unsigned long start, end, offset;
        char perms[8], path[256] = "";
        if (sscanf(line, "%lx-%lx %7s %lx %*s %*s %255s", &start, &end, perms, &offset, path) >= 4) {
            if (in_run && run_end - run_start == FLAT_MAP_BYTES) { // complete, Rss lines read
                found = 1;
                break;
            }
            int anonymous = path[0] == '\0';
            int readonly = !strcmp(perms, "r--p"), writable = !strcmp(perms, "rw-p");
            if (in_run && anonymous && start == run_end && (readonly || writable)) {
                run_end = end; // the run goes on
            } else {
                in_run = anonymous && readonly; // a reservation starts read-only
                run_start = start;
                run_end = end;
                run_rss = 0;
            }
            if (run_end - run_start > FLAT_MAP_BYTES) in_run = 0;
        } else if (in_run && !strncmp(line, "Rss:", 4)) {
            run_rss += atol(line + 4);
        }
    }
    if (in_run && run_end - run_start == FLAT_MAP_BYTES) found = 1;
    if (found) *rss_out = run_rss;
    fclose(f);
    return found;
}

int main(int argc, char **argv) {
    CHECK(argc == 2 && (!strcmp(argv[1], "reserved") || !strcmp(argv[1], "absent")), "usage: %s reserved|absent", argv[0]);
    int expect = !strcmp(argv[1], "reserved");
    // Small objects of many sizes, freed in a scrambled order: contents survive either way.
    enum { N = 50000 };
    static unsigned char *objs[N];
    static size_t sizes[N];
    uint64_t s = 11;
    for (int i = 0; i < N; i++) {
        sizes[i] = 1 + (size_t)i % 2000;
        objs[i] = malloc(sizes[i]);
        CHECK(objs[i] != NULL, "malloc(%zu)", sizes[i]);
        memset(objs[i], (int)(sizes[i] & 0xff), sizes[i]);
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
    long rss = -1;
    int found = find_flat_map(&rss);
    printf("flat map %s, %ld KB resident\n", found ? "reserved" : "absent", rss);
    CHECK(found == expect, "flat map expected %s", argv[1]);
    // Only the pages holding entries of our superblocks are ever written.
    if (found) CHECK(rss >= 0 && rss <= 64, "flat map holds %ld KB", rss);
    return 0;
}
