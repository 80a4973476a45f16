/* blockalloc.h - the block allocator per block size (DESIGN §5).
 *
 * A block allocator hands out blocks of one size cut from its superblocks. It takes from
 * the fullest superblock, so nearly empty ones drain and go back: superblocks with free
 * blocks sit in a binary min-heap keyed by free-block count, each remembering its heap
 * position. A superblock that becomes entirely free goes back to its node at once. */
#ifndef BX_BLOCKALLOC_H
#define BX_BLOCKALLOC_H

#include "mem/superblock.h"

typedef struct bx_blockalloc {
    bx_superblock_t **heap; /* min-heap by free blocks */
    uint32_t count, cap;
    uint32_t block_size;
    unsigned tag;
    int node;
    struct bx_heap *owner;
    size_t superblocks; /* superblocks it holds */
} bx_blockalloc_t;

void bx_blockalloc_init(bx_blockalloc_t *ba, struct bx_heap *owner, unsigned tag, uint32_t block_size, int node);
/* A block, or NULL when no superblock can be had (ENOMEM); *sb_out (if not NULL) is set
 * to its superblock. */
void *bx_blockalloc_alloc(bx_blockalloc_t *ba, bx_superblock_t **sb_out);
void bx_blockalloc_free(bx_blockalloc_t *ba, bx_superblock_t *sb, void *block);
#ifdef BX_TESTING
/* Gives the heap array back; the allocator must hold no superblock. */
void bx_blockalloc_destroy(bx_blockalloc_t *ba);
#endif

/* malloc_trim (through bx_blockcache_discard_free): the pages of every free block of its superblocks go back to the OS, all but
 * the first (which holds the free list's link); the superblocks stay. Returns the bytes. */
size_t bx_blockalloc_discard_free(bx_blockalloc_t *ba);

/* Heap order and positions, and every superblock it holds (bx_sb_check). */
bool bx_blockalloc_check(const bx_blockalloc_t *ba);

#endif
