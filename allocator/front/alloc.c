/* alloc.c - start-up, malloc and calloc. */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <string.h>

#include "bobox.h"
#include "tools/checked.h"
#include "front/fastpath.h"
#include "mem/large.h"
#include "mem/node.h"
#include "os/options.h"
#include "tools/prof.h"
#include "base/secret.h"
#include "tools/stats.h"
#ifdef BOBOX_OVERRIDE
#include "cxx/cxx.h"
#endif

/* ---- start-up ------------------------------------------------------------------------ */

atomic_int bx_init_state;

void bx_init_slow(void) {
    int expected = BX_INIT_NONE;
    if (atomic_compare_exchange_strong(&bx_init_state, &expected, BX_INIT_RUNNING)) {
        bx_options_init();
        bx_stats_init();
        bx_secrets_init();
        bx_node_init();
        bx_thread_global_init();
        bx_prof_init();
#ifdef BOBOX_OVERRIDE
        bx_cxx_setup(); /* published with the state */
#endif
        atomic_store(&bx_init_state, BX_INIT_DONE);
        bx_thread_register_fork_handlers();
        bx_prof_start();
        if (bx_options.verbose) bx_options_report();
        return;
    }
    while (atomic_load(&bx_init_state) != BX_INIT_DONE) sched_yield();
}

/* Most programs malloc long before this runs; the rest still get their settings checked. */
__attribute__((constructor)) static void init_at_load(void) { bx_ensure_init(); }

/* ---- allocation ------------------------------------------------------------------------ */

void *bx_alloc_unchecked(size_t size) {
    if (BX_UNLIKELY(size > PTRDIFF_MAX)) {
        errno = ENOMEM;
        return NULL;
    }
    bx_ensure_init();
    for (int attempt = 0; attempt < 2; attempt++) {
        bx_heap_t *h = bx_thread_heap();
        /* Another thread asked this one to give back what it caches (malloc_trim). */
        if (h && BX_UNLIKELY(atomic_load_explicit(&h->release_requested, memory_order_relaxed)))
            bx_retention_tick_due(h, bx_now_ns());
        void *p = h ? bx_heap_alloc(h, size) : bx_thread_alloc_orphan(size);
        if (BX_LIKELY(p != NULL)) return p;
        /* Out of memory: give every cache back to the OS, then try once more. */
        bx_thread_release_all(BX_RELEASE_OOM);
        bx_retention_release_shared(BX_RELEASE_OOM);
    }
    errno = ENOMEM;
    return NULL;
}

void *bx_alloc_checked(size_t alignment, size_t size) { return bx_checked_alloc(alignment, size, BX_FORM_MALLOC); }

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
        if (size <= BX_SMALL_MAX && (p = bx_bin_alloc_top(bx_tls_bin(size))) != NULL) return p;
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
    if (BX_UNLIKELY(bx_options.check)) return bx_alloc_checked(BX_ALIGNMENT, size);
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
            h ? bx_heap_alloc_large(h, total, BX_ALIGNMENT, &fresh) : bx_large_alloc(total, BX_ALIGNMENT, 0, &fresh);
        if (p) {
            if (!fresh) memset(p, 0, total);
            return p;
        }
    }
    void *p = bobox_malloc(total);
    if (p) memset(p, 0, total);
    return p;
}

BX_OVERRIDE(malloc, bobox_malloc)
BX_OVERRIDE(__libc_malloc, bobox_malloc)
BX_OVERRIDE(calloc, bobox_calloc)
BX_OVERRIDE(__libc_calloc, bobox_calloc)
