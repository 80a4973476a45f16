/* syscall_phases: allocates in marked phases, for `strace -f` (test/system/field_syscalls.sh
 * and docs/syscalls.md). Each phase starts with write(-1, "PHASE name") (EBADF), which strace
 * shows, so that every other call can be placed in the phase that made it. */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void phase(const char *name) {
    char buf[64] = "PHASE ";
    strncat(buf, name, sizeof buf - 7);
    if (write(-1, buf, strlen(buf)) < 0) {
    } /* EBADF, by design */
}

static void *volatile sink;

static void *thread_main(void *arg) {
    (void)arg;
    phase("thread-first-malloc");
    sink = malloc(40);
    free(sink);
    phase("thread-exit");
    return NULL;
}

int main(void) {
    phase("first-malloc");
    char *first = malloc(32);
    sink = first;
    phase("small-objects");
    static void *small[20000];
    for (int i = 0; i < 20000; i++) small[i] = malloc(16 + i % 1000); /* past one superblock */
    phase("small-free");
    for (int i = 0; i < 20000; i++) free(small[i]);
    phase("medium-object");
    sink = malloc(200 * 1024);
    free(sink);
    phase("large-object");
    char *large = malloc(64 << 20);
    memset(large, 1, 4096);
    phase("large-realloc");
    large = realloc(large, 128 << 20);
    phase("large-free");
    free(large);
    phase("aligned");
    void *aligned = NULL;
    if (posix_memalign(&aligned, 1 << 20, 1 << 20) == 0) free(aligned);
    phase("thread-create");
    pthread_t t;
    pthread_create(&t, NULL, thread_main, NULL);
    pthread_join(t, NULL);
    phase("fork");
    pid_t pid = fork();
    if (pid == 0) {
        phase("fork-child-malloc");
        for (int i = 0; i < 1000; i++) free(malloc(100 + i));
        _exit(0);
    }
    waitpid(pid, NULL, 0);
    phase("malloc_trim");
    malloc_trim(0);
    phase("idle-then-malloc"); /* past BOBOX_DECAY_MS: cached memory goes back on this call */
    usleep(300 * 1000);
    sink = malloc(64 << 20);
    free(sink);
    for (int i = 0; i < 20000; i++) small[i] = malloc(16 + i % 1000);
    for (int i = 0; i < 20000; i++) free(small[i]);
    phase("exit");
    free(first);
    return 0;
}
