/* sysfile.c - reads small /proc and /sys files (sysfile.h). */
#include "os/sysfile.h"

#include <fcntl.h>
#include <unistd.h>

#include "os/os.h"

bool bx_os_read_file(const char *path, char *buf, size_t size) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    ssize_t n = read(fd, buf, size - 1);
    close(fd);
    if (n <= 0) return false;
    buf[n] = 0;
    return true;
}

bool bx_os_statm(size_t *vm, size_t *resident, size_t *shared) {
    char buf[256];
    if (!bx_os_read_file("/proc/self/statm", buf, sizeof buf)) return false;
    size_t *out[3] = {vm, resident, shared};
    char *c = buf;
    for (int i = 0; i < 3; i++) {
        size_t pages = 0;
        while (*c == ' ') c++;
        if (*c < '0' || *c > '9') return false;
        for (; *c >= '0' && *c <= '9'; c++) pages = pages * 10 + (size_t)(*c - '0');
        *out[i] = pages * bx_os_page_size();
    }
    return true;
}
