/* pagemap.c - two-level radix map from 64 KB chunks to their owners, and the flat map of
 * small-block regions beside it. */
#include "mem/pagemap.h"
#include "os/os.h"

_Atomic(bx_pm_entry_t *) bx_pagemap_top[1u << BX_PM_TOP_BITS];

#define REGIONS ((uintptr_t)1 << (BX_BLOCK_SHIFT + BX_PM_TOP_BITS + BX_PM_LEAF_BITS - BX_REGION_SHIFT))
uint8_t *bx_small_regions;
uintptr_t bx_small_regions_limit;

/* Reserves the flat map on the first small superblock; false if it is not to be had. */
static bool small_regions_ready(void) {
    static _Atomic(int) state; /* 0: not tried, 1: reserving, 2: ready, 3: unavailable */
    int seen = atomic_load_explicit(&state, memory_order_acquire);
    if (BX_LIKELY(seen >= 2)) return seen == 2;
    if (seen == 0 && atomic_compare_exchange_strong(&state, &seen, 1)) {
        bx_small_regions = bx_os_reserve_zeros(REGIONS);
        atomic_store_explicit(&state, bx_small_regions ? 2 : 3, memory_order_release);
        return bx_small_regions != NULL;
    }
    while ((seen = atomic_load_explicit(&state, memory_order_acquire)) == 1) {}
    return seen == 2;
}

/* Mirrors a change of [a, a+size) in the flat map: small marks the regions it covers whole,
 * anything else clears every region it touches. Readers are admitted (the limit) only once
 * a first entry is in place. */
static void small_regions_set(uintptr_t a, size_t size, bool small) {
    uintptr_t first = small ? bx_align_up(a, BX_REGION_SIZE) >> BX_REGION_SHIFT : a >> BX_REGION_SHIFT;
    uintptr_t end = small ? (a + size) >> BX_REGION_SHIFT : bx_align_up(a + size, BX_REGION_SIZE) >> BX_REGION_SHIFT;
    if (end > REGIONS) end = REGIONS;
    if (first >= end || !small_regions_ready()) return;
    if (small && !bx_os_make_writable(bx_small_regions + first, end - first)) return;
    for (uintptr_t i = first; i < end; i++) {
        /* Pages never written hold only zeros and stay read-only. */
        if (small || bx_small_regions[i]) __atomic_store_n(&bx_small_regions[i], small, __ATOMIC_RELEASE);
    }
    if (small) __atomic_store_n(&bx_small_regions_limit, REGIONS, __ATOMIC_RELEASE);
}

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
    small_regions_set((uintptr_t)start, bx_align_up(size, BX_BLOCK_SIZE), bx_is_small_entry(entry));
    return true;
}

bool bx_pagemap_set_one(const void *p, uintptr_t entry) {
    return bx_pagemap_set((const void *)bx_align_down_ptr((uintptr_t)p, BX_BLOCK_SIZE), 1, entry);
}

#ifdef BX_TESTING
uintptr_t bx_pagemap_lookup(const void *p) { return bx_pagemap_get(p); }
bool bx_pagemap_small_region(const void *p) { return bx_in_small_region(p); }
#endif
