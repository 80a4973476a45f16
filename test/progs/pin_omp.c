/* Test program for the pinning shim: an OpenMP team of N threads (libgomp); prints, per OpenMP
 * thread number, the CPU it is on and its affinity from /proc/self/task/TID/status, and the
 * OMP_PLACES it saw, and the BOBOX_PIN_ALLOWED its children would inherit. */
#define _GNU_SOURCE
#include <omp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static void allowed(long tid, char *out, size_t len)
{
    char path[64], line[4096];
    snprintf(path, sizeof path, "/proc/self/task/%ld/status", tid);
    snprintf(out, len, "?");
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "Cpus_allowed_list:", 18)) {
            char *v = line + 18 + strspn(line + 18, " \t");
            v[strcspn(v, "\n")] = '\0';
            snprintf(out, len, "%s", v);
        }
    fclose(f);
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 4;
    const char *places = getenv("OMP_PLACES");
    printf("omp_places=%s\n", places ? places : "(unset)");
#pragma omp parallel num_threads(n)
    {
        long tid = syscall(SYS_gettid);
        char buf[4096];
#pragma omp barrier
        allowed(tid, buf, sizeof buf);
#pragma omp critical
        printf("pid=%d thread=%d tid=%ld cpu=%d allowed=%s\n", (int)getpid(), omp_get_thread_num(), tid, sched_getcpu(),
               buf);
    }
    /* what children would inherit: P = only the plan narrowed masks */
    const char *inh = getenv("BOBOX_PIN_ALLOWED");
    printf("inherited=%s\n", inh ? inh : "(unset)");
    return 0;
}
