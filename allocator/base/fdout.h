/* fdout.h - buffered writes to a file descriptor that never allocate: the profiler's files
 * (written from its dump signal too) and the JSON statistics. */
#ifndef BX_FDOUT_H
#define BX_FDOUT_H

#include "base/common.h"

typedef struct {
    int fd;
    int failed; /* the first write error (EIO for a write of nothing); 0 if none */
    size_t len;
    char buf[4096];
} bx_fdout_t;

/* Writes out what is buffered (a write interrupted by a signal is retried). */
void bx_fdout_flush(bx_fdout_t *o);
void bx_fdout_str(bx_fdout_t *o, const char *s);
/* v in `base` (up to 16), right-aligned in `width` columns. Async-signal-safe, as are the two
 * above. */
void bx_fdout_num(bx_fdout_t *o, uint64_t v, unsigned base, int width);
/* printf-style through vsnprintf (numbers and strings only: it does not malloc then); at most
 * 511 bytes a call. Not for signal handlers. */
__attribute__((format(printf, 2, 3))) void bx_fdout_fmt(bx_fdout_t *o, const char *fmt, ...);

#endif
