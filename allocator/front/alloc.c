/* alloc.c - malloc and calloc. */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include "base/copy.h"
#include "bobox.h"
#include "front/fastpath.h"
#include "mem/large.h"
#include "mem/node.h"
#include "os/options.h"
#include "tools/checked.h"
#include "tools/prof.h"

void *bx_malloc_slow(size_t size) {
    /* The fast path counted the small sizes; sizes past PTRDIFF_MAX fail, uncounted. Below
     * zero the count stays at its floor rather than overflow. */
    if (size > BX_SMALL_MAX && size <= PTRDIFF_MAX &&
        __builtin_sub_overflow(bx_tls_alloc.sample_left, (int64_t)size, &bx_tls_alloc.sample_left))
        bx_tls_alloc.sample_left = INT64_MIN;
    if (BX_UNLIKELY(bx_tls_alloc.sample_left < 0)) {
        void *p = bx_prof_due(size);
        if (p) return p;
        /* Not sampled: the countdown stopped the fast path before its pop, not a spent chain. */
        if (size <= BX_SMALL_MAX && (p = bx_bin_alloc_fast(bx_tls_bin(size))) != NULL) return p;
    }
    if (size <= BX_SMALL_MAX) { /* the top chain is spent: the next one (the stand-in has none) */
        void *p = bx_bin_alloc_next(bx_tls_bin(size));
        if (BX_LIKELY(p != NULL)) return p;
    }
    /* A medium size for a thread with a heap in the default mode: its bin, without the
     * layers below (they remain for everything else, and for running out of memory). */
    bx_heap_t *h = bx_tls_fast;
    if (BX_LIKELY(h != NULL) && size - (BX_SMALL_MAX + 1) <= BX_MEDIUM_MAX - (BX_SMALL_MAX + 1)) {
        void *p = bx_heap_alloc_medium(h, bx_medium_bin(size));
        if (BX_LIKELY(p != NULL)) return p;
    }
    bx_ensure_init();
    if (BX_UNLIKELY(bx_options.check)) return bx_checked_alloc(BX_ALIGNMENT, size, BX_FORM_MALLOC);
    return bx_alloc_unchecked(size);
}

BX_API BX_HOT void *bobox_malloc(size_t size) {
    void *p = bx_alloc_fast(size);
    return BX_LIKELY(p != NULL) ? p : bx_malloc_slow(size);
}

BX_API void *bobox_calloc(size_t count, size_t size) {
    size_t total;
    if (BX_UNLIKELY(__builtin_mul_overflow(count, size, &total))) {
        errno = ENOMEM;
        return NULL;
    }
    /* Profiling: through malloc, where samples are taken. */
    if (total > BX_MEDIUM_MAX && total <= PTRDIFF_MAX && (bx_ensure_init(), !bx_options.check) && !bx_prof_on) {
        /* Large: fresh mappings are already zero. */
        bx_heap_t *h = bx_thread_heap();
        bool fresh = false;
        void *p =
            h ? bx_heap_alloc_large(h, total, BX_ALIGNMENT, &fresh) : bx_large_alloc(total, BX_ALIGNMENT, bx_node_current(), &fresh);
        if (p) {
            if (!fresh) bx_fill(p, 0, total);
            return p;
        }
    }
    void *p = bobox_malloc(total);
    if (p) bx_fill(p, 0, total);
    return p;
}

BX_OVERRIDE(malloc, bobox_malloc)
BX_OVERRIDE(__libc_malloc, bobox_malloc)
BX_OVERRIDE(calloc, bobox_calloc)
BX_OVERRIDE(__libc_calloc, bobox_calloc)
