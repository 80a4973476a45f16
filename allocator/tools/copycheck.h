/* copycheck.h - bounds checks of the program's copies (memcpy, memset, strcpy, ...; the
 * interposers are front/copies.c): a copy whose destination, or source, is one of our
 * objects must stay inside it, and must not touch one that is free. With BOBOX_CHECK=1 an
 * object's bounds are the bytes it was asked for; with BOBOX_CHECK=copies they are its slot
 * (the default mode keeps no requested size). Off, the interposers jump straight to glibc. */
#ifndef BX_COPYCHECK_H
#define BX_COPYCHECK_H

#include "base/common.h"

/* Aborts naming `fn` when [at, at + n) runs outside the object of ours holding `at`, or that
 * object is free; `write` says which way the copy goes (for the message). Foreign memory and
 * n == 0 pass. */
void bx_copy_check(const char *fn, const void *at, size_t n, bool write);

#endif
