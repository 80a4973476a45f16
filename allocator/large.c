/* large.c - mmap'ed objects and their cache. */
#define _GNU_SOURCE
#include "large.h"

#include <errno.h>
#include <stdatomic.h>
#include <sys/mman.h>

#include "lock.h"
#include "node.h"
#include "options.h"
#include "os.h"
#include "pagemap.h"

static bx_lock_t cache_lock = BX_LOCK_INIT;
static atomic_size_t live_objects, live_bytes;
static bx_large_t *cache; /* newest first */
static size_t cache_bytes;

static size_t page(void) { return bx_os_page_size(); }

static bool publish(bx_large_t *l) { return bx_pagemap_set_one(l->user, (uintptr_t)l | BX_TAG_LARGE); }
static void unpublish(bx_large_t *l) { bx_pagemap_set_one(l->user, 0); }

/* Takes a cached mapping that fits `need` bytes without wasting more than a quarter. */
static bx_large_t *from_cache(size_t need) {
    bx_large_t *found = NULL;
    bx_lock(&cache_lock);
    for (bx_large_t **link = &cache; *link; link = &(*link)->next) {
        bx_large_t *l = *link;
        if (l->map_size >= need && l->map_size - need <= l->map_size / 4) {
            *link = l->next;
            cache_bytes -= l->map_size;
            found = l;
            break;
        }
    }
    bx_unlock(&cache_lock);
    return found;
}

void *bx_large_alloc(size_t size, size_t alignment, int node, bool *fresh) {
    /* Each object spans at least one 64 KB chunk, so no two share the pagemap entry of
     * their address. */
    if (size < BX_BLOCK_SIZE) size = BX_BLOCK_SIZE;
    if (size > PTRDIFF_MAX - 2 * page() - alignment) {
        errno = ENOMEM;
        return NULL;
    }
    size_t need = page() + bx_align_up(size, page());
    bx_large_t *l = alignment <= page() ? from_cache(need) : NULL;
    *fresh = l == NULL;
    if (!l) {
        char *base = bx_os_map_aligned(need, alignment, page());
        if (!base) return NULL;
        bx_os_bind(base, need, node);
        l = (bx_large_t *)base;
        l->base = base;
        l->map_size = need;
        l->user = base + page();
        l->usable = need - page();
        l->node = node;
    }
    if (!publish(l)) {
        bx_os_unmap(l->base, l->map_size);
        errno = ENOMEM;
        return NULL;
    }
    atomic_fetch_add_explicit(&live_objects, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&live_bytes, l->usable, memory_order_relaxed);
    return l->user;
}

static void collect(bool all, bx_large_t **out) {
    uint64_t now = bx_now_ms();
    size_t kept_bytes = 0;
    for (bx_large_t **link = &cache; *link;) {
        bx_large_t *l = *link;
        if (all || kept_bytes + l->map_size > bx_options.cache_bytes ||
            now - l->cached_since_ms >= bx_options.decay_ms) {
            *link = l->next;
            cache_bytes -= l->map_size;
            l->next = *out;
            *out = l;
        } else {
            kept_bytes += l->map_size;
            link = &l->next;
        }
    }
}

static size_t release(bx_large_t *l) {
    size_t bytes = 0;
    while (l) {
        bx_large_t *next = l->next;
        bytes += l->map_size;
        bx_os_unmap(l->base, l->map_size);
        l = next;
    }
    return bytes;
}

void bx_large_free(bx_large_t *l) {
    unpublish(l);
    atomic_fetch_sub_explicit(&live_objects, 1, memory_order_relaxed);
    atomic_fetch_sub_explicit(&live_bytes, l->usable, memory_order_relaxed);
    bx_large_t *expired = NULL;
    if (l->map_size <= bx_options.cache_bytes && l->user == l->base + page()) {
        l->cached_since_ms = bx_now_ms();
        bx_lock(&cache_lock);
        l->next = cache;
        cache = l;
        cache_bytes += l->map_size;
        collect(false, &expired);
        bx_unlock(&cache_lock);
    } else {
        l->next = NULL;
        expired = l;
    }
    release(expired);
}

void *bx_large_realloc(bx_large_t *l, size_t size) {
    if (size > PTRDIFF_MAX - 2 * page()) return NULL;
    size_t offset = (size_t)(l->user - l->base);
    size_t need = offset + bx_align_up(size < BX_BLOCK_SIZE ? BX_BLOCK_SIZE : size, page());
    if (need == l->map_size) return l->user;
    char *old_base = l->base, *old_user = l->user;
    size_t old_size = l->map_size;
    /* Moving keeps page alignment only; aligned objects grow in place or not at all. */
    char *base = bx_os_remap(old_base, old_size, need, offset == page());
    if (!base) return NULL;
    atomic_fetch_add_explicit(&live_bytes, need - old_size, memory_order_relaxed); /* wraps back on shrink */
    l = (bx_large_t *)base;
    l->base = base;
    l->map_size = need;
    l->user = base + offset;
    l->usable = need - offset;
    if (base != old_base) {
        if (!publish(l)) {
            /* No pagemap leaf for the new place: move back where we were registered. */
            void *back = mremap(base, need, old_size, MREMAP_MAYMOVE | MREMAP_FIXED, old_base);
            if (back != old_base) bx_fatal("mremap could not restore a large object", old_user);
            l = (bx_large_t *)old_base;
            l->base = old_base;
            l->map_size = old_size;
            l->usable = old_size - offset;
            return NULL;
        }
        if (((uintptr_t)old_user ^ (uintptr_t)l->user) >> BX_BLOCK_SHIFT) bx_pagemap_set_one(old_user, 0);
    }
    return l->user;
}

size_t bx_large_purge(bool all) {
    if (!__atomic_load_n(&cache, __ATOMIC_RELAXED)) return 0;
    bx_large_t *expired = NULL;
    bx_lock(&cache_lock);
    collect(all, &expired);
    bx_unlock(&cache_lock);
    return release(expired);
}

size_t bx_large_cached_bytes(void) { return cache_bytes; }
size_t bx_large_live_objects(void) { return atomic_load_explicit(&live_objects, memory_order_relaxed); }
size_t bx_large_live_bytes(void) { return atomic_load_explicit(&live_bytes, memory_order_relaxed); }
void bx_large_lock(void) { bx_lock(&cache_lock); }
void bx_large_unlock(void) { bx_unlock(&cache_lock); }
void bx_large_reset_lock(void) { bx_lock_reset(&cache_lock); }
