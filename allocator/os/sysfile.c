/* sysfile.c - reads small /proc and /sys files (sysfile.h). */
#include "os/sysfile.h"

#include <fcntl.h>
#include <unistd.h>

bool bx_os_read_file(const char *path, char *buf, size_t size) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    ssize_t n = read(fd, buf, size - 1);
    close(fd);
    if (n <= 0) return false;
    buf[n] = 0;
    return true;
}
