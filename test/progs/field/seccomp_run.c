/* seccomp_run eperm|kill SYSCALL[,SYSCALL...] PROGRAM [ARGS...]: runs PROGRAM under a seccomp
 * filter that answers the listed system calls with EPERM, or kills the process on them
 * (SECCOMP_RET_KILL_PROCESS: status SIGSYS), and allows everything else. As containers without
 * CAP_SYS_NICE and programs that sandbox themselves do. */
#define _GNU_SOURCE
#include <errno.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 4 || (strcmp(argv[1], "eperm") && strcmp(argv[1], "kill"))) {
        fprintf(stderr, "usage: seccomp_run eperm|kill SYSCALL[,SYSCALL...] PROGRAM [ARGS...]\n");
        return 2;
    }
    uint32_t action = strcmp(argv[1], "kill") ? SCMP_ACT_ERRNO(EPERM) : SCMP_ACT_KILL_PROCESS;
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    if (!ctx) {
        fprintf(stderr, "seccomp_init failed\n");
        return 2;
    }
    char *names = strdup(argv[2]);
    for (char *name = strtok(names, ","); name; name = strtok(NULL, ",")) {
        int nr = seccomp_syscall_resolve_name(name);
        if (nr == __NR_SCMP_ERROR) {
            fprintf(stderr, "seccomp_run: unknown system call %s\n", name);
            return 2;
        }
        int rc = seccomp_rule_add(ctx, action, nr, 0);
        if (rc < 0) {
            fprintf(stderr, "seccomp_rule_add(%s): %s\n", name, strerror(-rc));
            return 2;
        }
    }
    int rc = seccomp_load(ctx); /* also sets no_new_privs */
    if (rc < 0) {
        fprintf(stderr, "seccomp_load: %s\n", strerror(-rc));
        return 2;
    }
    execvp(argv[3], argv + 3);
    fprintf(stderr, "seccomp_run: %s: %s\n", argv[3], strerror(errno));
    return 127;
}
