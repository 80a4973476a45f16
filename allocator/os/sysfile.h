/* sysfile.h - the small /proc and /sys files the allocator reads (cgroup limits, NUMA
 * nodes, settings of the kernel), without allocating. */
#ifndef BX_SYSFILE_H
#define BX_SYSFILE_H

#include "base/common.h"

/* Reads a small /proc or /sys file into buf, NUL-terminated; false if absent or empty. */
bool bx_os_read_file(const char *path, char *buf, size_t size);

#endif
