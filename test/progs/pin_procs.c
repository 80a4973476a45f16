/* Test program for the pinning shim's process trees: prints one line per process (or thread)
 * it starts, `role=R i=I pid=P ppid=PP allowed=LIST`, the affinity as the kernel reports it,
 * taken while every process of the round is alive.
 *
 * usage: pin_procs fork N     N children by fork (no exec), alive together
 *        pin_procs spawn N    N children by posix_spawn of this program (exec), alive together
 *        pin_procs lend       a forked child that ends normally, then a thread of the parent
 *        pin_procs reap       children A and B alive; B killed (SIGKILL) and reaped; then C
 *        pin_procs report HOLD READY   (a spawned child: report, tell READY, wait for HOLD's EOF) */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static void report(const char *role, int i)
{
    char line[4096], allowed[256] = "?";
    FILE *f = fopen("/proc/thread-self/status", "r");
    if (f) {
        while (fgets(line, sizeof line, f))
            if (!strncmp(line, "Cpus_allowed_list:", 18)) {
                char *v = line + 18 + strspn(line + 18, " \t");
                v[strcspn(v, "\n")] = '\0';
                snprintf(allowed, sizeof allowed, "%s", v);
            }
        fclose(f);
    }
    printf("role=%s i=%d pid=%d ppid=%d allowed=%s\n", role, i, (int)getpid(), (int)getppid(), allowed);
    fflush(stdout);
}

static void die(const char *what)
{
    perror(what);
    exit(2);
}

static int hold[2], ready[2];

/* A child that reports, says it is ready, and stays alive until the parent closes HOLD. */
static pid_t fork_holder(const char *role, int i)
{
    pid_t pid = fork();
    if (pid < 0)
        die("fork");
    if (pid == 0) {
        close(hold[1]);
        report(role, i);
        if (write(ready[1], "r", 1) != 1)
            _exit(2);
        char c;
        while (read(hold[0], &c, 1) > 0) {
        }
        exit(0); /* normally: its place goes back */
    }
    return pid;
}

static void await_ready(int n)
{
    char c;
    for (int i = 0; i < n; i++)
        if (read(ready[0], &c, 1) != 1)
            die("ready");
}

static void *thread_report(void *arg)
{
    (void)arg;
    report("thread", 1);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    const char *mode = argv[1];
    if (!strcmp(mode, "report") && argc == 4) {
        int h = atoi(argv[2]), r = atoi(argv[3]);
        report("child", -1);
        if (write(r, "r", 1) != 1)
            return 2;
        char c;
        while (read(h, &c, 1) > 0) {
        }
        return 0;
    }
    if (pipe(hold) || pipe(ready))
        die("pipe");
    report("parent", 0);
    int n = argc > 2 ? atoi(argv[2]) : 0;
    if (!strcmp(mode, "fork")) {
        for (int i = 0; i < n; i++)
            fork_holder("child", i);
        await_ready(n);
    } else if (!strcmp(mode, "spawn")) {
        char h[16], r[16];
        snprintf(h, sizeof h, "%d", hold[0]);
        snprintf(r, sizeof r, "%d", ready[1]);
        char *args[] = { argv[0], "report", h, r, NULL };
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addclose(&fa, hold[1]);
        for (int i = 0; i < n; i++) {
            pid_t pid;
            if (posix_spawn(&pid, "/proc/self/exe", &fa, NULL, args, environ))
                die("posix_spawn");
        }
        await_ready(n);
    } else if (!strcmp(mode, "lend")) {
        pid_t pid = fork();
        if (pid == 0) {
            report("child", 0);
            exit(0);
        }
        waitpid(pid, NULL, 0);
        pthread_t t;
        if (pthread_create(&t, NULL, thread_report, NULL))
            die("pthread_create");
        pthread_join(t, NULL);
    } else if (!strcmp(mode, "reap")) {
        /* A is placed before B is forked: which of two racing children borrows the parent's
         * place is up to the scheduler (CI saw B first, then A on the free place) */
        fork_holder("A", 0);
        await_ready(1);
        pid_t b = fork_holder("B", 1);
        await_ready(1);
        kill(b, SIGKILL);
        waitpid(b, NULL, 0);
        nanosleep(&(struct timespec){ 0, 60 * 1000 * 1000 }, NULL); /* past the reaping interval */
        fork_holder("C", 2);
        await_ready(1);
    } else {
        return 2;
    }
    close(hold[1]);
    while (wait(NULL) > 0) {
    }
    return 0;
}
