/* fdout.c - the buffered writer of fdout.h. */
#include "base/fdout.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

void bx_fdout_flush(bx_fdout_t *o) {
    for (size_t off = 0; off < o->len;) {
        ssize_t w = write(o->fd, o->buf + off, o->len - off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            if (!o->failed) o->failed = w < 0 ? errno : EIO;
            break;
        }
        off += (size_t)w;
    }
    o->len = 0;
}

void bx_fdout_str(bx_fdout_t *o, const char *s) {
    for (; *s; s++) {
        if (o->len == sizeof o->buf) bx_fdout_flush(o);
        o->buf[o->len++] = *s;
    }
}

void bx_fdout_num(bx_fdout_t *o, uint64_t v, unsigned base, int width) {
    char digits[24];
    int n = 0;
    do digits[n++] = "0123456789abcdef"[v % base];
    while ((v /= base) != 0);
    char field[48];
    int k = 0;
    for (; width > n && k < 24; width--) field[k++] = ' ';
    while (n) field[k++] = digits[--n];
    field[k] = 0;
    bx_fdout_str(o, field);
}

void bx_fdout_fmt(bx_fdout_t *o, const char *fmt, ...) {
    if (o->len + 512 > sizeof o->buf) bx_fdout_flush(o);
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(o->buf + o->len, sizeof o->buf - o->len, fmt, ap);
    va_end(ap);
    if (n > 0) o->len += (size_t)n < sizeof o->buf - o->len ? (size_t)n : sizeof o->buf - o->len - 1;
}
