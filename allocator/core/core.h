/* core.h - allocation and free below every mode and tool: what checked mode wraps, what the
 * profiler allocates its shadows with, and what the entry points fall back on. Never checked,
 * never sampled, never counted by the profiler's countdown; the caller has run start-up. */
#ifndef BX_CORE_H
#define BX_CORE_H

#include "core/classify.h"
#include "thread/thread.h"

/* The bin of a small size that malloc's fast path takes from. Relaxed atomic: a release
 * request rewrites the table from another thread (a plain move on x86). */
static inline bx_bin_t *bx_tls_bin(size_t size) {
    return __atomic_load_n(&bx_tls_alloc.bin_for[(size + 15) >> 4], __ATOMIC_RELAXED);
}

/* Any size: NULL with errno ENOMEM when memory cannot be had, after every cache went back
 * to the OS and a second try. */
void *bx_alloc_unchecked(size_t size);
/* alignment: a power of two above BX_ALIGNMENT. */
void *bx_alloc_aligned_unchecked(size_t alignment, size_t size);
/* A mapping of its own (a large object) of any size, as bx_alloc_unchecked fails. */
void *bx_alloc_mapped(size_t size, size_t alignment);
/* A small size (at most BX_SMALL_MAX): the object plain malloc would hand out next (the top
 * chain's, then the next chain's), else as bx_alloc_unchecked. */
void *bx_core_alloc_small(size_t size);
/* Frees what the classifier resolved (r->tag not 0). */
void bx_free_resolved(bx_lookup_t *r);
/* Frees p, a live object of ours; aborts naming `op` otherwise. */
void bx_core_free(void *p, const char *op);
/* Called with each large object before it is freed (the profiler forgets its samples). */
void bx_core_set_large_free_hook(void (*fn)(const void *object));

#endif
