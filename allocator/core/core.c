/* core.c - the allocation and free that every mode and tool shares (core.h). */
#define _GNU_SOURCE
#include "core/core.h"

#include <errno.h>

#include "heap/retention.h"
#include "mem/large.h"
#include "mem/node.h"
#include "os/options.h"

void *bx_alloc_unchecked(size_t size) {
    if (BX_UNLIKELY(size > PTRDIFF_MAX)) {
        errno = ENOMEM;
        return NULL;
    }
    for (int attempt = 0; attempt < 3; attempt++) {
        bx_heap_t *h = bx_thread_heap();
        /* Another thread asked this one to give back what it caches (malloc_trim). */
        if (h && BX_UNLIKELY(atomic_load_explicit(&h->release_requested, memory_order_relaxed)))
            bx_retention_tick_due(h, bx_now_ns());
        void *p = h ? bx_heap_alloc(h, size) : bx_thread_alloc_shared(size);
        if (BX_LIKELY(p != NULL)) return p;
        /* Out of memory: give every cache back to the OS, then try once more. Other threads
         * give theirs back at their next malloc: the last try waits for them, briefly. */
        if (attempt == 0) {
            bx_thread_release_all(BX_RELEASE_OOM);
        } else if (!bx_thread_await_releases(10 * 1000 * 1000)) {
            break;
        }
        bx_retention_release_shared(BX_RELEASE_OOM);
    }
    errno = ENOMEM;
    return NULL;
}

void *bx_core_alloc_small(size_t size) {
    bx_bin_t *b = bx_tls_bin(size);
    void *p = bx_bin_alloc(b);
    return p ? p : bx_alloc_unchecked(size);
}

void *bx_alloc_aligned_unchecked(size_t alignment, size_t size) {
    if (size == 0) size = 1; /* the aligned pointer must stay inside its object */
    if (size > PTRDIFF_MAX - alignment) {
        errno = ENOMEM;
        return NULL;
    }
    if (alignment < BX_BLOCK_SIZE && size + alignment <= BX_MEDIUM_MAX) {
        /* Medium objects are 512-byte aligned already. */
        size_t padded = size > BX_SMALL_MAX && alignment <= BX_MEDIUM_GRAIN ? size : size + alignment - BX_ALIGNMENT;
        char *p = padded <= BX_SMALL_MAX ? bx_bin_alloc_fast(bx_tls_bin(padded)) : NULL;
        if (!p) p = bx_alloc_unchecked(padded);
        if (!p || ((uintptr_t)p & (alignment - 1)) == 0) return p;
        char *aligned = (char *)bx_align_up((uintptr_t)p, alignment);
        bx_object_mark_aligned(p, aligned, bx_object_key(p));
        return aligned;
    }
    return bx_alloc_mapped(size, alignment);
}

void *bx_alloc_mapped(size_t size, size_t alignment) {
    bx_heap_t *h = bx_thread_heap();
    bool fresh;
    for (int attempt = 0; attempt < 2; attempt++) {
        void *p = h ? bx_heap_alloc_large(h, size, alignment, &fresh) : bx_large_alloc(size, alignment, bx_node_current(), &fresh);
        if (p) return p;
        bx_retention_release_shared(BX_RELEASE_OOM);
    }
    errno = ENOMEM;
    return NULL;
}

static void (*large_free_hook)(const void *object);
void bx_core_set_large_free_hook(void (*fn)(const void *object)) { large_free_hook = fn; }

void bx_free_resolved(bx_lookup_t *r) {
    bx_heap_t *h = bx_tls_heap;
    switch (r->tag) {
    case BX_TAG_SMALL: {
        bx_heap_t *owner = r->block->heap;
        /* Counted first: the heap a thread gets once busy may be the owner (adopted). The
         * block is mixed by its owner only (asked after it may have become ours). */
        if (!h) h = bx_thread_count_op(owner);
        if (BX_UNLIKELY(bx_block_is_mixed(r->block))) {
            bx_heap_free_mixed(h, r->block, r->object);
            break;
        }
        if (owner == h) {
            bx_heap_free_small(h, r->block, r->object);
            break;
        }
        if (!h && bx_thread_lock_shared(owner, true)) { /* a thread without a heap: as the owner */
            if (BX_UNLIKELY(bx_block_is_mixed(r->block))) /* by its tick, while we waited */
                bx_heap_free_mixed(NULL, r->block, r->object);
            else
                bx_heap_free_small(owner, r->block, r->object);
            bx_thread_unlock_shared(owner);
            break;
        }
        if (bx_classify_plain_small(h, r->block, r->object)) /* kept or sent home, as free's fast path */
            bx_heap_free_foreign_small(h, r->block, r->object);
        else
            bx_heap_send_home(h, r->block->home, r->object, r->block->size, bx_block_key(r->block));
        break;
    }
    case BX_TAG_MEDIUM: {
        bx_heap_t *owner = r->sb->heap;
        if (!h) h = bx_thread_count_op(owner);
        if (!bx_sb_take_live(r->sb, r->index, owner == h)) bx_fatal("free(): double free", r->object);
        if (owner == h) {
            bx_heap_free_medium(h, r->sb, r->index);
            break;
        }
        if (!h && bx_thread_lock_shared(owner, true)) {
            bx_heap_free_medium(owner, r->sb, r->index);
            bx_thread_unlock_shared(owner);
            break;
        }
        bx_heap_send_home(h, &owner->remote, r->object, r->sb->block_size, r->sb->free_key);
        break;
    }
    case BX_TAG_LARGE: {
        int saved = errno; /* free() must not change errno, and munmap may */
        if (BX_UNLIKELY(large_free_hook != NULL)) large_free_hook(r->object);
        if (h) h->counters.large_freed_bytes += r->large->usable;
        bx_large_free(r->large);
        if (h) bx_heap_tick(h);
        errno = saved;
        break;
    }
    }
}

void bx_core_free(void *p, const char *op) {
    bx_lookup_t r;
    bx_classify(p, &r);
    if (BX_UNLIKELY(!r.tag)) bx_fatalf("%s: %s %p", op, r.freed ? "double free" : "invalid pointer", p);
    bx_free_resolved(&r);
}
