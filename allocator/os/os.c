/* os.c - mmap and friends, with the accounting behind BOBOX_STATS. */
#define _GNU_SOURCE
#include "os/os.h"

#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef MPOL_PREFERRED
#define MPOL_PREFERRED 1
#endif
#ifndef MPOL_F_ADDR
#define MPOL_F_ADDR (1 << 1)
#endif

static atomic_size_t mapped_bytes, peak_mapped_bytes, released_bytes;

int bx_os_big;

static void count_mapped(size_t size) {
    size_t now = atomic_fetch_add_explicit(&mapped_bytes, size, memory_order_relaxed) + size;
    if (BX_UNLIKELY(now >= BX_OS_BIG_BYTES) && __atomic_load_n(&bx_os_big, __ATOMIC_RELAXED) == BX_OS_SMALL) {
        int small = BX_OS_SMALL;
        __atomic_compare_exchange_n(&bx_os_big, &small, BX_OS_BECAME_BIG, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    }
    size_t peak = atomic_load_explicit(&peak_mapped_bytes, memory_order_relaxed);
    while (now > peak && !atomic_compare_exchange_weak_explicit(&peak_mapped_bytes, &peak, now, memory_order_relaxed,
                                                                memory_order_relaxed)) {}
}

static void count_unmapped(size_t size) {
    atomic_fetch_sub_explicit(&mapped_bytes, size, memory_order_relaxed);
    atomic_fetch_add_explicit(&released_bytes, size, memory_order_relaxed);
}

size_t bx_os_page_size(void) {
    static atomic_size_t page; /* racing first callers store the same value */
    size_t size = atomic_load_explicit(&page, memory_order_relaxed);
    if (BX_UNLIKELY(!size)) {
        size = (size_t)sysconf(_SC_PAGESIZE);
        atomic_store_explicit(&page, size, memory_order_relaxed);
    }
    return size;
}

/* A mapping of `size` bytes placed so that start + offset is a multiple of `alignment`, the
 * padding around it given back; NULL with errno ENOMEM. Not counted. */
static void *map_trimmed(size_t size, size_t alignment, size_t offset, int prot, int flags) {
    if (alignment < bx_os_page_size()) alignment = bx_os_page_size();
    size_t padded = size + alignment - bx_os_page_size();
    if (padded < size) {
        errno = ENOMEM;
        return NULL;
    }
    char *raw = mmap(NULL, padded, prot, MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);
    if (raw == MAP_FAILED) {
        errno = ENOMEM;
        return NULL;
    }
    char *start = (char *)(bx_align_up((uintptr_t)raw + offset, alignment) - offset);
    size_t head = (size_t)(start - raw), tail = padded - head - size;
    if (head) munmap(raw, head);
    if (tail) munmap(start + size, tail);
    return start;
}

/* No MAP_NORESERVE: the kernel's overcommit policy decides, as for glibc, so a request it
 * could never back gets NULL and ENOMEM instead of a mapping that kills at first touch. */
static void *map_aligned(size_t size, size_t alignment, size_t offset, int prot) {
    char *start = map_trimmed(size, alignment, offset, prot, 0);
    if (start) count_mapped(size);
    return start;
}

void *bx_os_map(size_t size) { return map_aligned(size, 0, 0, PROT_READ | PROT_WRITE); }

void *bx_os_map_aligned(size_t size, size_t alignment, size_t offset) {
    return map_aligned(size, alignment, offset, PROT_READ | PROT_WRITE);
}

/* Until `place` has set the policy, the range may be one area with a neighbour of ours (a
 * heap, a stack), and a huge page faulted in there by a thread of another node can reach
 * into it: without access no page can be. */
void *bx_os_map_placed(size_t size, size_t alignment, size_t offset, bx_os_place_fn *place, void *arg) {
    if (!place) return bx_os_map_aligned(size, alignment, offset);
    char *p = map_aligned(size, alignment, offset, PROT_NONE);
    if (!p) return NULL;
    place(p, size, arg);
    if (mprotect(p, size, PROT_READ | PROT_WRITE) != 0) {
        bx_os_unmap(p, size);
        errno = ENOMEM;
        return NULL;
    }
    return p;
}

void *bx_os_map_file(int fd, size_t size) {
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    return p == MAP_FAILED ? NULL : p;
}
void bx_os_unmap_file(void *p, size_t size) { munmap(p, size); }

bool bx_os_address_space_limited(void) {
    struct rlimit as;
    return getrlimit(RLIMIT_AS, &as) != 0 || as.rlim_cur != RLIM_INFINITY;
}

void *bx_os_reserve_aligned(size_t size, size_t alignment) {
    /* Under a finite limit, address space is what the program runs out of first. */
    if (bx_os_address_space_limited()) return NULL;
    int saved = errno;
    /* Read-only: it reads as zeros (the kernel's shared zero page), and nothing is charged or
     * backed until bx_os_commit. */
    void *start = map_trimmed(size, alignment, 0, PROT_READ, MAP_NORESERVE);
    errno = saved;
    return start;
}

bool bx_os_commit(void *p, size_t size, bx_os_place_fn *place, void *arg) {
    if (place) place(p, size, arg);
    if (mprotect(p, size, PROT_READ | PROT_WRITE) != 0) {
        /* The kernel's overcommit policy refused: the range stays as it was. */
        errno = ENOMEM;
        return false;
    }
    count_mapped(size);
    return true;
}

void bx_os_unreserve(void *p, size_t size) {
    int saved = errno;
    munmap(p, size);
    errno = saved;
}

void bx_os_decommit(void *p, size_t size) {
    int saved = errno;
    /* A fresh mapping in place drops the pages, their charge and their NUMA policy. */
    if (mmap(p, size, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0) == MAP_FAILED)
        madvise(p, size, MADV_DONTNEED); /* zeros all the same, charge kept */
    errno = saved;
    count_unmapped(size);
}

void bx_os_purge(void *p, size_t size) {
    size_t page = bx_os_page_size();
    uintptr_t start = bx_align_up((uintptr_t)p, page), end = ((uintptr_t)p + size) & ~(uintptr_t)(page - 1);
    if (end <= start) return;
    int saved = errno;
    if (madvise((void *)start, end - start, MADV_DONTNEED) == 0)
        atomic_fetch_add_explicit(&released_bytes, end - start, memory_order_relaxed);
    errno = saved;
}

void *bx_os_reserve_none(size_t size) {
    int saved = errno;
    void *p = mmap(NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    errno = saved;
    return p == MAP_FAILED ? NULL : p;
}

bool bx_os_protect(void *p, size_t size, bx_os_access_t access) {
    static const int prot[] = {[BX_OS_NO_ACCESS] = PROT_NONE, [BX_OS_READ_ONLY] = PROT_READ,
                               [BX_OS_READ_WRITE] = PROT_READ | PROT_WRITE};
    int saved = errno; /* free() must not change errno */
    bool done = mprotect(p, size, prot[access]) == 0;
    errno = saved;
    return done;
}

void bx_os_unmap(void *p, size_t size) {
    if (!p || !size) return;
    munmap(p, size);
    count_unmapped(size);
}

/* ThreadSanitizer does not follow mremap: the old range keeps the shadow of the accesses made
 * there, and a mapping another thread later gets at that address looks like it races with
 * them. Built with it, a move is a copy into a fresh mapping and an munmap of the old one,
 * which resets that shadow. */
#if defined(__SANITIZE_THREAD__)
#define BX_TSAN_MOVES 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define BX_TSAN_MOVES 1
#endif
#endif
#ifdef BX_TSAN_MOVES
static void *tsan_move(void *p, size_t old_size, void *dest, size_t new_size) {
    if (!dest) {
        dest = mmap(NULL, new_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (dest == MAP_FAILED) return MAP_FAILED;
    }
    memcpy(dest, p, old_size < new_size ? old_size : new_size);
    munmap(p, old_size);
    return dest;
}
#endif

void *bx_os_remap(void *p, size_t old_size, size_t new_size, bool may_move) {
    int saved = errno;
#ifdef BX_TSAN_MOVES
    void *q = p; /* a shrink gives its tail back with munmap, for the same reason */
    if (new_size < old_size)
        munmap((char *)p + new_size, old_size - new_size);
    else if ((q = mremap(p, old_size, new_size, 0)) == MAP_FAILED && may_move)
        q = tsan_move(p, old_size, NULL, new_size);
#else
    void *q = mremap(p, old_size, new_size, may_move ? MREMAP_MAYMOVE : 0);
#endif
    if (q == MAP_FAILED) {
        errno = saved;
        return NULL;
    }
    if (new_size > old_size)
        count_mapped(new_size - old_size);
    else
        count_unmapped(old_size - new_size);
    return q;
}

bool bx_os_move(void *p, size_t old_size, void *dest, size_t new_size) {
    int saved = errno;
#ifdef BX_TSAN_MOVES
    if (tsan_move(p, old_size, dest, new_size) != dest) {
#else
    if (mremap(p, old_size, new_size, MREMAP_MAYMOVE | MREMAP_FIXED, dest) != dest) {
#endif
        errno = saved;
        return false;
    }
    count_unmapped(old_size); /* dest was counted when it was mapped */
    return true;
}

bool bx_os_advise_huge(void *p, size_t size, int advice) {
    if (advice == BX_OS_HUGE_LEAVE) return true;
    int saved = errno; /* free() must not change errno */
    bool done = madvise(p, size, advice == BX_OS_HUGE_YES ? MADV_HUGEPAGE : MADV_NOHUGEPAGE) == 0;
    errno = saved;
    return done;
}

bool bx_os_bind(void *p, size_t size, int node) {
    if (node < 0 || node >= 1024) return false;
    unsigned long mask[1024 / (8 * sizeof(unsigned long))] = {0};
    mask[node / (8 * sizeof(unsigned long))] = 1UL << (node % (8 * sizeof(unsigned long)));
    /* Preferred, not strict: a full node spills over instead of failing (as numactl --preferred). */
    return syscall(SYS_mbind, p, size, MPOL_PREFERRED, mask, (unsigned long)node + 2, 0UL) == 0;
}

bool bx_os_set_policy(void *p, size_t size, int mode, const unsigned long *mask, unsigned long maxnode, int *error) {
    int saved = errno;
    bool done = syscall(SYS_mbind, p, size, mode, mask, maxnode, 0UL) == 0;
    if (!done) *error = errno;
    errno = saved;
    return done;
}

int bx_os_current_cpu(void) {
    unsigned cpu = 0;
    if (syscall(SYS_getcpu, &cpu, NULL, NULL) != 0) return 0;
    return (int)cpu;
}

/* glibc's registration (weak: absent before 2.35, and in a static link without rseq). */
extern const ptrdiff_t __rseq_offset __attribute__((weak));
extern const unsigned int __rseq_size __attribute__((weak));

int bx_os_rseq_cpu(void) {
    if (!&__rseq_size || !&__rseq_offset || __rseq_size < 8) return -1;
    char *tp;
#if defined(__x86_64__)
    __asm__("mov %%fs:0, %0" : "=r"(tp));
#elif defined(__aarch64__)
    __asm__("mrs %0, tpidr_el0" : "=r"(tp));
#else
    return -1;
#endif
    /* struct rseq: cpu_id_start, then cpu_id (negative until registered, or if it failed). */
    int cpu = __atomic_load_n((const int *)(tp + __rseq_offset + 4), __ATOMIC_RELAXED);
    return cpu >= 0 ? cpu : -1;
}

size_t bx_os_mapped_bytes(void) { return atomic_load_explicit(&mapped_bytes, memory_order_relaxed); }
size_t bx_os_peak_mapped_bytes(void) { return atomic_load_explicit(&peak_mapped_bytes, memory_order_relaxed); }
size_t bx_os_released_bytes(void) { return atomic_load_explicit(&released_bytes, memory_order_relaxed); }

#ifdef BX_TESTING
int bx_os_policy_node(const void *p, int *mode_out) {
    int mode = -1;
    unsigned long mask[1024 / (8 * sizeof(unsigned long))] = {0};
    if (syscall(SYS_get_mempolicy, &mode, mask, 1024UL, p, (unsigned long)MPOL_F_ADDR) != 0) return -1;
    if (mode_out) *mode_out = mode;
    for (int i = 0; i < 1024; i++)
        if (mask[i / (8 * sizeof(unsigned long))] & (1UL << (i % (8 * sizeof(unsigned long))))) return i;
    return -1;
}
#endif
