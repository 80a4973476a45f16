/* classify.h - what an address is to the allocator: the one set of rules that every path
 * that frees, reallocates, sizes or checks a pointer asks before it follows anything.
 *
 * An address is a live small, medium or large object handed out (the start, or the aligned
 * address inside an over-allocated one), or it is not: foreign memory, or memory of ours
 * that holds no live object there (a header, a cached or unformatted block, a freed slot,
 * the inside of an object). The first question is the pagemap's tag of its 64 KB chunk;
 * then only header fields that stay put while the block, superblock or mapping holds a live
 * object are read (other threads read them while the owner works on it), and a chunk that
 * is no formatted block reads as having no owner (superblock.h). Nothing is written through
 * the address. The fast paths of free use the inline predicates below, each the general
 * rule narrowed to the case it serves; anything they reject goes to bx_classify. */
#ifndef BX_CLASSIFY_H
#define BX_CLASSIFY_H

#include "mem/arena.h"
#include "mem/block.h"
#include "mem/large.h"
#include "mem/mixed.h"
#include "mem/pagemap.h"
#include "mem/superblock.h"

/* What free, realloc and malloc_usable_size learn about a pointer. */
typedef struct {
    unsigned tag;      /* 0: not a live object's address */
    void *object;      /* start of the object holding the pointer */
    size_t usable;     /* bytes from the pointer to the object's end */
    bx_block_t *block; /* small */
    bx_superblock_t *sb;
    uint32_t index;    /* medium */
    bx_large_t *large; /* large */
    bool freed;        /* tag 0 because p is in one of our objects that is already free */
} bx_lookup_t;

/* A chunk of a small superblock that is no formatted block: its header, a block free in a
 * cache or in its superblock, or one never formatted (zero or marked, superblock.h). */
static inline bool bx_block_unowned(const bx_block_t *blk) {
    return blk->heap == BX_BLOCK_NO_OWNER || blk->heap == NULL;
}

/* The free key of the block or superblock format holding ours, a small or medium object. */
static inline uintptr_t bx_object_key(const void *ours) {
    uintptr_t entry = bx_pagemap_get(ours);
    if (bx_tag_of(entry) == BX_TAG_MEDIUM) return ((const bx_superblock_t *)bx_span_of(entry))->free_key;
    return bx_block_key(bx_block_of(ours));
}

/* free's fast path, for the owner of blk (blk->heap is the caller's heap): p is a plain live
 * object of it, a carved slot start marked neither free nor aligned. */
static inline bool bx_classify_own_small(const bx_block_t *blk, const void *p) {
    return bx_block_is_own_slot(blk, p) && bx_object_plain_live(p, bx_block_key(blk));
}
/* A plain live object of any heap's formatted small block (free's path for another heap's
 * block, malloc_usable_size). `self` is the caller's fast-path heap: NULL (checked mode, no
 * heap yet) sends every pointer to the general lookup. */
static inline bool bx_classify_plain_small(const void *self, const bx_block_t *blk, const void *p) {
    if (BX_UNLIKELY(!self || bx_block_unowned(blk))) return false;
    return bx_block_is_slot(blk, p) && bx_object_plain_live(p, bx_block_key(blk));
}
/* free's fast path for a medium object of the caller's heap (sb->heap == self, not NULL):
 * p is a block start of sb not marked free or aligned, its index in *index. The caller then
 * takes its live flag (bx_sb_take_live), which tests it. */
static inline bool bx_classify_own_medium(const bx_superblock_t *sb, const void *self, const void *p, uint32_t *index) {
    return self != NULL && sb->heap == self && bx_sb_object(sb, p, index) == p && bx_object_plain_live(p, sb->free_key);
}

/* Resolves p into *out without writing through p; tag 0 if p is not a live object's
 * address. Filled in place: a returned struct copied with vector moves stalls on store
 * forwarding (the slow free path, mixed: +10% wall time). */
static inline __attribute__((always_inline)) void bx_classify(const void *p, bx_lookup_t *out) {
    bx_lookup_t r = {0};
    uintptr_t entry = bx_pagemap_get(p);
    switch (bx_tag_of(entry)) {
    case BX_TAG_SMALL: {
        bx_block_t *blk = bx_block_of(p);
        if (bx_block_unowned(blk)) break;
        char *obj = bx_block_is_mixed(blk) ? NULL : bx_block_object(blk, p);
        if (!obj || !bx_block_is_slot(blk, obj)) {
            if (bx_block_became_mixed(blk) && bx_mixed_lookup(blk, p, &r.object, &r.usable, &r.freed)) {
                r.tag = BX_TAG_SMALL;
                r.block = blk;
            }
            break;
        }
        r.freed = bx_object_is_free(obj, bx_block_key(blk));
        if (r.freed || !bx_object_handed_out(obj, p, bx_block_key(blk))) break;
        r.tag = BX_TAG_SMALL;
        r.block = blk;
        r.object = obj;
        r.usable = blk->size - (size_t)((const char *)p - obj);
        break;
    }
    case BX_TAG_MEDIUM: {
        bx_superblock_t *sb = bx_span_of(entry);
        uint32_t index;
        char *obj = sb->owner ? bx_sb_object(sb, p, &index) : NULL;
        if (!obj) break;
        r.freed = obj == p && !bx_sb_live(sb, index);
        if (!bx_sb_live(sb, index) || !bx_object_handed_out(obj, p, sb->free_key)) break;
        r.tag = BX_TAG_MEDIUM;
        r.sb = sb;
        r.index = index;
        r.object = obj;
        r.usable = sb->block_size - (size_t)((const char *)p - obj);
        break;
    }
    case BX_TAG_LARGE: {
        bx_large_t *l = bx_span_of(entry);
        if (l->user != p) break;
        r.tag = BX_TAG_LARGE;
        r.large = l;
        r.object = l->user;
        r.usable = l->usable;
        break;
    }
    }
    *out = r;
}

/* Where an arbitrary address lies among our objects, for the checks of the program's copies
 * (tools/copycheck.h): the slot of a formatted small block or a medium superblock holding it,
 * live or free, or the large object whose mapping's first 64 KB hold it (its header page
 * included: `start` is then past it; not the chunk's memory before the mapping). tag 0 for anything else: foreign memory, a header, a
 * block not formatted or a slot never handed out, the rest of a large mapping. Reads only
 * what bx_classify reads; never writes. */
typedef struct {
    unsigned tag;
    char *start, *end; /* the slot, or the large object's usable bytes */
    bool freed;
    uintptr_t key; /* small and medium: the format's free key */
} bx_place_t;

static inline void bx_locate(const void *q, bx_place_t *out) {
    uintptr_t entry = bx_pagemap_get(q);
    out->tag = 0;
    switch (bx_tag_of(entry)) {
    case BX_TAG_SMALL: {
        bx_block_t *blk = bx_block_of(q);
        if (bx_block_unowned(blk)) return;
        char *obj = bx_block_is_mixed(blk) ? NULL : bx_block_object(blk, q);
        if (!obj || !bx_block_is_slot(blk, obj)) {
            if (!bx_block_became_mixed(blk) || !bx_mixed_locate(blk, q, &out->start, &out->end)) return;
            out->key = bx_block_key(blk);
            out->freed = false;
            break;
        }
        out->key = bx_block_key(blk);
        out->start = obj;
        out->end = obj + blk->size;
        out->freed = bx_object_is_free(obj, out->key);
        break;
    }
    case BX_TAG_MEDIUM: {
        bx_superblock_t *sb = bx_span_of(entry);
        uint32_t index;
        char *obj = sb->owner ? bx_sb_object(sb, q, &index) : NULL;
        if (!obj) return;
        out->key = sb->free_key;
        out->start = obj;
        out->end = obj + sb->block_size;
        out->freed = !bx_sb_live(sb, index);
        break;
    }
    case BX_TAG_LARGE: {
        bx_large_t *l = bx_span_of(entry);
        /* The chunk may hold the end of other memory before the mapping starts. */
        if ((const char *)q < l->base || (const char *)q >= l->base + l->map_size) return;
        out->key = 0;
        out->start = l->user;
        out->end = l->user + l->usable;
        out->freed = false;
        break;
    }
    default: return;
    }
    out->tag = bx_tag_of(entry);
}

#endif
