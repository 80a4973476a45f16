// Under RLIMIT_AS of 512 MB: allocating until NULL gives NULL with ENOMEM every time (never a
// crash), and after freeing everything allocation works again.
#include <errno.h>
#include <stdint.h>
#include <sys/resource.h>
#include "mem_common.h"

#define MAX_OBJS 200000

int main(void) {
    struct rlimit lim = {512L << 20, 512L << 20};
    CHECK(setrlimit(RLIMIT_AS, &lim) == 0, "setrlimit");
    static void *objs[MAX_OBJS];
    size_t n = 0, failures = 0, bytes = 0;
    uint64_t s = 7;
    const size_t sizes[] = {24, 200, 3000, 15000, 40000, 300000, 2 << 20, 30 << 20};
    // Fill until every size class fails at least a few times.
    while (n < MAX_OBJS && failures < 400) {
        s = s * 6364136223846793005ULL + 1;
        size_t size = sizes[(s >> 33) % 8];
        errno = 0;
        char *p = (s >> 40) % 5 == 0 ? calloc(1, size) : malloc(size);
        if (!p) {
            CHECK(errno == ENOMEM, "NULL from malloc(%zu) with errno %d, not ENOMEM", size, errno);
            failures++;
            continue;
        }
        p[0] = 1;
        p[size - 1] = 2;
        objs[n++] = p;
        bytes += size;
    }
    printf("%zu objects (%zu MB) before %zu failures\n", n, bytes >> 20, failures);
    CHECK(failures >= 400, "never ran out of memory under a 512 MB limit");
    // Aligned and resizing calls fail cleanly too.
    void *q = NULL;
    for (int i = 0; i < 20; i++) {
        int rc = posix_memalign(&q, 1 << 20, 200 << 20);
        CHECK(rc == ENOMEM || rc == 0, "posix_memalign returned %d", rc);
        if (rc == 0) free(q);
    }
    errno = 0;
    CHECK(realloc(objs[0], 400 << 20) == NULL && errno == ENOMEM, "realloc beyond the limit");
    CHECK(((char *)objs[0])[0] == 1, "a failed realloc lost the old object");
    for (size_t i = 0; i < n; i++) free(objs[i]);
    // Everything is back: allocation works again, in every range.
    for (int round = 0; round < 3; round++) {
        char *big = malloc(200 << 20);
        CHECK(big != NULL, "200 MB after freeing everything (round %d)", round);
        memset(big, 3, 200 << 20);
        for (size_t i = 0; i < 1000; i++) {
            objs[i] = malloc(sizes[i % 6]);
            CHECK(objs[i] != NULL, "malloc(%zu) after freeing everything", sizes[i % 6]);
        }
        for (size_t i = 0; i < 1000; i++) free(objs[i]);
        free(big);
    }
    printf("recovered\n");
    return 0;
}
