/* field_fork_first [ROUNDS]: fork from a thread while another thread is inside its very first
 * allocation (its heap being set up). Every child must malloc, free and exit 0; a child that
 * hangs (a lock held by the other thread at fork time) is reported after 10 s and killed. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static atomic_int go;
static int round_no;

static void spin(int n) {
    for (volatile int i = 0; i < n; i++) {
    }
}

/* Yields while waiting: on a loaded machine a pure spin would starve the thread it waits for. */
static void wait_for_go(void) {
    while (!atomic_load_explicit(&go, memory_order_acquire)) sched_yield();
}

/* Its first action is to allocate: small, medium and large objects. */
static void *first_alloc(void *arg) {
    (void)arg;
    wait_for_go();
    size_t sizes[] = {24, 3000, 200000, (size_t)2 << 20};
    void *p = malloc(sizes[round_no % 4]);
    if (!p) abort();
    memset(p, 1, 16);
    free(p);
    return NULL;
}

/* The child: allocate and free in the forking thread and in a new one. */
static void *child_thread(void *arg) {
    (void)arg;
    for (int i = 0; i < 200; i++) free(malloc((size_t)(i * 131) % 70000 + 1));
    return NULL;
}

static int child(void) {
    for (int i = 0; i < 200; i++) {
        char *p = malloc((size_t)(i * 97) % 5000 + 1);
        if (!p) return 3;
        p[0] = (char)i;
        free(p);
    }
    pthread_t t;
    if (pthread_create(&t, NULL, child_thread, NULL) != 0) return 4;
    pthread_join(t, NULL);
    return 0;
}

/* Forks as soon as the other thread starts allocating, then waits for the child. */
static void *forker(void *arg) {
    int *status = arg;
    wait_for_go();
    spin(round_no % 64 * 50); /* fork at different points of the other thread's first malloc */
    pid_t pid = fork();
    if (pid < 0) {
        *status = -1;
        return NULL;
    }
    if (pid == 0) _exit(child());
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        pid_t r = waitpid(pid, status, WNOHANG);
        if (r == pid) return NULL;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - start.tv_sec >= 10) {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
            *status = -2;
            return NULL;
        }
        usleep(1000);
    }
}

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 500;
    int failed = 0;
    for (round_no = 0; round_no < rounds; round_no++) {
        atomic_store(&go, 0);
        pthread_t a, f;
        int status = 0;
        if (pthread_create(&a, NULL, first_alloc, NULL) || pthread_create(&f, NULL, forker, &status)) {
            fprintf(stderr, "pthread_create failed\n");
            return 2;
        }
        atomic_store_explicit(&go, 1, memory_order_release);
        pthread_join(a, NULL);
        pthread_join(f, NULL);
        if (status == -2) {
            fprintf(stderr, "round %d: the child hung for 10 s (deadlock after fork)\n", round_no);
            failed++;
        } else if (status == -1) {
            fprintf(stderr, "round %d: fork failed\n", round_no);
            failed++;
        } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            fprintf(stderr, "round %d: child %s %d\n", round_no, WIFSIGNALED(status) ? "killed by signal" : "exited with",
                    WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
            failed++;
        }
        if (failed >= 3) break;
    }
    printf("%d rounds, %d children failed\n", round_no < rounds ? round_no + 1 : rounds, failed);
    return failed ? 1 : 0;
}
