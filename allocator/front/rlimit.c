/* rlimit.c - setrlimit and prlimit in libbobox.so. A program that lowers its own RLIMIT_AS
 * at run time gets back the small arena's unused address space at once (arena.h), before
 * its next mmap of its own can fail for it. The limit is set by the system call itself, as
 * glibc does.
 *
 * A program that computes its limit from its current address space (VmSize + 512 MB, say)
 * counted the arena's reservation, which goes away with this call: left as set, the limit
 * would leave it that much more room than meant (256 GB: no limit at all). So a limit at or
 * above the current VmSize is taken as computed from it, and lowered by the reservation given
 * back; a lower one (a fixed number, ulimit -v) holds as it is. getrlimit then reports the
 * lowered value. */
#define _GNU_SOURCE
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "mem/arena.h"
#include "os/sysfile.h"

#ifdef BOBOX_OVERRIDE
static rlim_t without_reservation(rlim_t v, size_t vm, size_t unused) {
    return v != RLIM_INFINITY && v >= vm ? v - unused : v;
}

static int set_limit(pid_t pid, int resource, const struct rlimit *new_limit, struct rlimit *old_limit) {
    bool self_as = resource == RLIMIT_AS && new_limit && (pid == 0 || pid == getpid());
    struct rlimit adjusted;
    size_t vm, resident, shared, unused = self_as ? bx_arena_unused_bytes() : 0;
    if (unused && bx_os_statm(&vm, &resident, &shared) && vm > unused) {
        adjusted.rlim_cur = without_reservation(new_limit->rlim_cur, vm, unused);
        adjusted.rlim_max = without_reservation(new_limit->rlim_max, vm, unused);
        new_limit = &adjusted;
    }
    int result = (int)syscall(SYS_prlimit64, pid, resource, new_limit, old_limit);
    if (result == 0 && self_as) bx_arena_shrink();
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
