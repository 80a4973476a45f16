/* diag.c - messages to stderr that never allocate, and the fatal-misuse exit. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/common.h"

static void vmessage(int fd, const char *fmt, va_list ap) {
    char buf[512];
    int n = vsnprintf(buf, sizeof buf, fmt, ap); /* integers and strings only: no malloc */
    if (n < 0) return;
    if ((size_t)n >= sizeof buf) n = sizeof buf - 1;
    for (ssize_t off = 0, w; off < n; off += w)
        if ((w = write(fd, buf + off, (size_t)(n - off))) <= 0) break;
}

void bx_message(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vmessage(2, fmt, ap);
    va_end(ap);
}

void bx_message_fd(int fd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vmessage(fd, fmt, ap);
    va_end(ap);
}

void bx_fatal(const char *what, const void *ptr) { bx_fatalf("%s %p", what, ptr); }

void bx_fatalf(const char *fmt, ...) {
    char line[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    bx_message("bobox: %s\n", line);
    abort();
}
