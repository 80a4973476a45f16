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
    bc->active = 0;
    bc->lock = (bx_lock_t)BX_LOCK_INIT;
}

/* A cached block's first word links the cache, its second names its superblock: no pagemap
 * lookup on the way out. */
static inline bx_superblock_t *cached_sb(void *block) { return ((bx_superblock_t **)block)[1]; }

#define ACTIVE_TICK 1
#define ACTIVE_PASS 2

bool bx_blockcache_would_grow(bx_blockcache_t *bc) {
    /* A cached block: no lock needed to say no (only the owner adds to the cache). */
    if (__atomic_load_n(&bc->head, __ATOMIC_RELAXED)) return false;
    bx_lock(&bc->lock);
    bool grow = !bc->head && (bc->alloc.count == 0 || !bc->alloc.heap[0]->free);
    bx_unlock(&bc->lock);
    return grow;
}

static void *take(bx_blockcache_t *bc, bx_superblock_t **sb_out) {
    bc->active = ACTIVE_TICK | ACTIVE_PASS;
    void *block = bc->head;
    if (!block) return bx_blockalloc_alloc(&bc->alloc, sb_out);
    __atomic_store_n(&bc->head, bx_link_get(block), __ATOMIC_RELAXED);
    bc->count--;
    bx_superblock_t *sb = cached_sb(block);
    if (--sb->cached == 0) bc->represented--;
    if (sb_out) *sb_out = sb;
    return block;
}

void *bx_blockcache_alloc(bx_blockcache_t *bc, bx_superblock_t **sb_out) {
    bx_lock(&bc->lock);
    void *block = take(bc, sb_out);
    bx_unlock(&bc->lock);
    return block;
}

static void give(bx_blockcache_t *bc, bx_superblock_t *sb, void *block) {
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
    __atomic_store_n(&bc->head, block, __ATOMIC_RELAXED);
    bc->count++;
}

void bx_blockcache_free(bx_blockcache_t *bc, bx_superblock_t *sb, void *block) {
    bx_lock(&bc->lock);
    give(bc, sb, block);
    bx_unlock(&bc->lock);
}

static void flush(bx_blockcache_t *bc) {
    while (bc->head) {
        void *block = bc->head;
        __atomic_store_n(&bc->head, bx_link_get(block), __ATOMIC_RELAXED);
        bx_superblock_t *sb = cached_sb(block);
        sb->cached--;
        bx_blockalloc_free(&bc->alloc, sb, block);
    }
    bc->count = bc->represented = 0;
}

void bx_blockcache_flush(bx_blockcache_t *bc) {
    bx_lock(&bc->lock);
    flush(bc);
    bx_unlock(&bc->lock);
}

void bx_blockcache_decay(bx_blockcache_t *bc) {
    bx_lock(&bc->lock);
    if (!(bc->active & ACTIVE_TICK)) flush(bc);
    bc->active &= (uint8_t)~ACTIVE_TICK;
    bx_unlock(&bc->lock);
}

void bx_blockcache_reclaim(bx_blockcache_t *bc) {
    if (!bx_trylock(&bc->lock)) return;
    if (!(bc->active & ACTIVE_PASS)) flush(bc);
    bc->active &= (uint8_t)~ACTIVE_PASS;
    bx_unlock(&bc->lock);
}

bool bx_blockcache_check(bx_blockcache_t *bc) {
    bx_lock(&bc->lock);
    bool ok = bx_blockalloc_check(&bc->alloc);
    bx_unlock(&bc->lock);
    return ok;
}
