/* checked.h - checked mode (BOBOX_CHECK=1): a canary after each object's requested size,
 * and validation of the headers an operation touches, on every call.
 *
 * A checked object is allocated BX_CHECK_ROOM bytes larger. Its last 8 usable bytes (the
 * trailer) hold the requested size, mangled with the object's address and the link secret;
 * every byte between the requested size and the trailer holds the canary byte. free,
 * realloc and malloc_usable_size verify both, so a write past the end is reported with
 * the object's address and size. Every call leaves the fast paths (the thread's fast-path
 * heap stays NULL), so the default mode pays nothing for this. */
#ifndef BX_CHECKED_H
#define BX_CHECKED_H

#include "classify.h"

#define BX_CHECK_ROOM 16

/* bx_classify after validating the headers it reads (aborts naming `op` if one is trashed). */
void bx_checked_lookup(const void *p, const char *op, bx_lookup_t *out);
/* Validates the headers of fresh object p, writes its canary and trailer; returns p. */
void *bx_checked_arm(void *p, size_t size);
/* Validates the canary of r's object p (found by bx_checked_lookup) and, for the owner, the
 * free list's next link; returns the requested size. `op` names the caller ("free()") in
 * the report; aborts on any corruption. */
size_t bx_checked_verify(const bx_lookup_t *r, const void *p, const char *op);
/* Full validation of a small block just taken for allocation (its whole free list). */
void bx_checked_block(const bx_block_t *b);

#endif
