/* lookup.h - which live object, if any, a pointer names (free, realloc,
 * malloc_usable_size, bobox_owns, checked mode). Reads only: never writes through p. */
#ifndef BX_LOOKUP_H
#define BX_LOOKUP_H

#include "block.h"
#include "large.h"
#include "pagemap.h"
#include "superblock.h"

/* What free, realloc and malloc_usable_size learn about a pointer. */
typedef struct {
    unsigned tag;      /* 0: not ours */
    void *object;      /* start of the object holding the pointer */
    size_t usable;     /* bytes from the pointer to the object's end */
    bx_block_t *block; /* small */
    bx_superblock_t *sb; uint32_t index; /* medium */
    bx_large_t *large; /* large */
    bool freed;        /* tag 0 because p is in one of our objects that is already free */
} bx_lookup_t;

/* The free key of the block or superblock format holding ours, a small or medium object. */
static inline uintptr_t bx_object_key(const void *ours) {
    uintptr_t entry = bx_pagemap_get(ours);
    if (bx_tag_of(entry) == BX_TAG_MEDIUM) return ((const bx_superblock_t *)bx_span_of(entry))->free_key;
    return bx_block_key(bx_block_of(ours));
}

/* Resolves p into *out without writing through p; tag 0 if p is not a live object's
 * address. Filled in place: a returned struct copied with vector moves stalls on store
 * forwarding (the slow free path, mixed: +10% wall time). */
static inline __attribute__((always_inline)) void bx_lookup(const void *p, bx_lookup_t *out) {
    bx_lookup_t r = {0};
    uintptr_t entry = bx_pagemap_get(p);
    switch (bx_tag_of(entry)) {
    case BX_TAG_SMALL: {
        bx_block_t *blk = bx_block_of(p);
        /* Only fields that stay put while the block holds a live object: other threads
         * read them while the owner works on the block. */
        if (blk->heap == BX_BLOCK_NO_OWNER) break;
        char *obj = bx_block_object(blk, p);
        if (!obj || !bx_block_is_slot(blk, obj)) break;
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

#endif
