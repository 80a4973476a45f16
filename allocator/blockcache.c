/* blockcache.c - the superblock-bounded block cache. */
#include "blockcache.h"

#include "pagemap.h"

bx_superblock_t *bx_superblock_of(const void *block) { return bx_span_of(bx_pagemap_get(block)); }

void bx_blockcache_init(bx_blockcache_t *bc, struct bx_heap *owner, unsigned tag, uint32_t block_size, uint32_t bound,
                        uint32_t max_blocks, int node) {
    bx_blockalloc_init(&bc->alloc, owner, tag, block_size, node);
    bc->head = NULL;
    bc->count = bc->represented = 0;
    bc->bound = bound;
    bc->max_blocks = max_blocks;
    bc->active = false;
}

/* A cached block's first word links the cache, its second names its superblock: no pagemap
 * lookup on the way out. */
static inline bx_superblock_t *cached_sb(void *block) { return ((bx_superblock_t **)block)[1]; }

void *bx_blockcache_alloc(bx_blockcache_t *bc, bx_superblock_t **sb_out) {
    bc->active = true;
    void *block = bc->head;
    if (!block) return bx_blockalloc_alloc(&bc->alloc, sb_out);
    bc->head = bx_link_get(block);
    bc->count--;
    bx_superblock_t *sb = cached_sb(block);
    if (--sb->cached == 0) bc->represented--;
    if (sb_out) *sb_out = sb;
    return block;
}

void bx_blockcache_free(bx_blockcache_t *bc, bx_superblock_t *sb, void *block) {
    if (bc->count >= bc->max_blocks) {
        bx_blockalloc_free(&bc->alloc, sb, block);
        return;
    }
    if (sb->cached == 0) {
        if (bc->represented >= bc->bound) {
            bx_blockalloc_free(&bc->alloc, sb, block);
            return;
        }
        bc->represented++;
    }
    sb->cached++;
    bx_link_set(block, bc->head);
    ((bx_superblock_t **)block)[1] = sb;
    bc->head = block;
    bc->count++;
}

void bx_blockcache_flush(bx_blockcache_t *bc) {
    while (bc->head) {
        void *block = bc->head;
        bc->head = bx_link_get(block);
        bx_superblock_t *sb = cached_sb(block);
        sb->cached--;
        bx_blockalloc_free(&bc->alloc, sb, block);
    }
    bc->count = bc->represented = 0;
}

void bx_blockcache_decay(bx_blockcache_t *bc) {
    if (!bc->active) bx_blockcache_flush(bc);
    bc->active = false;
}
