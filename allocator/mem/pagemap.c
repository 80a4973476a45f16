/* pagemap.c - two-level radix map from 64 KB chunks to their owners. */
#include "mem/pagemap.h"
#include "os/os.h"

_Atomic(bx_pm_entry_t *) bx_pagemap_top[1u << BX_PM_TOP_BITS];

static bx_pm_entry_t *leaf_for(uintptr_t a) {
    uintptr_t top = a >> (BX_BLOCK_SHIFT + BX_PM_LEAF_BITS);
    if (top >= (1u << BX_PM_TOP_BITS)) return NULL;
    bx_pm_entry_t *leaf = atomic_load_explicit(&bx_pagemap_top[top], memory_order_acquire);
    if (leaf) return leaf;
    size_t bytes = sizeof(uintptr_t) << BX_PM_LEAF_BITS;
    bx_pm_entry_t *fresh = bx_os_map(bytes);
    if (!fresh) return NULL;
    if (!atomic_compare_exchange_strong_explicit(&bx_pagemap_top[top], &leaf, fresh, memory_order_acq_rel,
                                                 memory_order_acquire)) {
        bx_os_unmap(fresh, bytes); /* another thread installed it first */
        return leaf;
    }
    return fresh;
}

bool bx_pagemap_set(const void *start, size_t size, uintptr_t entry) {
    uintptr_t a = (uintptr_t)start, end = a + size;
    for (; a < end; a += BX_BLOCK_SIZE) {
        bx_pm_entry_t *leaf = leaf_for(a);
        if (!leaf) return false;
        atomic_store_explicit(&leaf[(a >> BX_BLOCK_SHIFT) & ((1u << BX_PM_LEAF_BITS) - 1)], entry,
                              memory_order_release);
    }
    return true;
}

bool bx_pagemap_set_one(const void *p, uintptr_t entry) {
    return bx_pagemap_set((const void *)bx_align_down_ptr((uintptr_t)p, BX_BLOCK_SIZE), 1, entry);
}

#ifdef BX_TESTING
uintptr_t bx_pagemap_lookup(const void *p) { return bx_pagemap_get(p); }
#endif
