/* rlimit.c - setrlimit and prlimit in libbobox.so: a program that lowers its own RLIMIT_AS
 * at run time gets back the small arena's unused address space at once (arena.h), before
 * its next mmap of its own can fail for it. The limit is set by the system call itself, as
 * glibc does. */
#define _GNU_SOURCE
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "mem/arena.h"

#ifdef BOBOX_OVERRIDE
static int set_limit(pid_t pid, int resource, const struct rlimit *new_limit, struct rlimit *old_limit) {
    int result = (int)syscall(SYS_prlimit64, pid, resource, new_limit, old_limit);
    if (result == 0 && resource == RLIMIT_AS && new_limit && (pid == 0 || pid == getpid())) bx_arena_shrink();
    return result;
}

__attribute__((visibility("default"))) int setrlimit(__rlimit_resource_t resource, const struct rlimit *limit) {
    return set_limit(0, (int)resource, limit, NULL);
}
__attribute__((visibility("default"))) int prlimit(pid_t pid, enum __rlimit_resource resource,
                                                   const struct rlimit *new_limit, struct rlimit *old_limit) {
    return set_limit(pid, (int)resource, new_limit, old_limit);
}
/* The same layout on 64-bit Linux, where glibc's 64-bit names are aliases. */
_Static_assert(sizeof(struct rlimit64) == sizeof(struct rlimit), "one layout");
__attribute__((visibility("default"))) int setrlimit64(__rlimit_resource_t resource, const struct rlimit64 *limit) {
    return set_limit(0, (int)resource, (const struct rlimit *)limit, NULL);
}
__attribute__((visibility("default"))) int prlimit64(pid_t pid, enum __rlimit_resource resource,
                                                     const struct rlimit64 *new_limit, struct rlimit64 *old_limit) {
    return set_limit(pid, (int)resource, (const struct rlimit *)new_limit, (struct rlimit *)old_limit);
}
#endif
