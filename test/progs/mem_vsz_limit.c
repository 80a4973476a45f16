// RLIMIT_AS set the way a torture test sets it: VmSize, read from /proc/self/status (which
// counts the small arena's 256 GB reservation), plus 512 MB, soft and hard. Allocating up to
// 4 GB must then fail with ENOMEM within the 512 MB (never a crash), first in chunks of mixed
// sizes, then, freed, in small objects alone; after freeing, allocation works again.
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/resource.h>
#include "mem_common.h"

#define HEADROOM (512L << 20)
#define TOTAL (4L << 30)
#define MAX_OBJS (8L << 20)

static void *objs[MAX_OBJS];

// Allocates sizes[i % n] until NULL or TOTAL bytes; returns the bytes allocated. Each object
// is written at both ends.
static long fill(const size_t *sizes, size_t n, long *count) {
    long total = 0, i = 0;
    for (; total < TOTAL && i < MAX_OBJS; i++) {
        size_t size = sizes[i % n];
        errno = 0;
        char *p = malloc(size);
        if (!p) {
            CHECK(errno == ENOMEM, "malloc(%zu) gave NULL with errno %d, not ENOMEM", size, errno);
            break;
        }
        p[0] = 1, p[size - 1] = 1;
        objs[i] = p;
        total += (long)size;
    }
    *count = i;
    return total;
}

static void free_all(long count) {
    for (long i = 0; i < count; i++) free(objs[i]);
}

int main(void) {
    long vm = vm_bytes();
    struct rlimit lim = {(rlim_t)(vm + HEADROOM), (rlim_t)(vm + HEADROOM)};
    CHECK(setrlimit(RLIMIT_AS, &lim) == 0, "setrlimit(RLIMIT_AS, %ld MB): errno %d", (long)lim.rlim_cur >> 20, errno);
    struct rlimit now;
    CHECK(getrlimit(RLIMIT_AS, &now) == 0, "getrlimit");
    printf("VmSize %ld MB, limit set to %ld MB, in force %ld MB, VmSize now %ld MB\n", vm >> 20,
           (long)lim.rlim_cur >> 20, (long)now.rlim_cur >> 20, vm_bytes() >> 20);

    static const size_t mixed[] = {16, 100, 1000, 8000, 16000, 100000, 500000, 2 << 20, 30 << 20};
    long count, total = fill(mixed, sizeof mixed / sizeof mixed[0], &count);
    printf("mixed sizes: %ld objects, %ld MB before ENOMEM\n", count, total >> 20);
    CHECK(total < TOTAL, "4 GB allocated under a limit of VmSize + 512 MB");
    CHECK(total <= HEADROOM, "%ld MB allocated under a limit of VmSize + 512 MB", total >> 20);
    CHECK(total >= HEADROOM / 4, "only %ld MB allocated under VmSize + 512 MB", total >> 20);
    free_all(count);

    static const size_t small[] = {16, 48, 64, 256, 1024};
    total = fill(small, sizeof small / sizeof small[0], &count);
    printf("small objects: %ld objects, %ld MB before ENOMEM\n", count, total >> 20);
    CHECK(count < MAX_OBJS && total < TOTAL, "small objects never ran out under the limit");
    CHECK(total <= HEADROOM, "%ld MB of small objects under a limit of VmSize + 512 MB", total >> 20);
    CHECK(total >= HEADROOM / 8, "only %ld MB of small objects under VmSize + 512 MB", total >> 20);
    free_all(count);

    void *again = malloc(100 << 20);
    CHECK(again != NULL, "malloc(100 MB) after freeing everything: errno %d", errno);
    free(again);
    puts("PASS");
    return 0;
}
