/* cgroup.h - the memory limit a container sets, which the cache bound's default follows. */
#ifndef BX_CGROUP_H
#define BX_CGROUP_H

#include "base/common.h"

/* The lowest memory limit of the process's cgroups (v2 memory.max, v1
 * memory.limit_in_bytes) and their parents, with /proc and /sys under `root` ("" for the
 * real ones; a fixture in tests); UINT64_MAX when none is set or readable. No malloc. */
uint64_t bx_cgroup_memory_limit(const char *root);

#endif
