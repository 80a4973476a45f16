// Under RLIMIT_AS of 512 MB: allocating until NULL gives NULL with ENOMEM every time (never a
// crash), and only at the limit: each failure of a request of `size` leaves less than `size`
// plus one superblock mapping's worth of address space. First each size alone, in a child of
// its own, fills the limit and, freed, leaves room for 400 MB; then mixed sizes. At the limit
// the aligned, zeroing and resizing calls fail with ENOMEM too; after freeing everything the
// 400 MB that realloc could not have succeeds, and allocation works again in every range.
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include "mem_common.h"

#define MAX_OBJS 200000
#define LIMIT (512L << 20)
// A superblock is 10 MB mapped at 16 MB alignment (26 MB of address space while it is placed),
// plus room for the page map and heap records that may grow with it.
#define SLACK (32L << 20)

static void check_failure(size_t size) {
    CHECK(errno == ENOMEM, "NULL from malloc(%zu) with errno %d, not ENOMEM", size, errno);
    long left = LIMIT - vm_bytes();
    CHECK(left < (long)size + SLACK, "malloc(%zu) failed with %ld MB of address space left", size, left >> 20);
}

// Objects of one size until NULL, chained through their first word (no array to hold them).
static void fill_one_size(size_t size) {
    void **head = NULL;
    size_t count = 0;
    for (;;) {
        errno = 0;
        void **p = malloc(size);
        if (!p) break;
        *p = head;
        head = p;
        count++;
    }
    check_failure(size);
    printf("malloc(%zu): %zu objects (%zu MB), then NULL with %ld MB of address space left\n", size, count,
           (count * size) >> 20, (LIMIT - vm_bytes()) >> 20);
    CHECK(count * size > (LIMIT >> 1), "only %zu MB of malloc(%zu) under a %ld MB limit", (count * size) >> 20, size,
          LIMIT >> 20);
    while (head) {
        void **next = *head;
        free(head);
        head = next;
    }
    char *big = malloc(400 << 20);
    CHECK(big != NULL, "400 MB after freeing the objects of malloc(%zu)", size);
    memset(big, 5, 400 << 20);
    free(big);
}

int main(void) {
    struct rlimit lim = {LIMIT, LIMIT};
    CHECK(setrlimit(RLIMIT_AS, &lim) == 0, "setrlimit");
    static void *objs[MAX_OBJS];
    size_t n = 0, failures = 0, bytes = 0;
    uint64_t s = 7;
    const size_t sizes[] = {24, 200, 3000, 15000, 40000, 300000, 2 << 20, 30 << 20};
    for (int k = 0; k < 8; k++) {
        fflush(stdout);
        pid_t child = fork();
        CHECK(child >= 0, "fork");
        if (child == 0) {
            fill_one_size(sizes[k]);
            exit(0);
        }
        int status;
        CHECK(waitpid(child, &status, 0) == child, "waitpid");
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child filling with malloc(%zu) failed (status %#x)",
              sizes[k], status);
    }
    long most_left = 0;
    while (n < MAX_OBJS && failures < 400) {
        s = s * 6364136223846793005ULL + 1;
        size_t size = sizes[(s >> 33) % 8];
        errno = 0;
        char *p = (s >> 40) % 5 == 0 ? calloc(1, size) : malloc(size);
        if (!p) {
            check_failure(size);
            long left = LIMIT - vm_bytes();
            if (left > most_left) most_left = left;
            failures++;
            continue;
        }
        p[0] = 1;
        p[size - 1] = 2;
        objs[n++] = p;
        bytes += size;
    }
    printf("%zu objects (%zu MB) before %zu failures; at most %ld MB left at a failure\n", n, bytes >> 20, failures,
           most_left >> 20);
    CHECK(failures >= 400, "never ran out of memory under a 512 MB limit");
    // At the limit the other calls fail cleanly too.
    void *q = &q;
    int rc = posix_memalign(&q, 1 << 20, 200 << 20);
    CHECK(rc == ENOMEM && q == &q, "posix_memalign at the limit returned %d", rc);
    errno = 0;
    CHECK(aligned_alloc(4096, 200 << 20) == NULL && errno == ENOMEM, "aligned_alloc at the limit");
    errno = 0;
    CHECK(calloc(1, 200 << 20) == NULL && errno == ENOMEM, "calloc at the limit");
    errno = 0;
    CHECK(realloc(objs[0], 400 << 20) == NULL && errno == ENOMEM, "realloc beyond the limit");
    CHECK(((char *)objs[0])[0] == 1, "a failed realloc lost the old object");
    for (size_t i = 0; i < n; i++) free(objs[i]);
    // What was freed is usable again: the caches are given back when a request needs it.
    char *big = malloc(400 << 20);
    CHECK(big != NULL, "400 MB after freeing everything (%ld MB of address space in use)", vm_bytes() >> 20);
    memset(big, 4, 400 << 20);
    free(big);
    for (int round = 0; round < 3; round++) {
        big = malloc(200 << 20);
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
