/* keep.h - keep blocks: small objects of other heaps that a thread freed, kept for its own
 * mallocs (they are in this CPU's cache), as tcmalloc's thread caches keep them.
 *
 * A keep block is a block header with no memory of its own and no owner (so it is never
 * taken for a real block): its free list links objects that each stay in their own block.
 * Its objects are listed in an array of the heap's, not through their own memory, so that a
 * write after free over one is never followed (malloc takes them unchecked).
 * One per bin; it stands in the bin's chains like a block, and becomes the bin's top chain
 * with all it holds when the current top chain runs out. Its capacity is the bin's bound
 * and `used` the room left, so a foreign free tests one field. What no chain counts is
 * bounded per heap by a keeper (retention.h), and goes home through the heap's outbox. */
#ifndef BX_KEEP_H
#define BX_KEEP_H

#include "mem/block.h"

struct bx_outbox;

typedef struct bx_keeper {
    size_t uncounted_bytes;   /* kept objects that no chain counts, over all keep blocks */
    size_t limit;             /* most such bytes; 0 while no thread runs the heap */
    struct bx_outbox *outbox; /* kept objects leaving go home through it (remote.h) */
} bx_keeper_t;

static inline bool bx_block_is_keep(const bx_block_t *blk) { return blk->heap == BX_BLOCK_NO_OWNER; }

/* Objects a keep block of `size` holds at most. */
uint32_t bx_keep_capacity(uint32_t size);
/* `slots`: room for bx_keep_capacity(size) pointers, outside any object (the heap's mapping):
 * a write after free cannot reach what lists kept objects. */
void bx_keep_init(bx_block_t *k, uint32_t size, unsigned bin, void **slots);
/* Keeps nothing until the thread's first allocation of the size: a thread that only frees
 * a size keeps none of it. */
static inline bool bx_keep_enabled(const bx_block_t *k) { return k->capacity != 0; }
void bx_keep_enable(bx_block_t *k);
/* A heap adopted by a new thread keeps only the sizes that thread allocates. */
void bx_keep_restart(bx_block_t *k);

static inline bool bx_keep_has_uncounted(const bx_block_t *k) { return bx_block_free_count(k) && !k->chain_refs; }
/* Whether the keeper takes one more object that no chain counts. */
static inline bool bx_keep_room(const bx_keeper_t *kp) { return kp->uncounted_bytes < kp->limit; }
/* For the heap's bound on what all its keeps hold (bounds.h): a size's keep rises and falls
 * between empty and full where a thread frees other threads' objects as fast as it
 * allocates them, holding about half its capacity, so spread over many sizes it held too
 * much (docs/memory-policy.md). bx_keep_close lets k take no more objects than it holds
 * (one if it holds none); its objects stay. */
void bx_keep_close(bx_block_t *k);
/* Gives k its whole capacity back. */
void bx_keep_open(bx_block_t *k);
/* Bytes of the objects k holds. */
static inline size_t bx_keep_held_bytes(const bx_block_t *k) { return (size_t)k->carved * k->size; }

/* Kept objects no chain counts leave the keeper's total: the caller counts them in a chain
 * or sends them home. Returns how many. */
uint32_t bx_keep_uncount(bx_keeper_t *kp, bx_block_t *k);
/* A chain of `count` kept objects is no longer counted: true if the keeper keeps them, false
 * if the caller must send them home. */
bool bx_keep_retain(bx_keeper_t *kp, bx_block_t *k, uint32_t count);
/* Takes n objects off k and sends each to its owner. */
void bx_keep_send_home(bx_keeper_t *kp, bx_block_t *k, uint32_t n);

#endif
