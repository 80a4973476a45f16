/* cgroup.c - the memory limit of the process's cgroups, read from /proc and /sys. */
#define _GNU_SOURCE
#include "base/copy.h"
#include "os/cgroup.h"

#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "os/os.h"
#include "os/sysfile.h"

/* Appends s to the path in buf (of `size`); false if it does not fit. */
static bool path_append(char *buf, size_t size, const char *s, size_t n) {
    size_t len = strlen(buf);
    if (len + n >= size) return false;
    bx_copy(buf + len, s, n);
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

uint64_t bx_cgroup_memory_limit(const char *root) {
    char lines[4096], path[512];
    if (!cgroup_path(path, sizeof path, root, "/proc/self/cgroup", "", 0, NULL) ||
        !bx_os_read_file(path, lines, sizeof lines))
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
