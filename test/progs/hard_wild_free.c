/* hard_wild_free.c - frees addresses swept across every kind of memory the allocator maps,
 * each in a forked child, and counts how the child ends. Every address that is not a live
 * object's must abort with a "bobox: ...free()..." message: never crash, never return.
 *
 * The memory swept: small superblocks (the header chunk, formatted blocks, blocks never
 * formatted, blocks back in the block cache), one recycled from a medium format with old
 * contents that look like block headers of this thread, medium superblocks (header, live and
 * cached blocks), and large mappings (header page, live, cached). Usage:
 *   hard_wild_free owner|other     the child frees from the owning thread or a new one
 * Prints "swept N: aborted A, crashed C, returned R" and exits 0 when C and R are 0. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHUNK 65536
#define STEP 4144

static void *live[64];
static size_t nlive;

static int is_live(uintptr_t a) {
    for (size_t i = 0; i < nlive; i++)
        if ((uintptr_t)live[i] == a) return 1;
    return 0;
}

static void *target;
static void *free_target(void *arg) {
    (void)arg;
    free(target);
    return NULL;
}

/* 0: aborted with bobox's message, 1: crashed (other signal or no message), 2: returned. */
static int try_free(uintptr_t a, int other_thread) {
    int fds[2];
    if (pipe(fds) != 0) abort();
    pid_t pid = fork();
    if (pid < 0) abort();
    if (pid == 0) {
        struct rlimit none = {0, 0};
        setrlimit(RLIMIT_CORE, &none);
        dup2(fds[1], 2);
        close(fds[0]);
        target = (void *)a;
        if (other_thread) {
            pthread_t t;
            if (pthread_create(&t, NULL, free_target, NULL) != 0) _exit(3);
            pthread_join(t, NULL);
        } else {
            free(target);
        }
        _exit(0);
    }
    close(fds[1]);
    char buf[512] = {0};
    size_t got = 0;
    ssize_t n;
    while (got < sizeof buf - 1 && (n = read(fds[0], buf + got, sizeof buf - 1 - got)) > 0) got += (size_t)n;
    close(fds[0]);
    int status;
    waitpid(pid, &status, 0);
    if (WIFEXITED(status)) {
        fprintf(stderr, "returned: free(%p)\n", (void *)a);
        return 2;
    }
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT && strstr(buf, "bobox: ") && strstr(buf, "free()")) return 0;
    fprintf(stderr, "crashed: free(%p): signal %d, stderr: %.200s\n", (void *)a, WIFSIGNALED(status) ? WTERMSIG(status) : 0,
            buf);
    return 1;
}

static size_t sweep(uintptr_t from, uintptr_t to, int other_thread, size_t counts[3]) {
    size_t n = 0;
    for (uintptr_t a = from; a < to; a += STEP) {
        if (is_live(a)) continue;
        counts[try_free(a, other_thread)]++;
        n++;
    }
    return n;
}

int main(int argc, char **argv) {
    int other = argc > 1 && !strcmp(argv[1], "other");
    /* A medium superblock full of words that read like this thread's block headers, freed
     * whole so that the node recycles it for small blocks below. */
    void *probe = malloc(48);
    uintptr_t heap_word = *(uintptr_t *)(((uintptr_t)probe & ~(uintptr_t)(CHUNK - 1)) + 64);
    enum { MEDIUM_FILL = 40 };
    void *medium[MEDIUM_FILL];
    for (int i = 0; i < MEDIUM_FILL; i++) {
        medium[i] = malloc(300 * 1024);
        for (size_t w = 0; w < 300 * 1024 / sizeof(uintptr_t); w++) ((uintptr_t *)medium[i])[w] = heap_word;
    }
    for (int i = 0; i < MEDIUM_FILL; i++) free(medium[i]);
    /* 20,000 small objects allocated and freed, as in the report; some stay live. */
    enum { SMALL = 20000 };
    static void *small[SMALL];
    for (int i = 0; i < SMALL; i++) small[i] = malloc(48);
    for (int i = 0; i < SMALL; i++)
        if (i % 5000) free(small[i]);
    for (int i = 0; i < SMALL; i += 5000) live[nlive++] = small[i];
    live[nlive++] = probe;
    /* Medium and large: live and freed (cached). */
    void *m_live = malloc(64 * 1024), *m_freed = malloc(64 * 1024);
    void *l_live = malloc(2 << 20), *l_freed = malloc(3 << 20);
    uintptr_t m_cached = (uintptr_t)m_freed, l_cached = (uintptr_t)l_freed;
    free(m_freed);
    free(l_freed);
    live[nlive++] = m_live;
    live[nlive++] = l_live;

    size_t counts[3] = {0}, n = 0;
    uintptr_t s = (uintptr_t)small[0] & ~(uintptr_t)(CHUNK - 1);
    n += sweep(s - CHUNK, s + (12u << 20), other, counts);
    uintptr_t m = (uintptr_t)m_live;
    n += sweep(m - 64 * STEP, m + 64 * STEP, other, counts);
    uintptr_t l = (uintptr_t)l_live - 4096;
    n += sweep(l - 4 * STEP, l + 64 * STEP, other, counts);
    n += sweep(m_cached - 4 * STEP, m_cached + 4 * STEP, other, counts);
    uintptr_t lf = l_cached - 4096;
    n += sweep(lf - 4 * STEP, lf + 64 * STEP, other, counts);
    printf("swept %zu: aborted %zu, crashed %zu, returned %zu\n", n, counts[0], counts[1], counts[2]);
    return counts[1] || counts[2] ? 1 : 0;
}
