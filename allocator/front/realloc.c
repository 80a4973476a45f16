/* realloc.c - realloc and reallocarray. */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include "base/copy.h"
#include "bobox.h"
#include "tools/checked.h"
#include "front/fastpath.h"
#include "mem/large.h"
#include "os/options.h"
#include "tools/prof.h"

/* 128 KB, glibc's mmap threshold before its dynamic adjustment. */
#define BX_REALLOC_MAP_MIN (128 * BX_KB)
BX_STATIC_ASSERT(BX_REALLOC_MAP_MIN > BX_SMALL_MAX && BX_REALLOC_MAP_MIN < BX_MEDIUM_MAX, "a medium size");

/* Room for an object that realloc grows: a quarter more than it held, when that is more than
 * asked (growth by small steps then moves or calls mremap a few times, not at every bin
 * boundary or page); exactly the size asked when it grows faster (a doubling vector: room
 * beyond it would make a later realloc of it look like a shrink). Pages never written are
 * never made resident. */
static size_t growth_room(size_t size, size_t usable) {
    size_t grown = usable + usable / 4;
    return grown > size ? grown : size;
}

BX_API void *bobox_realloc(void *p, size_t size) {
    if (!p) return bobox_malloc(size);
    if (size == 0) { /* glibc: frees and returns NULL */
        bobox_free(p);
        return NULL;
    }
    bx_lookup_t r;
    bx_lookup_live(p, "realloc()", &r);
    if (size > PTRDIFF_MAX) {
        errno = ENOMEM;
        return NULL;
    }
    if (BX_UNLIKELY(bx_options.check)) {
        /* Always moves: a stale pointer to the old object then reads freed memory. */
        size_t old = bx_checked_verify(&r, p, "realloc()");
        void *q = bx_checked_alloc(BX_ALIGNMENT, size, BX_FORM_MALLOC);
        if (!q) return NULL;
        bx_copy(q, p, size < old ? size : old);
        bx_checked_release(&r, p);
        return q;
    }
    /* Fits, and would not waste more than half: keep it. */
    if (size <= r.usable && (size >= r.usable / 2 || r.usable <= 64)) return p;
    if (r.tag == BX_TAG_LARGE && size > BX_REALLOC_MAP_MIN && !r.large->sample) {
        /* The object grows its own mapping. Moving into a cached one and unmapping this one
         * kept threads that grow vectors short of mappings: they faulted in fresh ones again
         * and again. A profiler's sample moves out instead: grown, it would leave the
         * samples' pool, which would then map and fault in a fresh one for the next sample
         * (realloc: 4.6 times the page faults of profiling off). */
        void *q = NULL;
        if (size > r.usable) q = bx_large_realloc(r.large, growth_room(size, r.usable));
        if (!q) q = bx_large_realloc(r.large, size);
        if (q && q != p && BX_UNLIKELY(bx_prof_on)) bx_prof_forget(p);
        if (q) return q;
    }
    /* Grown past BX_REALLOC_MAP_MIN, an object moves into a mapping of its own, which later
     * growth extends with mremap (no copy) and which, once freed, the large cache hands to a
     * request of up to 8 times its size: a vector that doubles through every medium size
     * otherwise leaves a freed block of each size resident in that size's superblock, where
     * no larger size can use it (realloc: 208 MB peak RSS, of which 75 MB such blocks). */
    void *q;
    if (size > r.usable && size > BX_REALLOC_MAP_MIN && r.tag != BX_TAG_LARGE && !bx_prof_on) {
        q = bx_alloc_mapped(growth_room(size, r.usable), BX_ALIGNMENT);
        if (!q && !(q = bx_alloc_mapped(size, BX_ALIGNMENT))) return NULL;
    } else {
        /* Small bins are 7% apart: room for a quarter more moved a string growing by small
         * steps a third as often (realloc: 7% less time, 3% less peak RSS, as fewer copies
         * are left behind). Within the range below a mapping (the profiler's: the medium). */
        size_t room = size;
        if (size > r.usable && size <= BX_MEDIUM_MAX) {
            size_t cap = size > BX_REALLOC_MAP_MIN ? BX_MEDIUM_MAX : BX_REALLOC_MAP_MIN;
            room = growth_room(size, r.usable);
            if (room > cap) room = cap;
        }
        q = bobox_malloc(room);
        if (!q && room > size) q = bobox_malloc(size);
        if (!q) return NULL;
    }
    bx_copy(q, p, size < r.usable ? size : r.usable);
    /* The old slot is not the next one of its size handed out: a stale pointer to the old
     * object would write into the new owner's (as glibc, whose chunk goes to a bin). So an
     * object of our own goes past the front cache into its block, where the free makes it
     * the top chain's head, and then one place down. */
    bx_heap_t *owner = r.tag == BX_TAG_SMALL && !bx_block_is_mixed(r.block) ? r.block->heap : NULL;
    if (owner && owner == bx_tls_heap) {
        bx_heap_free_small_block(owner, r.block, r.object);
        bx_block_demote_head(r.block, r.object);
    } else if (owner && !bx_tls_heap && bx_thread_lock_shared(owner, true)) { /* a thread without a heap */
        if (BX_UNLIKELY(bx_block_is_mixed(r.block))) { /* by its tick, while we waited */
            bx_heap_free_mixed(NULL, r.block, r.object);
        } else {
            bx_heap_free_small_block(owner, r.block, r.object);
            bx_block_demote_head(r.block, r.object);
        }
        bx_thread_unlock_shared(owner);
    } else {
        bx_free_resolved(&r);
    }
    return q;
}

BX_API void *bobox_reallocarray(void *p, size_t count, size_t size) {
    size_t total;
    if (__builtin_mul_overflow(count, size, &total)) {
        errno = ENOMEM;
        return NULL;
    }
    return bobox_realloc(p, total);
}

BX_OVERRIDE(realloc, bobox_realloc)
BX_OVERRIDE(__libc_realloc, bobox_realloc)
BX_OVERRIDE(reallocarray, bobox_reallocarray)
