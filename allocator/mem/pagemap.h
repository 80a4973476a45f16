/* pagemap.h - what the allocator owns, by 64 KB chunk of address space.
 *
 * free() gets no size, so it asks the pagemap which structure owns the chunk of the
 * pointer: a superblock of small-object blocks, a superblock of medium objects, or a
 * large object. A chunk we never registered reads 0: the pointer is not ours, and
 * nothing is written through it. Two loads, O(1), no lock (DESIGN §7). */
#ifndef BX_PAGEMAP_H
#define BX_PAGEMAP_H

#include <stdatomic.h>
#include "base/common.h"

#define BX_PM_LEAF_BITS 16 /* 64 K chunks of 64 KB: one leaf covers 4 GB */
#define BX_PM_TOP_BITS 15  /* 47-bit user address space */
BX_STATIC_ASSERT(BX_BLOCK_SHIFT + BX_PM_LEAF_BITS == 32, "a leaf is indexed by the low 32 bits");

#ifdef BX_TESTING
/* The lookups for code that cannot use C11 atomics (C++ tests). */
uintptr_t bx_pagemap_lookup(const void *p);
#endif

#ifndef __cplusplus
typedef _Atomic(uintptr_t) bx_pm_entry_t;
extern _Atomic(bx_pm_entry_t *) bx_pagemap_top[1u << BX_PM_TOP_BITS];

static inline uintptr_t bx_pagemap_get(const void *p) {
    uintptr_t a = (uintptr_t)p;
    uintptr_t top = a >> (BX_BLOCK_SHIFT + BX_PM_LEAF_BITS);
    if (BX_UNLIKELY(top >= (1u << BX_PM_TOP_BITS))) return 0;
    bx_pm_entry_t *leaf = atomic_load_explicit(&bx_pagemap_top[top], memory_order_acquire);
    if (BX_UNLIKELY(!leaf)) return 0;
    /* The leaf index is bits 16-31: a 32-bit shift, one instruction. */
    return atomic_load_explicit(&leaf[(uint32_t)a >> BX_BLOCK_SHIFT], memory_order_relaxed);
}

#else
static inline uintptr_t bx_pagemap_get(const void *p) { return bx_pagemap_lookup(p); }
#endif

static inline void *bx_span_of(uintptr_t entry) { return (void *)(entry & ~BX_TAG_MASK); }
static inline unsigned bx_tag_of(uintptr_t entry) { return (unsigned)(entry & BX_TAG_MASK); }
static inline bool bx_is_small_entry(uintptr_t entry) { return entry & BX_TAG_SMALL; }

/* Registers [start, start+size) (64 KB aligned) to `entry`; false if a leaf could not be mapped. */
bool bx_pagemap_set(const void *start, size_t size, uintptr_t entry);
/* Registers the one chunk holding p. */
bool bx_pagemap_set_one(const void *p, uintptr_t entry);

#endif
