/* Test program for the pinning shim: starts N pthreads one after the other and prints, for the
 * main thread (thread=0) and each thread k, the CPU it was on when its start routine began and
 * its affinity as the kernel reports it (/proc/self/task/TID/status, Cpus_allowed_list).
 *
 * usage: pin_threads N [--selfpin=K:CPU] [--attr=K:CPU] [--setafter=K:CPU] [--malloc] [--waves=W] [--exit]
 *                      [--spawn-from=K -- CMD ARGS...]
 *   --selfpin   thread K pins itself with pthread_setaffinity_np first thing
 *   --attr      thread K is created with that affinity in its attribute
 *   --setafter  main pins thread K with pthread_setaffinity_np right after creating it
 *   --malloc    each thread allocates and frees a little (runs with a preloaded allocator)
 *   --waves     W rounds: the N threads are joined and N new ones started, W times; lines
 *               carry wave=0..W-1 (thread numbers k restart at 1 in every wave)
 *   --exit      the threads end with pthread_exit instead of returning
 *   --spawn-from thread K runs CMD (fork + exec) once every thread is up, and waits for it */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAXT 256

struct th {
    int k;
    pid_t tid;
    int start_cpu;
};

static struct th info[MAXT];
static pthread_barrier_t ready, done;
static int selfpin_k = -1, selfpin_cpu, attr_k = -1, attr_cpu, after_k = -1, after_cpu, spawn_k = -1, do_malloc;
static int waves = 1, do_exit;
static char **spawn_argv;

static void allowed(pid_t tid, char *out, size_t len)
{
    char path[64], line[4096];
    snprintf(path, sizeof path, "/proc/self/task/%d/status", (int)tid);
    snprintf(out, len, "?");
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "Cpus_allowed_list:", 18)) {
            char *v = line + 18;
            v += strspn(v, " \t");
            v[strcspn(v, "\n")] = '\0';
            snprintf(out, len, "%s", v);
        }
    fclose(f);
}

static void one_cpu(int cpu, cpu_set_t *s)
{
    CPU_ZERO(s);
    CPU_SET(cpu, s);
}

static void spawn(void)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        execvp(spawn_argv[0], spawn_argv);
        perror("exec");
        _exit(127);
    }
    int st;
    waitpid(pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        fprintf(stderr, "pin_threads: child failed\n");
}

static void *run(void *p)
{
    struct th *t = p;
    t->start_cpu = sched_getcpu(); /* before anything else: the shim's contract */
    t->tid = (pid_t)syscall(SYS_gettid);
    if (t->k == selfpin_k) {
        cpu_set_t s;
        one_cpu(selfpin_cpu, &s);
        pthread_setaffinity_np(pthread_self(), sizeof s, &s);
    }
    if (do_malloc)
        for (int i = 0; i < 1000; i++)
            free(malloc((size_t)(16 + i)));
    pthread_barrier_wait(&ready);
    if (t->k == spawn_k)
        spawn();
    pthread_barrier_wait(&done);
    if (do_exit)
        pthread_exit(NULL);
    return NULL;
}

static int parse_pair(const char *arg, const char *name, int *k, int *cpu)
{
    size_t n = strlen(name);
    return !strncmp(arg, name, n) && sscanf(arg + n, "%d:%d", k, cpu) == 2;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: pin_threads N [options]\n");
        return 2;
    }
    int n = atoi(argv[1]);
    if (n < 0 || n >= MAXT)
        return 2;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--")) {
            spawn_argv = argv + i + 1;
            break;
        }
        if (parse_pair(argv[i], "--selfpin=", &selfpin_k, &selfpin_cpu) ||
            parse_pair(argv[i], "--attr=", &attr_k, &attr_cpu) || parse_pair(argv[i], "--setafter=", &after_k, &after_cpu))
            continue;
        if (!strncmp(argv[i], "--spawn-from=", 13))
            spawn_k = atoi(argv[i] + 13);
        else if (!strcmp(argv[i], "--malloc"))
            do_malloc = 1;
        else if (!strcmp(argv[i], "--exit"))
            do_exit = 1;
        else if (!strncmp(argv[i], "--waves=", 8) && (waves = atoi(argv[i] + 8)) > 0)
            continue;
        else {
            fprintf(stderr, "pin_threads: bad option %s\n", argv[i]);
            return 2;
        }
    }
    info[0].k = 0;
    info[0].tid = getpid();
    info[0].start_cpu = sched_getcpu();
    for (int wave = 0; wave < waves; wave++) {
        pthread_barrier_init(&ready, NULL, (unsigned)n + 1);
        pthread_barrier_init(&done, NULL, (unsigned)n + 1);
        pthread_t th[MAXT];
        for (int k = 1; k <= n; k++) {
            pthread_attr_t attr, *ap = NULL;
            info[k].k = k;
            if (k == attr_k) {
                cpu_set_t s;
                one_cpu(attr_cpu, &s);
                pthread_attr_init(&attr);
                pthread_attr_setaffinity_np(&attr, sizeof s, &s);
                ap = &attr;
            }
            if (pthread_create(&th[k], ap, run, &info[k]) != 0) {
                perror("pthread_create");
                return 1;
            }
            if (ap)
                pthread_attr_destroy(ap);
            if (k == after_k) {
                cpu_set_t s;
                one_cpu(after_cpu, &s);
                pthread_setaffinity_np(th[k], sizeof s, &s);
            }
        }
        pthread_barrier_wait(&ready);
        if (spawn_k == 0)
            spawn();
        char buf[4096];
        for (int k = 0; k <= n; k++) {
            allowed(info[k].tid, buf, sizeof buf);
            printf("pid=%d ppid=%d wave=%d thread=%d tid=%d start_cpu=%d allowed=%s\n", (int)getpid(), (int)getppid(),
                   wave, k, (int)info[k].tid, info[k].start_cpu, buf);
        }
        fflush(stdout);
        pthread_barrier_wait(&done);
        for (int k = 1; k <= n; k++)
            pthread_join(th[k], NULL);
        pthread_barrier_destroy(&ready);
        pthread_barrier_destroy(&done);
    }
    return 0;
}
