/* api.c - the malloc family: argument checks, dispatch by size, errno.
 *
 * Built twice: as is for libbobox.a (bobox_* names only), and with BOBOX_OVERRIDE for
 * libbobox.so, where the standard names and glibc's __libc_* aliases point at the
 * same code. */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "bobox.h"
#include "heap.h"
#include "large.h"
#include "node.h"
#include "options.h"
#include "os.h"
#include "checked.h"
#ifdef BOBOX_OVERRIDE
#include "cxx.h"
#endif
#include "lookup.h"
#include "pagemap.h"
#include "remote.h"
#include "stats.h"

/* ---- start-up ------------------------------------------------------------------------ */

enum { INIT_NONE, INIT_RUNNING, INIT_DONE };
static atomic_int init_state;
#ifdef BOBOX_OVERRIDE
static void cxx_init(void);
#endif

/* Runs on the first call; nothing in it allocates. */
static BX_NOINLINE void init_slow(void) {
    int expected = INIT_NONE;
    if (atomic_compare_exchange_strong(&init_state, &expected, INIT_RUNNING)) {
        bx_options_init();
        bx_stats_init();
        bx_sizeclass_init();
        bx_secrets_init();
        bx_node_init();
        bx_heap_global_init();
#ifdef BOBOX_OVERRIDE
        cxx_init(); /* published with init_state */
#endif
        atomic_store(&init_state, INIT_DONE);
        bx_heap_register_fork_handlers();
        if (bx_options.verbose) bx_options_report();
        return;
    }
    while (atomic_load(&init_state) != INIT_DONE) sched_yield();
}

static inline void ensure_init(void) {
    if (BX_UNLIKELY(atomic_load_explicit(&init_state, memory_order_acquire) != INIT_DONE)) init_slow();
}

/* Most programs malloc long before this runs; the rest still get their settings checked. */
__attribute__((constructor)) static void init_at_load(void) { ensure_init(); }

/* ---- allocation ------------------------------------------------------------------------ */

/* Any size, any thread state, never checked; NULL with errno ENOMEM when memory cannot be had. */
static BX_NOINLINE void *alloc_unchecked(size_t size) {
    if (BX_UNLIKELY(size > PTRDIFF_MAX)) {
        errno = ENOMEM;
        return NULL;
    }
    ensure_init();
    for (int attempt = 0; attempt < 2; attempt++) {
        bx_heap_t *h = bx_tls_heap ? bx_tls_heap : bx_heap_acquire();
        void *p = h ? bx_heap_alloc(h, size) : bx_heap_alloc_orphan(size);
        if (BX_LIKELY(p != NULL)) return p;
        /* Out of memory: give every cache back to the OS, then try once more. */
        bx_heap_trim_all();
        bx_node_purge(true);
        bx_large_purge(true);
    }
    errno = ENOMEM;
    return NULL;
}

/* A checked object: `size` bytes plus room for the canary and the size record. */
static void *alloc_checked(size_t alignment, size_t size);

static BX_NOINLINE void *malloc_slow(size_t size) {
    /* A medium size for a thread with a heap in the default mode: its bin, without the
     * layers below (they remain for everything else, and for running out of memory). */
    bx_heap_t *h = bx_tls_fast;
    if (BX_LIKELY(h != NULL) && size - (BX_SMALL_MAX + 1) <= BX_MEDIUM_MAX - (BX_SMALL_MAX + 1)) {
        void *p = bx_heap_alloc_medium(h, bx_medium_bin(size));
        if (BX_LIKELY(p != NULL)) return p;
    }
    ensure_init();
    if (BX_UNLIKELY(bx_options.check)) return alloc_checked(BX_ALIGNMENT, size);
    return alloc_unchecked(size);
}

/* The hot path: a small size, from the bin the thread's table names (a stand-in with an
 * empty stack when the thread has no heap and in checked mode). */
static inline void *alloc_fast(size_t size) {
    if (BX_UNLIKELY(size > BX_SMALL_MAX)) return NULL;
    return bx_bin_alloc(bx_tls_bin_for[(size + 15) >> 4]);
}

BX_API BX_HOT void *bobox_malloc(size_t size) {
    void *p = alloc_fast(size);
    return BX_LIKELY(p != NULL) ? p : malloc_slow(size);
}

BX_API void *bobox_calloc(size_t count, size_t size) {
    size_t total;
    if (BX_UNLIKELY(__builtin_mul_overflow(count, size, &total))) {
        errno = ENOMEM;
        return NULL;
    }
    if (total > BX_MEDIUM_MAX && total <= PTRDIFF_MAX && (ensure_init(), !bx_options.check)) {
        /* Large: fresh mappings are already zero. */
        bx_heap_t *h = bx_tls_heap ? bx_tls_heap : bx_heap_acquire();
        bool fresh = false;
        if (h) bx_heap_tick(h);
        void *p = bx_large_alloc(total, BX_ALIGNMENT, h ? h->node : 0, &fresh);
        if (p) {
            if (h) h->counters.large++;
            if (!fresh) memset(p, 0, total);
            return p;
        }
    }
    void *p = bobox_malloc(total);
    if (p) memset(p, 0, total);
    return p;
}

/* alignment: a power of two above BX_ALIGNMENT. */
static void *aligned_unchecked(size_t alignment, size_t size) {
    if (size == 0) size = 1; /* the aligned pointer must stay inside its object */
    if (size > PTRDIFF_MAX - alignment) {
        errno = ENOMEM;
        return NULL;
    }
    if (alignment < BX_BLOCK_SIZE && size + alignment <= BX_MEDIUM_MAX) {
        /* Medium objects are 512-byte aligned already. */
        size_t padded = size > BX_SMALL_MAX && alignment <= BX_MEDIUM_GRAIN ? size : size + alignment - BX_ALIGNMENT;
        char *p = alloc_fast(padded);
        if (!p) p = alloc_unchecked(padded);
        if (!p || ((uintptr_t)p & (alignment - 1)) == 0) return p;
        char *aligned = (char *)bx_align_up((uintptr_t)p, alignment);
        bx_object_mark_aligned(p, aligned, bx_object_key(p));
        return aligned;
    }
    ensure_init();
    bx_heap_t *h = bx_tls_heap ? bx_tls_heap : bx_heap_acquire();
    bool fresh;
    void *p = bx_large_alloc(size, alignment, h ? h->node : 0, &fresh);
    if (!p) {
        bx_node_purge(true);
        bx_large_purge(true);
        p = bx_large_alloc(size, alignment, h ? h->node : 0, &fresh);
    }
    if (!p) errno = ENOMEM;
    return p;
}

static void *alloc_checked(size_t alignment, size_t size) {
    if (size > PTRDIFF_MAX - BX_CHECK_ROOM) {
        errno = ENOMEM;
        return NULL;
    }
    void *p = alignment <= BX_ALIGNMENT ? alloc_unchecked(size + BX_CHECK_ROOM)
                                        : aligned_unchecked(alignment, size + BX_CHECK_ROOM);
    return p ? bx_checked_arm(p, size) : NULL;
}

/* alignment: a power of two. */
static void *alloc_aligned(size_t alignment, size_t size) {
    if (alignment <= BX_ALIGNMENT) return bobox_malloc(size);
    ensure_init();
    if (BX_UNLIKELY(bx_options.check)) return alloc_checked(alignment, size);
    return aligned_unchecked(alignment, size);
}

BX_API int bobox_posix_memalign(void **out, size_t alignment, size_t size) {
    if (!bx_is_pow2(alignment) || alignment % sizeof(void *)) return EINVAL;
    int saved = errno;
    void *p = alloc_aligned(alignment, size);
    errno = saved;
    if (!p) return ENOMEM;
    *out = p;
    return 0;
}

BX_API void *bobox_aligned_alloc(size_t alignment, size_t size) {
    if (!bx_is_pow2(alignment)) {
        errno = EINVAL;
        return NULL;
    }
    return alloc_aligned(alignment, size);
}

BX_API void *bobox_memalign(size_t alignment, size_t size) {
    /* glibc: a non-power-of-two alignment is rounded up to the next power of two. */
    if (alignment > ((size_t)1 << (sizeof(size_t) * 8 - 1))) {
        errno = EINVAL;
        return NULL;
    }
    size_t a = alignment < BX_ALIGNMENT ? BX_ALIGNMENT : alignment;
    while (!bx_is_pow2(a)) a = (a | (a - 1)) + 1;
    return alloc_aligned(a, size);
}

BX_API void *bobox_valloc(size_t size) { return alloc_aligned(bx_os_page_size(), size); }

BX_API void *bobox_pvalloc(size_t size) {
    size_t page = bx_os_page_size();
    if (size > PTRDIFF_MAX - page) {
        errno = ENOMEM;
        return NULL;
    }
    return alloc_aligned(page, size ? bx_align_up(size, page) : page);
}

/* ---- free ---------------------------------------------------------------------------------- */

static void free_resolved(bx_lookup_t *r) {
    bx_heap_t *h = bx_tls_heap;
    switch (r->tag) {
    case BX_TAG_SMALL:
        if (r->block->heap == h)
            bx_heap_free_small(h, r->block, r->object);
        else
            bx_heap_free_foreign(r->block->heap, r->object, r->block->size, bx_block_key(r->block));
        break;
    case BX_TAG_MEDIUM:
        if (!bx_sb_take_live(r->sb, r->index, r->sb->heap == h)) bx_fatal("free(): double free", r->object);
        if (r->sb->heap == h)
            bx_heap_free_medium(h, r->sb, r->index);
        else
            bx_heap_free_foreign(r->sb->heap, r->object, r->sb->block_size, r->sb->free_key);
        break;
    case BX_TAG_LARGE: {
        int saved = errno; /* free() must not change errno, and munmap may */
        bx_large_free(r->large);
        if (h) bx_heap_tick(h);
        errno = saved;
        break;
    }
    }
}

/* A live object's lookup, or an abort naming `op` ("free()") and what is wrong with p. */
static inline __attribute__((always_inline)) void lookup_live(const void *p, const char *op, bx_lookup_t *r) {
    if (BX_UNLIKELY(bx_options.check))
        bx_checked_lookup(p, op, r);
    else
        bx_lookup(p, r);
    if (BX_UNLIKELY(!r->tag)) bx_fatalf("%s: %s %p", op, r->freed ? "double free" : "invalid pointer", p);
}

static BX_NOINLINE void free_slow(void *p) {
    if (!p) return;
    bx_lookup_t r;
    lookup_live(p, "free()", &r);
    if (BX_UNLIKELY(bx_options.check)) bx_checked_verify(&r, p, "free()");
    free_resolved(&r);
}

/* A small object of another heap (or not a plain live one): out of line, so that the
 * local path of free keeps no stack frame. */
static BX_NOINLINE void free_foreign(bx_heap_t *h, bx_block_t *blk, void *p) {
    if (BX_LIKELY(bx_heap_foreign_small_ok(h, blk, p)))
        bx_heap_free_foreign_small(h, blk, p);
    else
        free_slow(p); /* also every free in checked mode, where h is NULL */
}

/* A medium object: the checks of bx_lookup() for a plain live object of the caller's heap,
 * then its free; anything else (another heap's, aligned, double, checked mode) goes to the
 * general path, which reports what is wrong. */
static BX_NOINLINE void free_medium(uintptr_t entry, void *p) {
    bx_heap_t *h = bx_tls_fast;
    bx_superblock_t *sb = bx_span_of(entry);
    uint32_t index = 0; /* set whenever the block found is p itself */
    /* Clearing the live flag comes last: any failed check leaves the object as it was. */
    if (BX_LIKELY(h != NULL && sb->heap == h && bx_sb_object(sb, p, &index) == p && bx_object_plain_live(p, sb->free_key) &&
                  bx_sb_take_live(sb, index, true))) {
        bx_heap_free_medium(h, sb, index);
        return;
    }
    free_slow(p);
}

/* A pointer into a small-object block: the local fast path, or another heap's object. */
static inline __attribute__((always_inline)) void free_in_small_block(void *p) {
    bx_block_t *blk = bx_block_of(p);
    bx_heap_t *h = bx_tls_fast;
    if (BX_LIKELY(blk->heap == h)) {
        /* p is an object handed out: a slot start, and marked neither free nor aligned. */
        if (BX_LIKELY(bx_block_is_own_slot(blk, p) && bx_object_plain_live(p, bx_block_key(blk)))) {
            bx_heap_free_small(h, blk, p);
            return;
        }
    } else {
        free_foreign(h, blk, p);
        return;
    }
    free_slow(p);
}

/* Whatever the flat map did not place in small blocks: the two-level map decides (small
 * blocks too, when the flat map is not available). */
static BX_NOINLINE void free_not_flat_small(void *p) {
    /* NULL falls through to free_slow: no 64 KB chunk at address 0 is ever ours. */
    uintptr_t entry = bx_pagemap_get(p);
    if (bx_is_small_entry(entry))
        free_in_small_block(p);
    else if (bx_tag_of(entry) == BX_TAG_MEDIUM)
        free_medium(entry, p);
    else
        free_slow(p);
}

BX_API BX_HOT void bobox_free(void *p) {
    if (BX_LIKELY(bx_in_small_region(p)))
        free_in_small_block(p);
    else
        free_not_flat_small(p);
}

/* Checked mode: the size given back must be the one requested (C23's free_sized and
 * free_aligned_sized, C++'s sized delete). */
static BX_NOINLINE void free_sized_checked(void *p, size_t size, const char *op) {
    bx_lookup_t r;
    lookup_live(p, op, &r);
    size_t requested = bx_checked_verify(&r, p, op);
    if (size != requested) bx_fatalf("%s: size %zu does not match the %zu bytes allocated at %p", op, size, requested, p);
    free_resolved(&r); /* verified: no second lookup through bobox_free */
}

BX_API void bobox_free_sized(void *p, size_t size) {
    if (BX_UNLIKELY(bx_options.check) && p)
        free_sized_checked(p, size, "free_sized()");
    else
        bobox_free(p);
}

BX_API void bobox_free_aligned_sized(void *p, size_t alignment, size_t size) {
    (void)alignment; /* free finds it from the address */
    if (BX_UNLIKELY(bx_options.check) && p)
        free_sized_checked(p, size, "free_aligned_sized()");
    else
        bobox_free(p);
}

BX_API size_t bobox_malloc_usable_size(void *p) {
    if (!p) return 0;
    bx_lookup_t r;
    lookup_live(p, "malloc_usable_size()", &r);
    /* Checked: only the requested bytes, so that a program using them all keeps the canary. */
    if (BX_UNLIKELY(bx_options.check)) return bx_checked_verify(&r, p, "malloc_usable_size()");
    return r.usable;
}

BX_API int bobox_owns(const void *p) {
    if (!p) return 0;
    bx_lookup_t r;
    bx_lookup(p, &r);
    return r.tag != 0;
}

BX_API void *bobox_realloc(void *p, size_t size) {
    if (!p) return bobox_malloc(size);
    if (size == 0) { /* glibc: frees and returns NULL */
        bobox_free(p);
        return NULL;
    }
    bx_lookup_t r;
    lookup_live(p, "realloc()", &r);
    if (size > PTRDIFF_MAX) {
        errno = ENOMEM;
        return NULL;
    }
    if (BX_UNLIKELY(bx_options.check)) {
        /* Always moves: a stale pointer to the old object then reads freed memory. */
        size_t old = bx_checked_verify(&r, p, "realloc()");
        void *q = alloc_checked(BX_ALIGNMENT, size);
        if (!q) return NULL;
        memcpy(q, p, size < old ? size : old);
        free_resolved(&r);
        return q;
    }
    /* Fits, and would not waste more than half: keep it. */
    if (size <= r.usable && (size >= r.usable / 2 || r.usable <= 64)) return p;
    if (r.tag == BX_TAG_LARGE && size > BX_MEDIUM_MAX) {
        /* The object grows its own mapping. Moving into a cached one and unmapping this one
         * kept threads that grow vectors short of mappings: they faulted in fresh ones again
         * and again. */
        void *q = bx_large_realloc(r.large, size);
        if (q) return q;
    }
    /* Growing by small steps (appending to a string or a vector) would move the object at
     * every bin boundary, 7% apart: a move makes room for a quarter more (realloc: 7% less
     * time, 3% less peak RSS, as fewer copies are left behind). */
    size_t room = size;
    if (size > r.usable && size <= BX_MEDIUM_MAX) {
        size_t grown = r.usable + r.usable / 4;
        if (grown > size) room = grown < BX_MEDIUM_MAX ? grown : BX_MEDIUM_MAX;
    }
    void *q = bobox_malloc(room);
    if (!q && room > size) q = bobox_malloc(size);
    if (!q) return NULL;
    memcpy(q, p, size < r.usable ? size : r.usable);
    free_resolved(&r);
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

/* ---- housekeeping ------------------------------------------------------------------------ */

BX_API int bobox_malloc_trim(size_t pad) {
    (void)pad;
    ensure_init();
    size_t before = bx_os_released_bytes();
    bx_heap_trim_all();
    bx_node_purge(true);
    bx_large_purge(true);
    return bx_os_released_bytes() != before;
}

BX_API int bobox_mallopt(int param, int value) {
    (void)param;
    (void)value;
    return 1; /* glibc's tuning knobs have no meaning here; accepted and ignored */
}

BX_API void bobox_malloc_stats(void) {
    ensure_init();
    bobox_print_stats(2);
}

BX_API int bobox_check_heap(void) {
    ensure_init();
    return bx_tls_heap ? bx_heap_check(bx_tls_heap) : 1;
}

BX_API void bobox_get_stats(struct bobox_stats *out) {
    ensure_init();
    bx_stats_collect(out);
}

static struct mallinfo2 mallinfo_of_stats(void) {
    struct bobox_stats s;
    bobox_get_stats(&s);
    struct mallinfo2 mi = {0};
    mi.arena = s.mapped_bytes;
    mi.hblks = s.large_objects;
    mi.hblkhd = s.large_bytes;
    mi.uordblks = s.allocated_bytes;
    mi.fordblks = s.mapped_bytes > s.allocated_bytes ? s.mapped_bytes - s.allocated_bytes : 0;
    mi.keepcost = s.large_cached_bytes;
    mi.usmblks = s.peak_mapped_bytes;
    return mi;
}

BX_API struct mallinfo2 bobox_mallinfo2(void) { return mallinfo_of_stats(); }

BX_API struct mallinfo bobox_mallinfo(void) {
    struct mallinfo2 m2 = mallinfo_of_stats();
    struct mallinfo mi = {0};
    /* The old interface has int fields: saturate rather than wrap. */
#define CLAMP(v) ((v) > (size_t)__INT_MAX__ ? __INT_MAX__ : (int)(v))
    mi.arena = CLAMP(m2.arena);
    mi.hblks = CLAMP(m2.hblks);
    mi.hblkhd = CLAMP(m2.hblkhd);
    mi.uordblks = CLAMP(m2.uordblks);
    mi.fordblks = CLAMP(m2.fordblks);
    mi.keepcost = CLAMP(m2.keepcost);
    mi.usmblks = CLAMP(m2.usmblks);
#undef CLAMP
    return mi;
}

/* glibc's layout, so that tools that read it keep working: one heap; the free memory held
 * (mapped and not in use) as "rest", counted in cached superblocks; large objects as "mmap".
 * Options other than 0 return EINVAL, as glibc's does (its manual page says -1 and errno). */
BX_API int bobox_malloc_info(int options, FILE *stream) {
    if (options != 0) return EINVAL;
    struct bobox_stats s;
    bobox_get_stats(&s);
    size_t free_bytes = s.mapped_bytes > s.allocated_bytes ? s.mapped_bytes - s.allocated_bytes : 0;
    /* Written twice: the heap's element, then the process totals. */
    for (int heap = 1; heap >= 0; heap--) {
        if (heap) fputs("<malloc version=\"1\">\n<heap nr=\"0\">\n<sizes>\n</sizes>\n", stream);
        fprintf(stream, "<total type=\"fast\" count=\"0\" size=\"0\"/>\n<total type=\"rest\" count=\"%zu\" size=\"%zu\"/>\n",
                s.superblocks_cached, free_bytes);
        if (!heap) fprintf(stream, "<total type=\"mmap\" count=\"%zu\" size=\"%zu\"/>\n", s.large_objects, s.large_bytes);
        fprintf(stream,
                "<system type=\"current\" size=\"%zu\"/>\n<system type=\"max\" size=\"%zu\"/>\n"
                "<aspace type=\"total\" size=\"%zu\"/>\n<aspace type=\"mprotect\" size=\"%zu\"/>\n%s",
                s.mapped_bytes, s.peak_mapped_bytes, s.mapped_bytes, s.mapped_bytes, heap ? "</heap>\n" : "</malloc>\n");
    }
    return 0;
}

#ifdef BOBOX_OVERRIDE
/* ---- C++ operator new and delete (cxx.h) ------------------------------------------------
 * The same fast paths as malloc's and free's: libstdc++'s would call them one level deeper,
 * 84 instructions per new + sized delete pair against 66 (scripts/fastpath.sh). Out of
 * memory, new hands the request to the C++ runtime's own definition of the form, which
 * retries, runs the program's new-handler and throws std::bad_alloc: C cannot throw. */
static BX_NOINLINE void *cxx_new_slow(size_t size) {
    void *p = malloc_slow(size);
    return BX_LIKELY(p != NULL) ? p : bx_cxx_new_failed(BX_CXX__Znwm, size, 0, NULL);
}

static BX_HOT void *cxx_new(size_t size) {
    void *p = alloc_fast(size);
    return BX_LIKELY(p != NULL) ? p : cxx_new_slow(size);
}

static void *cxx_new_nothrow(size_t size, const void *tag) {
    void *p = bobox_malloc(size);
    return BX_LIKELY(p != NULL) ? p : bx_cxx_new_failed(BX_CXX__ZnwmRKSt9nothrow_t, size, 0, tag);
}

/* An alignment that is not a power of two gets the runtime's answer (bad_alloc). */
static void *cxx_new_aligned(size_t size, size_t align) {
    void *p = bx_is_pow2(align) ? alloc_aligned(align, size) : NULL;
    return BX_LIKELY(p != NULL) ? p : bx_cxx_new_failed(BX_CXX__ZnwmSt11align_val_t, size, align, NULL);
}

static void *cxx_new_aligned_nothrow(size_t size, size_t align, const void *tag) {
    void *p = bx_is_pow2(align) ? alloc_aligned(align, size) : NULL;
    return BX_LIKELY(p != NULL) ? p : bx_cxx_new_failed(BX_CXX__ZnwmSt11align_val_tRKSt9nothrow_t, size, align, tag);
}

/* cxx_own_NAME: our definition of NAME under a hidden name, whose address is ours even
 * where the program defines NAME (the address of NAME itself comes through the GOT). */
#define CXX_OWN_ALIAS(name, target) \
    extern __typeof__(target) cxx_own_##name __attribute__((alias(#target), visibility("hidden")));

/* The derived forms: one indirect jump each. Until the allocator is initialised, the jump
 * lands on a stub that initialises it (bx_cxx_init then sets the real target) and jumps again. */
#define CXX_DERIVED_(name, ret, ret_kw, params, args)                                            \
    BX_API ret name params { ret_kw((ret(*) params)bx_cxx_target[BX_CXX_##name]) args; }      \
    CXX_OWN_ALIAS(name, name)                                                                   \
    static ret cxx_first_##name params {                                                        \
        ensure_init();                                                                          \
        ret_kw((ret(*) params)bx_cxx_target[BX_CXX_##name]) args;                               \
    }
#define CXX_DERIVED(name, sig) BX_CXX_WITH_SIG(CXX_DERIVED_, name, sig)
BX_CXX_DERIVED_FORMS(CXX_DERIVED)
#undef CXX_DERIVED

#define CXX_FIRST(name, sig) [BX_CXX_##name] = (void *)cxx_first_##name,
void *bx_cxx_target[BX_CXX_DERIVED] = {BX_CXX_DERIVED_FORMS(CXX_FIRST)};
#undef CXX_FIRST

/* The base forms: aliases, no jump at all. */
#define CXX_BASE(name, target) \
    extern __typeof__(target) name __attribute__((alias(#target), visibility("default"))); CXX_OWN_ALIAS(name, target)
CXX_BASE(_Znwm, cxx_new)
CXX_BASE(_ZnwmSt11align_val_t, cxx_new_aligned)
CXX_BASE(_ZdlPv, bobox_free)
CXX_BASE(_ZdlPvSt11align_val_t, bobox_free)

/* Checked mode's sized delete (aligned or not: the alignment follows in a register). */
static void cxx_delete_sized_checked(void *p, size_t size) {
    if (p) free_sized_checked(p, size, "operator delete()");
}

/* What each derived form does in a program that defines no operator of its own: new[] is
 * new, every delete is free (free finds the size and alignment from the address), but in
 * checked mode a sized delete checks the size. */
#define CXX_OWN_NEW cxx_new
#define CXX_OWN_NEW_NT cxx_new_nothrow
#define CXX_OWN_NEW_AL cxx_new_aligned
#define CXX_OWN_NEW_AL_NT cxx_new_aligned_nothrow
#define CXX_OWN_DEL bobox_free
#define CXX_OWN_DEL_SZ (bx_options.check ? (void *)cxx_delete_sized_checked : (void *)bobox_free)
#define CXX_OWN_DEL_NT bobox_free
#define CXX_OWN_DEL_AL bobox_free
#define CXX_OWN_DEL_SZ_AL CXX_OWN_DEL_SZ
#define CXX_OWN_DEL_AL_NT bobox_free

static void cxx_init(void) {
#define CXX_OWN_TARGET(name, sig) [BX_CXX_##name] = (void *)CXX_OWN_##sig,
#define CXX_OWN_ADDRESS(name, sig) [BX_CXX_##name] = (void *)cxx_own_##name,
    void *const own_target[BX_CXX_DERIVED] = {BX_CXX_DERIVED_FORMS(CXX_OWN_TARGET)};
    void *const own[BX_CXX_FORMS] = {BX_CXX_DERIVED_FORMS(CXX_OWN_ADDRESS) BX_CXX_BASE_FORMS(CXX_OWN_ADDRESS)};
#undef CXX_OWN_TARGET
#undef CXX_OWN_ADDRESS
    bx_cxx_init(own, own_target);
}

/* The standard names, glibc's internal aliases, and nothing else: same code, no jump. */
#define BX_ALIAS(name, target) extern __typeof__(target) name __attribute__((alias(#target), visibility("default")))
BX_ALIAS(malloc, bobox_malloc);
BX_ALIAS(free, bobox_free);
BX_ALIAS(calloc, bobox_calloc);
BX_ALIAS(realloc, bobox_realloc);
BX_ALIAS(reallocarray, bobox_reallocarray);
BX_ALIAS(posix_memalign, bobox_posix_memalign);
BX_ALIAS(aligned_alloc, bobox_aligned_alloc);
BX_ALIAS(memalign, bobox_memalign);
BX_ALIAS(valloc, bobox_valloc);
BX_ALIAS(pvalloc, bobox_pvalloc);
BX_ALIAS(malloc_usable_size, bobox_malloc_usable_size);
BX_ALIAS(free_sized, bobox_free_sized);
BX_ALIAS(free_aligned_sized, bobox_free_aligned_sized);
BX_ALIAS(malloc_trim, bobox_malloc_trim);
BX_ALIAS(mallinfo, bobox_mallinfo);
BX_ALIAS(mallinfo2, bobox_mallinfo2);
BX_ALIAS(mallopt, bobox_mallopt);
BX_ALIAS(malloc_stats, bobox_malloc_stats);
BX_ALIAS(malloc_info, bobox_malloc_info);
BX_ALIAS(cfree, bobox_free);
BX_ALIAS(__libc_malloc, bobox_malloc);
BX_ALIAS(__libc_free, bobox_free);
BX_ALIAS(__libc_calloc, bobox_calloc);
BX_ALIAS(__libc_realloc, bobox_realloc);
BX_ALIAS(__libc_memalign, bobox_memalign);
BX_ALIAS(__libc_valloc, bobox_valloc);
BX_ALIAS(__libc_pvalloc, bobox_pvalloc);
BX_ALIAS(__posix_memalign, bobox_posix_memalign);
#endif
