/* free.c - free, its sized forms, malloc_usable_size and bobox_owns: each asks the
 * classifier (classify.h) what the pointer is before following it. */
#define _GNU_SOURCE
#include <errno.h>

#include "bobox.h"
#include "tools/checked.h"
#include "front/fastpath.h"
#include "os/options.h"

void bx_lookup_live(const void *p, const char *op, bx_lookup_t *r) {
    if (BX_UNLIKELY(bx_options.check))
        bx_checked_lookup(p, op, r);
    else
        bx_classify(p, r);
    if (BX_UNLIKELY(!r->tag)) bx_fatalf("%s: %s %p", op, r->freed ? "double free" : "invalid pointer", p);
}

/* p in a mixed block (mem/mixed.h): freed with one look at its bitmaps, which checks it. */
static bool free_mixed(void *p) {
    uintptr_t entry = bx_pagemap_get(p);
    if (bx_tag_of(entry) != BX_TAG_SMALL) return false;
    bx_block_t *blk = bx_block_of(p);
    if (bx_block_unowned(blk) || !bx_block_became_mixed(blk)) return false;
    bx_heap_free_mixed(bx_tls_heap, blk, p);
    return true;
}

static BX_NOINLINE void free_slow(void *p) {
    if (!p) return;
    if (BX_LIKELY(!bx_options.check) && free_mixed(p)) return;
    bx_lookup_t r;
    bx_lookup_live(p, "free()", &r);
    if (BX_UNLIKELY(bx_options.check)) {
        bx_checked_verify(&r, p, "free()");
        bx_checked_release(&r, p);
        return;
    }
    bx_free_resolved(&r);
}

/* A small object of another heap (or not a plain live one): out of line, so that the
 * local path of free keeps no stack frame. */
static BX_NOINLINE void free_foreign(bx_heap_t *h, bx_block_t *blk, void *p) {
    if (BX_LIKELY(bx_classify_plain_small(h, blk, p)))
        bx_heap_free_foreign_small(h, blk, p);
    else
        free_slow(p); /* also every free in checked mode, where h is NULL */
}

/* A medium object of the caller's heap, plain and live; anything else (another heap's,
 * aligned, double, checked mode) goes to the general path, which reports what is wrong. */
static BX_NOINLINE void free_medium(uintptr_t entry, void *p) {
    bx_heap_t *h = bx_tls_fast;
    bx_superblock_t *sb = bx_span_of(entry);
    uint32_t index = 0; /* set whenever the block found is p itself */
    /* Clearing the live flag comes last: any failed check leaves the object as it was. */
    if (BX_LIKELY(bx_classify_own_medium(sb, h, p, &index) && bx_sb_take_live(sb, index, true))) {
        bx_heap_free_medium(h, sb, index);
        return;
    }
    free_slow(p);
}

/* A pointer into a small-object block, blk: the local fast path, or another heap's object. */
static inline __attribute__((always_inline)) void free_in_block(void *p, bx_block_t *blk) {
    bx_heap_t *h = bx_tls_fast;
    if (BX_LIKELY(blk->heap == h)) {
        if (BX_LIKELY(bx_classify_own_small(blk, p))) {
            bx_heap_free_small(h, blk, p);
            return;
        }
    } else {
        free_foreign(h, blk, p);
        return;
    }
    free_slow(p);
}
static inline __attribute__((always_inline)) void free_in_small_block(void *p) { free_in_block(p, bx_block_of(p)); }

/* Whatever lies outside the small arena: the two-level map decides (small blocks too, of
 * superblocks the arena had no room for). */
static BX_NOINLINE void free_outside_arena(void *p) {
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
    uintptr_t off = bx_arena_offset(p);
    if (BX_LIKELY(off < bx_arena.bytes))
        free_in_block(p, bx_block_of_offset(p, off));
    else
        free_outside_arena(p);
}

/* Checked mode's C++ delete forms: `form` must match new's; size 0 is unsized. */
void bx_free_form_checked(void *p, size_t size, unsigned form, const char *op) {
    bx_lookup_t r;
    bx_lookup_live(p, op, &r);
    size_t requested = bx_checked_verify_form(&r, p, form, op);
    if (size && size != requested)
        bx_fatalf("%s: size %zu does not match the %zu bytes allocated at %p", op, size, requested, p);
    bx_checked_release(&r, p);
}

void bx_free_sized_checked(void *p, size_t size, const char *op) {
    bx_lookup_t r;
    bx_lookup_live(p, op, &r);
    size_t requested = bx_checked_verify(&r, p, op);
    if (size != requested)
        bx_fatalf("%s: size %zu does not match the %zu bytes allocated at %p", op, size, requested, p);
    bx_checked_release(&r, p); /* verified: no second lookup through bobox_free */
}

/* C23's free_sized and free_aligned_sized: checked mode checks the size. */
BX_API void bobox_free_sized(void *p, size_t size) {
    if (BX_UNLIKELY(bx_options.check) && p)
        bx_free_sized_checked(p, size, "free_sized()");
    else
        bobox_free(p);
}

BX_API void bobox_free_aligned_sized(void *p, size_t alignment, size_t size) {
    (void)alignment; /* free finds it from the address */
    if (BX_UNLIKELY(bx_options.check) && p)
        bx_free_sized_checked(p, size, "free_aligned_sized()");
    else
        bobox_free(p);
}

BX_API size_t bobox_malloc_usable_size(void *p) {
    /* A plain live small object, of any heap: the classifier's rule for another heap's object,
     * without the general lookup (redis asks this a dozen times per request). */
    if (BX_LIKELY(bx_in_small_arena(p))) {
        bx_block_t *blk = bx_block_of(p);
        if (BX_LIKELY(bx_classify_plain_small(bx_tls_fast, blk, p))) return blk->size;
    }
    if (!p) return 0;
    bx_lookup_t r;
    bx_lookup_live(p, "malloc_usable_size()", &r);
    /* Checked: only the requested bytes, so that a program using them all keeps the canary. */
    if (BX_UNLIKELY(bx_options.check)) return bx_checked_verify(&r, p, "malloc_usable_size()");
    return r.usable;
}

BX_API int bobox_owns(const void *p) {
    if (!p) return 0;
    if (BX_UNLIKELY(bx_options.check)) return bx_checked_owns(p);
    bx_lookup_t r;
    bx_classify(p, &r);
    return r.tag != 0;
}

BX_OVERRIDE(free, bobox_free)
BX_OVERRIDE(cfree, bobox_free)
BX_OVERRIDE(__libc_free, bobox_free)
BX_OVERRIDE(free_sized, bobox_free_sized)
BX_OVERRIDE(free_aligned_sized, bobox_free_aligned_sized)
BX_OVERRIDE(malloc_usable_size, bobox_malloc_usable_size)
#ifdef BOBOX_OVERRIDE
/* The C++ base forms of delete: free itself (cxx/cxx.h; an alias is defined beside its
 * target). */
BX_OVERRIDE(_ZdlPv, bobox_free)
BX_OVERRIDE(_ZdlPvSt11align_val_t, bobox_free)
BX_HIDDEN_ALIAS(cxx_own__ZdlPv, bobox_free)
BX_HIDDEN_ALIAS(cxx_own__ZdlPvSt11align_val_t, bobox_free)
#endif
