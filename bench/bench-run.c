/* bench-run: runs one benchmark command and measures it from outside.
 * Usage: bench-run [-t timeout_s] [-e VAR=VALUE]... [-i stdin_file] [-o stdout_file] [-s samples_file]
 *                  -- cmd [args]
 * -s: every 20 ms, the child's resident memory (/proc/PID/statm) as "seconds kilobytes" lines:
 * the curve of memory over time that bench-report.py plots.
 * The environment settings (LD_PRELOAD, BOBOX_PIN) apply to the child only, so the runner
 * itself is never measured under the allocator being tested. Prints, after the child ends:
 *   RUN status=ok|exit:N|signal:N|timeout wall_s=.. maxrss_kb=.. minflt=.. majflt=.. utime_s=.. stime_s=..
 * maxrss and faults come from wait4() and include the child's waited-for descendants. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t timed_out;
static void on_alarm(int sig)
{
    (void)sig;
    timed_out = 1;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void redirect(const char *path, int fd, int flags)
{
    int f = open(path, flags, 0644);
    if (f < 0 || dup2(f, fd) < 0) {
        perror(path);
        _exit(126);
    }
    close(f);
}

int main(int argc, char **argv)
{
    unsigned timeout = 0;
    const char *in = NULL, *out = NULL, *samples = NULL;
    char *envs[64];
    int nenv = 0, opt;
    while ((opt = getopt(argc, argv, "+t:e:i:o:s:")) != -1) {
        switch (opt) {
        case 't': timeout = (unsigned)atoi(optarg); break;
        case 'e':
            if (nenv < 64)
                envs[nenv++] = optarg;
            break;
        case 'i': in = optarg; break;
        case 'o': out = optarg; break;
        case 's': samples = optarg; break;
        default:
            fprintf(stderr, "usage: %s [-t s] [-e VAR=VAL]... [-i in] [-o out] [-s samples] -- cmd...\n", argv[0]);
            return 2;
        }
    }
    if (optind >= argc) {
        fprintf(stderr, "bench-run: no command\n");
        return 2;
    }
    fflush(stdout);
    double t0 = now_s();
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return 2;
    }
    if (pid == 0) {
        setpgid(0, 0);                       /* so a timeout can kill the whole tree */
        for (int i = 0; i < nenv; i++)
            putenv(envs[i]);
        if (in)
            redirect(in, 0, O_RDONLY);
        if (out)
            redirect(out, 1, O_WRONLY | O_CREAT | O_TRUNC);
        execvp(argv[optind], &argv[optind]);
        perror(argv[optind]);
        _exit(127);
    }
    setpgid(pid, pid);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;                /* no SA_RESTART: wait4 returns EINTR */
    sigaction(SIGALRM, &sa, NULL);
    if (timeout)
        alarm(timeout);

    int status = 0;
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    FILE *sf = NULL;
    char statm[64];
    snprintf(statm, sizeof statm, "/proc/%d/statm", (int)pid);
    if (samples && !(sf = fopen(samples, "w"))) {
        perror(samples);
        kill(-pid, SIGKILL);
    }
    long page_kb = sysconf(_SC_PAGESIZE) / 1024;
    for (;;) {
        pid_t r = wait4(pid, &status, sf ? WNOHANG : 0, &ru);
        if (r == 0) {                        /* still running: a sample, then 20 ms */
            FILE *f = fopen(statm, "r");
            long size, resident;
            if (f && fscanf(f, "%ld %ld", &size, &resident) == 2)
                fprintf(sf, "%.3f %ld\n", now_s() - t0, resident * page_kb);
            if (f)
                fclose(f);
            struct timespec pause = {0, 20 * 1000 * 1000};
            nanosleep(&pause, NULL);
            if (timed_out) {
                kill(-pid, SIGKILL);
                kill(pid, SIGKILL);
            }
            continue;
        }
        if (r == pid)
            break;
        if (r < 0 && errno == EINTR && timed_out) {
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
            continue;
        }
        if (r < 0 && errno != EINTR) {
            perror("wait4");
            return 2;
        }
    }
    double wall = now_s() - t0;
    alarm(0);
    if (sf)
        fclose(sf);
    kill(-pid, SIGKILL);                     /* leftover grandchildren, if any */

    char st[32];
    if (timed_out)
        snprintf(st, sizeof st, "timeout");
    else if (WIFSIGNALED(status))
        snprintf(st, sizeof st, "signal:%d", WTERMSIG(status));
    else if (WEXITSTATUS(status))
        snprintf(st, sizeof st, "exit:%d", WEXITSTATUS(status));
    else
        snprintf(st, sizeof st, "ok");
    printf("RUN status=%s wall_s=%.6f maxrss_kb=%ld minflt=%ld majflt=%ld utime_s=%.6f stime_s=%.6f\n",
           st, wall, ru.ru_maxrss, ru.ru_minflt, ru.ru_majflt,
           (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6,
           (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6);
    return 0;
}
