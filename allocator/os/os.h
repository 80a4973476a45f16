/* os.h - the only door to the kernel's memory calls (mmap, munmap, mremap, mprotect,
 * madvise, mbind), and the counts of what is mapped. */
#ifndef BX_OS_H
#define BX_OS_H

#include "base/common.h"
#include "os/clock.h"

/* Anonymous read-write memory, or NULL. Sizes are multiples of the page size. */
void *bx_os_map(size_t size);
/* As bx_os_map, placed so that start + offset is a multiple of `alignment` (a power of two). */
void *bx_os_map_aligned(size_t size, size_t alignment, size_t offset);
/* As bx_os_map_aligned, with `place` (a NUMA policy) applied before any page can be faulted
 * in; NULL `place`: none. */
typedef void bx_os_place_fn(void *p, size_t size, void *arg);
void *bx_os_map_placed(size_t size, size_t alignment, size_t offset, bx_os_place_fn *place, void *arg);
void bx_os_unmap(void *p, size_t size);
/* Address space aligned to `alignment` that reads as zeros, with nothing behind it (pages are
 * only charged and backed once committed), not counted as mapped; NULL if it cannot be had,
 * or under a finite RLIMIT_AS. */
void *bx_os_reserve_aligned(size_t size, size_t alignment);
/* Whether the process runs under a finite RLIMIT_AS (or cannot tell). */
bool bx_os_address_space_limited(void);
/* Gives back address space of such a reservation, none of it committed. */
void bx_os_unreserve(void *p, size_t size);
/* Makes [p, p+size) of such a reservation read-write, `place` (a NUMA policy, or NULL) applied
 * first, and counts it as mapped; false with ENOMEM if the kernel refused. */
bool bx_os_commit(void *p, size_t size, bx_os_place_fn *place, void *arg);
/* Gives a committed range's memory back: it reads as zeros from then on, read-only. */
void bx_os_decommit(void *p, size_t size);
/* Gives back the memory of the whole pages inside [p, p+size), which stay mapped, writable
 * and zero (MADV_DONTNEED: resident memory drops at once, the NUMA policy stays). Counted as
 * given back, still as mapped. */
void bx_os_purge(void *p, size_t size);
/* Address space with no access and no memory behind it (checked mode's zero-size objects:
 * any read or write faults), not counted as mapped; NULL if it cannot be had. */
void *bx_os_reserve_none(size_t size);
/* What bx_os_protect leaves of the pages: nothing (checked mode's gaps after large objects,
 * and large objects in its quarantine), reads (the part of a superblock no block has reached
 * yet, superblock.h: writes fault, reads see what is there), or reads and writes again. */
typedef enum { BX_OS_NO_ACCESS, BX_OS_READ_ONLY, BX_OS_READ_WRITE } bx_os_access_t;
/* Sets the access of the pages holding [p, p+size); errno is kept. The charge of a committed
 * range stays, so making it writable again cannot fail for want of memory. False if the
 * kernel refused. */
bool bx_os_protect(void *p, size_t size, bx_os_access_t access);
/* Grows or shrinks a mapping (mremap): in place, or, with may_move, wherever the kernel finds
 * room if it must, its pages with it. NULL if it cannot (the mapping stays as it was). */
void *bx_os_remap(void *p, size_t old_size, size_t new_size, bool may_move);
/* Moves the mapping [p, p + old_size) onto `dest`, a mapping of new_size bytes the caller
 * made (bx_os_map), which it replaces; grown or shrunk to new_size. False if it cannot (both
 * stay as they were). Never touches memory the caller does not own, unlike a move to an
 * address that might be free when asked and another thread's by the time of the call. */
bool bx_os_move(void *p, size_t old_size, void *dest, size_t new_size);
/* Transparent huge pages for a range: the system's setting, ruled out, or asked for. */
enum bx_os_huge { BX_OS_HUGE_LEAVE, BX_OS_HUGE_NO, BX_OS_HUGE_YES };
/* Gives the range that advice (MADV_NOHUGEPAGE, MADV_HUGEPAGE; none for LEAVE); false if
 * the kernel refused (built without THP). */
bool bx_os_advise_huge(void *p, size_t size, int advice);
/* Prefers NUMA node `node` for the range's pages; false if the kernel refused. */
bool bx_os_bind(void *p, size_t size, int node);
/* Gives the range the kernel's policy `mode` (MPOL_*) over the nodes in mask (maxnode bits);
 * false, errno kept, if the kernel refused (the error in *error). */
bool bx_os_set_policy(void *p, size_t size, int mode, const unsigned long *mask, unsigned long maxnode, int *error);
#ifdef BX_TESTING
/* The node policy the kernel holds for the page at p: node, or -1 if none. */
int bx_os_policy_node(const void *p, int *mode_out);
#endif
/* NUMA node of the CPU this thread runs on now (getcpu). */
int bx_os_current_cpu(void);
/* The CPU the thread runs on, as the kernel last wrote it in glibc's own rseq registration
 * (glibc 2.35+: __rseq_offset, __rseq_size): one load, no system call. -1 where there is none
 * (an older glibc, GLIBC_TUNABLES=glibc.pthread.rseq=0, a kernel without rseq). Only read:
 * the area is glibc's and the kernel's. */
int bx_os_rseq_cpu(void);

size_t bx_os_page_size(void);

/* A file's first `size` bytes mapped shared, read-write (the live statistics, tools/live.h),
 * not counted as mapped; NULL if refused. */
void *bx_os_map_file(int fd, size_t size);
void bx_os_unmap_file(void *p, size_t size);

/* Whether the process has had BX_OS_BIG_BYTES mapped: big enough for the reclaimer
 * (reclaimer.h), which takes note at the next tick (BECAME_BIG -> BIG). */
#define BX_OS_BIG_BYTES (64 * BX_MB)
enum { BX_OS_SMALL, BX_OS_BECAME_BIG, BX_OS_BIG };
extern int bx_os_big __attribute__((visibility("hidden"))); /* __atomic builtins: C++ tests include this */

/* Process-wide counters (bytes). */
size_t bx_os_mapped_bytes(void);
size_t bx_os_peak_mapped_bytes(void);
size_t bx_os_released_bytes(void);

#endif
