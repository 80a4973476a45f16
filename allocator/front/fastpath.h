/* fastpath.h - what the entry points share (alloc.c, aligned.c, free.c, realloc.c, info.c,
 * cxx.c): start-up on the first call, malloc's inline fast path, and the slow paths they
 * fall into. Inline, so that every entry point, the standard names and the C++ operators
 * among them, runs the fast path with no call in between.
 *
 * Each entry-point file is built twice: as is for libbobox.a (bobox_* names), and with
 * BOBOX_OVERRIDE for libbobox.so, where BX_OVERRIDE gives the standard names and glibc's
 * aliases to the same code. */
#ifndef BX_FASTPATH_H
#define BX_FASTPATH_H

#include <stdatomic.h>

#include "core/classify.h"
#include "thread/thread.h"

enum { BX_INIT_NONE, BX_INIT_RUNNING, BX_INIT_DONE };
extern atomic_int bx_init_state __attribute__((visibility("hidden")));
/* Runs once, on the first call; nothing in it allocates. */
void bx_init_slow(void);
static inline void bx_ensure_init(void) {
    if (BX_UNLIKELY(atomic_load_explicit(&bx_init_state, memory_order_acquire) != BX_INIT_DONE)) bx_init_slow();
}

/* The bin of a small size that malloc's fast path takes from. Relaxed atomic: a release
 * request rewrites the table from another thread (a plain move on x86). */
static inline bx_bin_t *bx_tls_bin(size_t size) {
    return __atomic_load_n(&bx_tls_alloc.bin_for[(size + 15) >> 4], __ATOMIC_RELAXED);
}

/* The hot path: a small size, from the bin the thread's table names (a stand-in with an
 * empty stack when the thread has no heap, in checked mode, or when another thread asked it
 * to release memory), so that any of those fails into the slow path; so does a spent top
 * chain (bx_malloc_slow takes the next one first), and a sample due. */
static inline void *bx_alloc_fast(size_t size) {
    if (BX_UNLIKELY(size > BX_SMALL_MAX)) return NULL;
    /* The heap profiler's countdown: one subtraction (bx_malloc_slow counts larger sizes). */
    if (BX_UNLIKELY((bx_tls_alloc.sample_left -= (int64_t)size) < 0)) return NULL;
    return bx_bin_alloc_top(bx_tls_bin(size));
}

/* malloc past its fast path: any size, any thread state, checked mode; NULL with ENOMEM. */
void *bx_malloc_slow(size_t size);
/* Any size, never checked: NULL with errno ENOMEM when memory cannot be had. */
void *bx_alloc_unchecked(size_t size);
/* A checked object (BOBOX_CHECK=1): `size` bytes plus room for the canary and size record. */
void *bx_alloc_checked(size_t alignment, size_t size);
/* alignment: a power of two. */
void *bx_alloc_aligned(size_t alignment, size_t size);
/* alignment: a power of two above BX_ALIGNMENT; never checked. */
void *bx_alloc_aligned_unchecked(size_t alignment, size_t size);
/* Frees what bx_lookup_live resolved. */
void bx_free_resolved(bx_lookup_t *r);
/* A live object's lookup, or an abort naming `op` ("free()") and what is wrong with p. */
void bx_lookup_live(const void *p, const char *op, bx_lookup_t *r);
/* Checked mode's free with a size (free_sized, sized delete): the size must be the one
 * requested. */
void bx_free_sized_checked(void *p, size_t size, const char *op);

#ifdef BOBOX_OVERRIDE
#define BX_OVERRIDE(name, target) extern __typeof__(target) name __attribute__((alias(#target), visibility("default")));
#else
#define BX_OVERRIDE(name, target)
#endif

#endif
