/* superblock.h - 10 MB superblocks and the block allocator per block size (DESIGN §5).
 *
 * A block allocator hands out blocks of one size cut from its superblocks. It takes from
 * the fullest superblock, so nearly empty ones drain and go back: superblocks with free
 * blocks sit in a binary min-heap keyed by free-block count, each remembering its heap
 * position. A superblock that becomes entirely free goes back to its node at once. */
#ifndef BX_SUPERBLOCK_H
#define BX_SUPERBLOCK_H

#include <stddef.h>

#include "mem/block.h"

struct bx_heap;
struct bx_blockalloc;

/* Most blocks a superblock can hold: medium objects of the smallest medium size. */
#define BX_SB_MAX_BLOCKS (BX_SUPERBLOCK_SIZE / (BX_SMALL_MAX + 1) + 1)
#define BX_SB_NOT_IN_HEAP UINT32_MAX

/* A small superblock's first 64 KB chunk is its header and its blocks' descriptors
 * (block.h). A pointer into that chunk maps to descriptor 0, whose owner reads
 * BX_BLOCK_NO_OWNER, so free takes it for no block at all (classify.h); so do the
 * descriptors of blocks never formatted (zero when fresh, that mark when recycled). */
typedef struct bx_superblock {
    struct bx_blockalloc *owner; /* block allocator cutting it, NULL while at the node */
    struct bx_heap *heap;        /* thread heap of that allocator */
    char *first;                 /* first block */
    void *free;                  /* free blocks, linked through their first word (mangled) */
    char *bump;                  /* first block never handed out */
    uint64_t div_magic;          /* (offset * div_magic) >> 48 == offset / block_size */
    uint32_t block_size, capacity;
    uintptr_t free_key;         /* marks this format's aligned and in-transit objects: on
                                  * the first line, which a medium free reads anyway */
    char *touched_end;          /* the end of what any format of it handed out (kept across
                                  * formats: the node recycles superblocks) */
    uint32_t used;
    uint32_t heap_pos;              /* index in owner's min-heap, or BX_SB_NOT_IN_HEAP */
    uint32_t cached;                /* blocks of it waiting in the owner's block cache */
    int node;                       /* NUMA node its memory is bound to */
    unsigned tag;                   /* BX_TAG_SMALL or BX_TAG_MEDIUM while owned */
    struct bx_superblock *next;     /* link in the node's cache */
    uint64_t cached_since_ms;       /* when it entered the node's cache */
    uint8_t live[BX_SB_MAX_BLOCKS]; /* medium objects currently handed out, a byte each */
} bx_superblock_t;
BX_STATIC_ASSERT(sizeof(bx_superblock_t) <= BX_SB_DESCS_OFFSET, "the block descriptors follow the header");

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

/* The index of the block holding p within its superblock. */
static inline uint32_t bx_sb_index(const bx_superblock_t *sb, const void *p) {
    return (uint32_t)(((uint64_t)((const char *)p - sb->first) * sb->div_magic) >> 48);
}
static inline char *bx_sb_block(const bx_superblock_t *sb, uint32_t index) {
    return sb->first + (size_t)index * sb->block_size;
}
/* The block holding p (its start), with its index in *index; NULL if p is in no block. */
static inline char *bx_sb_object(const bx_superblock_t *sb, const void *p, uint32_t *index) {
    if ((const char *)p < sb->first) return NULL;
    uint32_t i = bx_sb_index(sb, p);
    if (i >= sb->capacity) return NULL;
    *index = i;
    return bx_sb_block(sb, i);
}
/* Live flags are bytes, so that the owner sets and clears them with plain stores while
 * another thread's free clears its own object's byte with an atomic exchange: two frees
 * of one medium object are caught even from different threads, with no locked
 * instruction on the owner's path. */
static inline bool bx_sb_live(const bx_superblock_t *sb, uint32_t i) {
    return __atomic_load_n(&sb->live[i], __ATOMIC_RELAXED);
}
static inline void bx_sb_set_live(bx_superblock_t *sb, uint32_t i) {
    __atomic_store_n(&sb->live[i], 1, __ATOMIC_RELAXED);
}
/* Clears the flag; false if it was already clear (a double free). */
static inline bool bx_sb_take_live(bx_superblock_t *sb, uint32_t i, bool owner) {
    if (!owner) return __atomic_exchange_n(&sb->live[i], 0, __ATOMIC_RELAXED);
    if (!bx_sb_live(sb, i)) return false;
    __atomic_store_n(&sb->live[i], 0, __ATOMIC_RELAXED);
    return true;
}

/* Validation (bobox_check_heap, BOBOX_CHECK=1). The header's shape holds for any thread
 * while the superblock is owned; the free list only for the owner. */
bool bx_sb_check_header(const bx_superblock_t *sb);
/* Header, every link of the free list, and the count of free blocks. */
bool bx_sb_check(const bx_superblock_t *sb);
/* Heap order and positions, and every superblock it holds (bx_sb_check). */
bool bx_blockalloc_check(const bx_blockalloc_t *ba);

#endif
