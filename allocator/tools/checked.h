/* checked.h - checked mode (BOBOX_CHECK=1): canaries before and after each object, a
 * quarantine for freed objects, fills, memory with no access (a 1 MB gap after each large
 * object, a large object while it waits in the quarantine, zero-size objects), validation
 * of the headers an operation touches on every call, and the same checks of every object
 * left at exit (docs/hardening.md).
 *
 * A checked object sits 32 bytes (or its alignment) into a slot BX_CHECK_ROOM bytes larger
 * still: the slot start holds the aligned-object record (block.h) that lets free find it,
 * the rest of the front room holds the canary byte. Its last 8 usable bytes (the trailer)
 * hold the requested size, the allocating form and the layout, mangled with the object's
 * address and the link secret; every byte between the requested size and the trailer holds
 * the canary byte. free, realloc and malloc_usable_size verify them all, so a write past
 * the end or before the start is reported with the object's address and size; a registry
 * of the live objects (registry.h) lets the exit check reach the objects never freed. Every
 * call leaves the fast paths (the thread's fast-path heap stays NULL), so the default mode pays
 * nothing for this. */
#ifndef BX_CHECKED_H
#define BX_CHECKED_H

#include "core/core.h"

#define BX_CHECK_ROOM 16
/* The lookup's tag of a zero-size object: an address in a range with no access (never in
 * the page map, whose tags are 1, 2 and 4). */
#define BX_TAG_ZERO 8u

/* bx_classify after validating the headers it reads (aborts naming `op` if one is trashed). */
void bx_checked_lookup(const void *p, const char *op, bx_lookup_t *out);
/* The object forms a free must match (C++ delete and delete[] check theirs). */
enum { BX_FORM_MALLOC, BX_FORM_NEW, BX_FORM_NEW_ARRAY };
/* A checked object of `size` bytes (aligned to `alignment`) allocated in `form`: front and
 * back canaries, the trailer record, filled with a non-zero pattern, a 1 MB gap with no
 * access after a large one; of 0 bytes, an address of its own with no access. NULL with
 * errno ENOMEM. */
void *bx_checked_alloc(size_t alignment, size_t size, unsigned form);
/* Validates the canaries and the trailer of r's object p (found by bx_checked_lookup) and,
 * for the owner, the free list's next link; returns the requested size. `op` names the
 * caller ("free()") in the report; aborts on any corruption or a second free. */
size_t bx_checked_verify(const bx_lookup_t *r, const void *p, const char *op);
/* As bx_checked_verify, and aborts if p was allocated by new in another form than `form`
 * (objects of malloc and of the aligned forms of new pass). */
size_t bx_checked_verify_form(const bx_lookup_t *r, const void *p, unsigned form, const char *op);
/* Whether p is a live checked object: handed out and not freed (a freed object waiting in
 * the quarantine is not). */
int bx_checked_owns(const void *p);
/* Frees verified object p (r from bx_checked_lookup) through the quarantine. */
void bx_checked_release(const bx_lookup_t *r, void *p);
/* Verifies every object in the quarantine (its fill and trailer: a write after free) and
 * every live object (canaries and trailer: an overflow or underflow of an object the program
 * may never free); aborts naming `op` ("exit()") as free would. Runs at exit by itself. */
void bx_checked_check_all(const char *op);
/* The bytes a copy at q may touch: those asked for of the checked object holding q (`at`,
 * from bx_locate), and whether it is freed (in the quarantine or after); false when q is in
 * none, or its record is overwritten. */
bool bx_checked_bounds(const bx_place_t *at, const void *q, char **start, size_t *size, bool *freed);
/* Start-up, once the allocator works (it may allocate): the fork handlers. */
void bx_checked_start(void);

#endif
