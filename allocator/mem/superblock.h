/* superblock.h - the 10 MB superblock's format (DESIGN §5): a header, then blocks of one
 * size, handed out from a free list and then by bump, each medium one with a live flag.
 * Which superblock a block comes from is the block allocator's choice (blockalloc.h).
 *
 * The part no block has reached yet is read-only, so a long overrun past the last block
 * handed out faults at the write, as one past glibc's brk does: the writable frontier
 * advances like brk, in steps of 512 KB, as bump passes it, and stays where it reached
 * when the superblock is cached and formatted again (docs/hardening.md, "The frontier"). */
#ifndef BX_SUPERBLOCK_H
#define BX_SUPERBLOCK_H

#include <stddef.h>

#include "mem/block.h"
#include "mem/pagemap.h"

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
    char *writable_end;         /* the frontier: writes past it fault (kept across formats) */
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

/* The superblock holding a block or object (small or medium) of ours. */
static inline bx_superblock_t *bx_superblock_of(const void *block) {
    return (bx_superblock_t *)bx_span_of(bx_pagemap_get(block));
}

/* Formats sb for blocks of block_size (tag SMALL: 64 KB blocks), cut by allocator `owner`
 * of thread heap `heap`: its free list empty, nothing handed out. */
void bx_sb_format(bx_superblock_t *sb, unsigned tag, uint32_t block_size, struct bx_blockalloc *owner,
                  struct bx_heap *heap);
/* A fresh superblock, writable throughout (and charged): everything past the first step is
 * made read-only (the frontier). */
void bx_sb_seal_fresh(bx_superblock_t *sb);
/* Moves the frontier to the step holding `end` (the end of a block about to be handed out);
 * false if the kernel refused (the block is not handed out). */
bool bx_sb_advance_frontier(bx_superblock_t *sb, const char *end);

/* A free block of sb (sb->used < sb->capacity): the free list's first, checked before it is
 * followed, else the next never handed out; NULL only if the frontier cannot advance. */
static inline void *bx_sb_take_block(bx_superblock_t *sb) {
    void *block = sb->free;
    if (block) {
        /* Checked before it is followed: a medium object starts at its block, so a write
         * after free lands on the link. */
        char *next = (char *)bx_link_get(block);
        if (next && (next < sb->first || next >= sb->bump || bx_sb_block(sb, bx_sb_index(sb, next)) != next))
            bx_fatalf("malloc(): corrupted free list at %p (superblock %p): the free object there was written after "
                      "it was freed",
                      block, (void *)sb);
        sb->free = next;
    } else {
        block = sb->bump;
        char *end = sb->bump + sb->block_size;
        if (BX_UNLIKELY(end > sb->writable_end) && !bx_sb_advance_frontier(sb, end)) return NULL;
        sb->bump = end;
    }
    sb->used++;
    return block;
}
static inline uint32_t bx_sb_free_blocks(const bx_superblock_t *sb) { return sb->capacity - sb->used; }
/* Puts a block of sb back on its free list. */
static inline void bx_sb_put_block(bx_superblock_t *sb, void *block) {
    bx_link_set(block, sb->free);
    sb->free = block;
    sb->used--;
}

/* Validation (bobox_check_heap, BOBOX_CHECK=1). The header's shape holds for any thread
 * while the superblock is owned; the free list only for the owner. */
bool bx_sb_check_header(const bx_superblock_t *sb);
/* Header, every link of the free list, and the count of free blocks. */
bool bx_sb_check(const bx_superblock_t *sb);

#endif
