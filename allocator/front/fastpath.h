/* fastpath.h - what the entry points share (alloc.c, aligned.c, free.c, realloc.c, info.c,
 * and the C++ operators above): malloc's inline fast path and the slow paths they fall into.
 * Inline, so that every entry point, the standard names and the C++ operators among them,
 * runs the fast path with no call in between.
 *
 * Each entry-point file is built twice: as is for libbobox.a (bobox_* names), and with
 * BOBOX_OVERRIDE for libbobox.so, where BX_OVERRIDE gives the standard names and glibc's
 * aliases to the same code. */
#ifndef BX_FASTPATH_H
#define BX_FASTPATH_H

#include "core/core.h"
#include "front/init.h"

/* The hot path: a small size, from the bin the thread's table names (a stand-in with an
 * empty stack when the thread has no heap, in checked mode, or when another thread asked it
 * to release memory), so that any of those fails into the slow path; so does a spent top
 * chain (bx_malloc_slow takes the next one first), and a sample due. */
static inline void *bx_alloc_fast(size_t size) {
    if (BX_UNLIKELY(size > BX_SMALL_MAX)) return NULL;
    /* The heap profiler's countdown: one subtraction (bx_malloc_slow counts larger sizes). */
    if (BX_UNLIKELY((bx_tls_alloc.sample_left -= (int64_t)size) < 0)) return NULL;
    return bx_bin_alloc_fast(bx_tls_bin(size));
}

/* malloc past its fast path: any size, any thread state, checked mode; NULL with ENOMEM. */
void *bx_malloc_slow(size_t size);
/* alignment: a power of two; checked mode's object in checked mode. */
void *bx_alloc_aligned(size_t alignment, size_t size);
/* A live object's lookup, or an abort naming `op` ("free()") and what is wrong with p. */
void bx_lookup_live(const void *p, const char *op, bx_lookup_t *r);
/* Checked mode's free with a size (free_sized, sized delete): the size must be the one
 * requested. */
void bx_free_sized_checked(void *p, size_t size, const char *op);
/* Checked mode's C++ delete: p must have been allocated in `form` (tools/checked.h) and,
 * unless size is 0, with that size; aborts naming `op` otherwise, then frees it through the
 * quarantine. */
void bx_free_form_checked(void *p, size_t size, unsigned form, const char *op);

#ifdef BOBOX_OVERRIDE
#define BX_OVERRIDE(name, target) extern __typeof__(target) name __attribute__((alias(#target), visibility("default")));
#else
#define BX_OVERRIDE(name, target)
#endif
/* name: our definition of target under a hidden name (the C++ glue takes the addresses of
 * its own definitions of delete this way, cxx/cxx.h). */
#define BX_HIDDEN_ALIAS(name, target) extern __typeof__(target) name __attribute__((alias(#target), visibility("hidden")));

#endif
