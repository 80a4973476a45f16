/* diag.c - messages to stderr that never allocate, and the fatal-misuse exit. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "common.h"

void bx_message(const char *fmt, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap); /* integers and strings only: no malloc */
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n >= sizeof buf) n = sizeof buf - 1;
    for (ssize_t off = 0, w; off < n; off += w)
        if ((w = write(2, buf + off, (size_t)(n - off))) <= 0) break;
}

void bx_fatal(const char *what, const void *ptr) {
    bx_message("bobox: %s %p\n", what, ptr);
    abort();
}
