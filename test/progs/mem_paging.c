// Thesis program 7.1: malloc, fill and free a 256 MB buffer in a loop. With the large-object
// cache, iterations after the first take (almost) no page faults; once the loop ends and the
// program idles past the decay delay, the memory goes back to the OS.
#include <sys/prctl.h>
#include <sys/resource.h>
#include "mem_common.h"

#define SIZE (256L << 20)
#define ITERATIONS 8

static long minor_faults(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_minflt;
}

int main(void) {
    // Count 4 KB faults: transparent huge pages would hide them behind a few 2 MB ones.
    prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);
    long pages = SIZE / sysconf(_SC_PAGESIZE);
    for (int i = 0; i < ITERATIONS; i++) {
        long before = minor_faults();
        char *p = malloc(SIZE);
        CHECK(p != NULL, "malloc");
        touch_memory(p, i + 1, SIZE);
        CHECK(p[SIZE - 1] == i + 1, "contents");
        free(p);
        long faults = minor_faults() - before;
        printf("iteration %d: %ld page faults (%ld pages)\n", i, faults, pages);
        if (i == 0)
            CHECK(faults > pages / 2, "the first iteration must touch fresh memory");
        else
            CHECK(faults < pages / 100, "iteration %d took %ld faults: the buffer was not reused", i, faults);
    }
    long busy = rss_kb();
    long decay = env_long("BOBOX_DECAY_MS", 1000);
    usleep((useconds_t)(decay + 200) * 1000);
    one_further_malloc();
    long idle = rss_kb();
    printf("RSS after the loop %ld KB, after idling %ld KB\n", busy, idle);
    CHECK(busy > SIZE / 1024 / 2, "the cached buffer should still be resident right after the loop");
    CHECK(idle < 64 * 1024, "RSS %ld KB after idling: the cached buffer was not given back", idle);
    return 0;
}
