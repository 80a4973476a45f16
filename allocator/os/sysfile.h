/* sysfile.h - the small /proc and /sys files the allocator reads (cgroup limits, NUMA
 * nodes, settings of the kernel), without allocating. */
#ifndef BX_SYSFILE_H
#define BX_SYSFILE_H

#include "base/common.h"

/* Reads a small /proc or /sys file into buf, NUL-terminated; false if absent or empty. */
bool bx_os_read_file(const char *path, char *buf, size_t size);
/* /proc/self/statm's first fields in bytes: address space (VmSize), resident, resident
 * file-backed; false if unreadable. */
bool bx_os_statm(size_t *vm, size_t *resident, size_t *shared);

#endif
