/* os.c - mmap and friends, with the accounting behind BOBOX_STATS. */
#define _GNU_SOURCE
#include "os.h"

#include <errno.h>
#include <fcntl.h>
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

static void count_mapped(size_t size) {
    size_t now = atomic_fetch_add_explicit(&mapped_bytes, size, memory_order_relaxed) + size;
    size_t peak = atomic_load_explicit(&peak_mapped_bytes, memory_order_relaxed);
    while (now > peak &&
           !atomic_compare_exchange_weak_explicit(&peak_mapped_bytes, &peak, now, memory_order_relaxed,
                                                  memory_order_relaxed)) {
    }
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

/* No MAP_NORESERVE: the kernel's overcommit policy decides, as for glibc, so a request it
 * could never back gets NULL and ENOMEM instead of a mapping that kills at first touch. */
void *bx_os_map(size_t size) {
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        errno = ENOMEM;
        return NULL;
    }
    count_mapped(size);
    return p;
}

void *bx_os_map_aligned(size_t size, size_t alignment, size_t offset) {
    if (alignment <= bx_os_page_size()) return bx_os_map(size);
    size_t padded = size + alignment - bx_os_page_size();
    if (padded < size) {
        errno = ENOMEM;
        return NULL;
    }
    char *raw = mmap(NULL, padded, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) {
        errno = ENOMEM;
        return NULL;
    }
    char *start = (char *)(bx_align_up((uintptr_t)raw + offset, alignment) - offset);
    size_t head = (size_t)(start - raw), tail = padded - head - size;
    if (head) munmap(raw, head);
    if (tail) munmap(start + size, tail);
    count_mapped(size);
    return start;
}

void *bx_os_reserve_zeros(size_t size) {
    struct rlimit as;
    /* Under a finite limit, address space is what the program runs out of first. */
    if (getrlimit(RLIMIT_AS, &as) != 0 || as.rlim_cur != RLIM_INFINITY) return NULL;
    void *p = mmap(NULL, size, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

bool bx_os_make_writable(void *p, size_t size) {
    uintptr_t page = bx_os_page_size();
    uintptr_t start = bx_align_down_ptr((uintptr_t)p, page);
    return mprotect((void *)start, bx_align_up((uintptr_t)p + size, page) - start, PROT_READ | PROT_WRITE) == 0;
}

void bx_os_unmap(void *p, size_t size) {
    if (!p || !size) return;
    munmap(p, size);
    count_unmapped(size);
}

void *bx_os_remap(void *p, size_t old_size, size_t new_size, bool may_move) {
    void *q = mremap(p, old_size, new_size, may_move ? MREMAP_MAYMOVE : 0);
    if (q == MAP_FAILED) return NULL;
    if (new_size > old_size)
        count_mapped(new_size - old_size);
    else
        count_unmapped(old_size - new_size);
    return q;
}

bool bx_os_read_file(const char *path, char *buf, size_t size) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    ssize_t n = read(fd, buf, size - 1);
    close(fd);
    if (n <= 0) return false;
    buf[n] = 0;
    return true;
}

/* Appends s to the path in buf (of `size`); false if it does not fit. */
static bool path_append(char *buf, size_t size, const char *s, size_t n) {
    size_t len = strlen(buf);
    if (len + n >= size) return false;
    memcpy(buf + len, s, n);
    buf[len + n] = 0;
    return true;
}

/* root + base + dir, then "/" + file unless file is NULL, into path; false if too long. */
static bool cgroup_path(char *path, size_t size, const char *root, const char *base, const char *dir, size_t dir_len,
                        const char *file) {
    path[0] = 0;
    return path_append(path, size, root, strlen(root)) && path_append(path, size, base, strlen(base)) &&
           path_append(path, size, dir, dir_len) &&
           (!file || (path_append(path, size, "/", 1) && path_append(path, size, file, strlen(file))));
}

/* The number in root + base + dir + "/" + file; UINT64_MAX if absent or not a number ("max"). */
static uint64_t read_limit(const char *root, const char *base, const char *dir, size_t dir_len, const char *file) {
    char path[512], value[64];
    if (!cgroup_path(path, sizeof path, root, base, dir, dir_len, file) || !bx_os_read_file(path, value, sizeof value))
        return UINT64_MAX;
    uint64_t v = 0;
    const char *c = value;
    for (; *c >= '0' && *c <= '9' && v < UINT64_MAX / 10; c++) v = v * 10 + (uint64_t)(*c - '0');
    return c > value && (*c == '\n' || !*c) ? v : UINT64_MAX;
}

static bool cgroup_exists(const char *root, const char *base, const char *dir, size_t dir_len) {
    char path[512];
    if (!cgroup_path(path, sizeof path, root, base, dir, dir_len, NULL)) return false;
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) close(fd);
    return fd >= 0;
}

/* The lowest limit in `file` from the cgroup directory base + dir up to base itself (a
 * directory may have no such file: its controller is off there). A container may see its
 * own cgroup as the mount's root while /proc names the host's path: the walk starts at the
 * longest tail of the path that exists below the mount. */
static uint64_t lowest_limit(const char *root, const char *base, const char *dir, size_t dir_len, const char *file) {
    while (dir_len && !cgroup_exists(root, base, dir, dir_len)) {
        do { /* drop the first name */
            dir++;
            dir_len--;
        } while (dir_len && *dir != '/');
    }
    uint64_t lowest = UINT64_MAX;
    for (;;) {
        uint64_t v = read_limit(root, base, dir, dir_len, file);
        if (v < lowest) lowest = v;
        if (!dir_len) return lowest;
        while (dir_len && dir[dir_len - 1] == '/') dir_len--; /* the parent: drop the last name */
        while (dir_len && dir[dir_len - 1] != '/') dir_len--;
        while (dir_len && dir[dir_len - 1] == '/') dir_len--;
    }
}

uint64_t bx_os_memory_limit(const char *root) {
    char lines[4096], path[512];
    if (!cgroup_path(path, sizeof path, root, "/proc/self/cgroup", "", 0, NULL) || !bx_os_read_file(path, lines, sizeof lines))
        return UINT64_MAX;
    uint64_t lowest = UINT64_MAX;
    /* Lines are "id:controllers:path"; v2 has id 0 and no controllers, v1 lists "memory". */
    for (char *line = lines; *line;) {
        char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        char *first = memchr(line, ':', len);
        char *second = first ? memchr(first + 1, ':', len - (size_t)(first + 1 - line)) : NULL;
        if (second) {
            const char *dir = second + 1;
            size_t dir_len = len - (size_t)(dir - line);
            const char *controllers = first + 1;
            size_t controllers_len = (size_t)(second - controllers);
            uint64_t v = UINT64_MAX;
            if (!controllers_len) {
                v = lowest_limit(root, "/sys/fs/cgroup", dir, dir_len, "memory.max");
            } else {
                for (const char *c = controllers; c < second;) {
                    const char *comma = memchr(c, ',', (size_t)(second - c));
                    size_t n = comma ? (size_t)(comma - c) : (size_t)(second - c);
                    if (n == 6 && !memcmp(c, "memory", 6))
                        v = lowest_limit(root, "/sys/fs/cgroup/memory", dir, dir_len, "memory.limit_in_bytes");
                    c += n + 1;
                }
            }
            if (v < lowest) lowest = v;
        }
        line += len + (end != NULL);
    }
    return lowest;
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

int bx_os_policy_node(const void *p, int *mode_out) {
    int mode = -1;
    unsigned long mask[1024 / (8 * sizeof(unsigned long))] = {0};
    if (syscall(SYS_get_mempolicy, &mode, mask, 1024UL, p, (unsigned long)MPOL_F_ADDR) != 0) return -1;
    if (mode_out) *mode_out = mode;
    for (int i = 0; i < 1024; i++)
        if (mask[i / (8 * sizeof(unsigned long))] & (1UL << (i % (8 * sizeof(unsigned long))))) return i;
    return -1;
}

int bx_os_current_cpu(void) {
    unsigned cpu = 0;
    if (syscall(SYS_getcpu, &cpu, NULL, NULL) != 0) return 0;
    return (int)cpu;
}

size_t bx_os_mapped_bytes(void) { return atomic_load_explicit(&mapped_bytes, memory_order_relaxed); }
size_t bx_os_peak_mapped_bytes(void) { return atomic_load_explicit(&peak_mapped_bytes, memory_order_relaxed); }
size_t bx_os_released_bytes(void) { return atomic_load_explicit(&released_bytes, memory_order_relaxed); }
