/* chainstack.h - the stack of freed objects limited by chains (DESIGN §3, thesis §8.1.1).
 *
 * A chain is a run of consecutive frees into the same block. The stack keeps chain
 * records (block, count) in a fixed ring used as a double-ended queue: new chains are
 * pushed on top, objects are popped from the top chain, and when there are more chains
 * than the bound the oldest record is dropped (its objects stay free in their block).
 * Every operation is O(1). The objects themselves sit in their blocks' free lists.
 *
 * A top chain whose objects are all handed out stays on top, spent (count 0), until the
 * next malloc or a free into another block replaces it: a free into the same block, the
 * queue pattern, lengthens it again instead of starting a chain (bin.h). Every record
 * below the top counts at least one object. */
#ifndef BX_CHAINSTACK_H
#define BX_CHAINSTACK_H

#include "base/common.h"

struct bx_block;

typedef struct bx_chain {
    struct bx_block *block;
    uint32_t count; /* objects at the head of block's free list that belong to this chain */
} bx_chain_t;

/* The newest record is held inline, where both fast paths read and update it in the bin's
 * own cache line (a record in the ring would be one more dependent load per malloc); the
 * ring holds the older ones. When the stack is empty the top names the stand-in block
 * bx_block_none (block.h) with a count of 0: a free compares its block with it, and an
 * allocation sees the count of a spent chain, so neither fast path tests for an empty
 * stack. */
typedef struct bx_chainstack {
    bx_chain_t top;   /* the newest record */
    bx_chain_t *ring; /* mask + 1 slots for the records below the top */
    uint32_t mask;
    uint32_t oldest; /* ring index of the oldest record (when there are two or more) */
    uint32_t len;    /* records held, the top included */
} bx_chainstack_t;

static inline bool bx_chainstack_empty(const bx_chainstack_t *cs) { return cs->len == 0; }
/* Record i of the len held, from 0, the oldest, to len - 1, the top. */
static inline const bx_chain_t *bx_chainstack_record(const bx_chainstack_t *cs, uint32_t i) {
    return i + 1 == cs->len ? &cs->top : &cs->ring[(cs->oldest + i) & cs->mask];
}

/* Records a ring needs to hold up to `max_chains` chains plus the one being pushed. */
static inline uint32_t bx_chainstack_ring_size(uint32_t max_chains) {
    uint32_t n = 1;
    while (n < max_chains + 1) n <<= 1;
    return n;
}

void bx_chainstack_init(bx_chainstack_t *cs, bx_chain_t *ring, uint32_t ring_size);

/* Inline: a program that frees in random order starts or ends a chain on many of its frees
 * and mallocs (callgrind: mixed 1.4% and pipeline 0.6% fewer instructions than calls). */
extern struct bx_block bx_block_none __attribute__((visibility("hidden")));

/* Starts a new chain on top; the caller keeps len below the ring size. */
static inline void bx_chainstack_push(bx_chainstack_t *cs, struct bx_block *block, uint32_t count) {
    if (cs->len) cs->ring[(cs->oldest + cs->len - 1) & cs->mask] = cs->top;
    cs->top.block = block;
    cs->top.count = count;
    cs->len++;
}

/* Puts a new chain in the top record's place (the top's chain is spent). */
static inline void bx_chainstack_replace_top(bx_chainstack_t *cs, struct bx_block *block, uint32_t count) {
    cs->top.block = block;
    cs->top.count = count;
}

/* Removes the top record (its chain is used up); returns its block. */
static inline struct bx_block *bx_chainstack_pop(bx_chainstack_t *cs) {
    struct bx_block *block = cs->top.block;
    cs->len--;
    if (cs->len) {
        cs->top = cs->ring[(cs->oldest + cs->len - 1) & cs->mask];
    } else {
        cs->top.block = &bx_block_none;
        cs->top.count = 0;
    }
    return block;
}

/* Removes every record naming block, keeping the others' order; returns how many went. */
uint32_t bx_chainstack_remove_block(bx_chainstack_t *cs, struct bx_block *block);

/* Removes the oldest record; returns its block. */
static inline struct bx_block *bx_chainstack_drop_oldest(bx_chainstack_t *cs) {
    if (cs->len == 1) return bx_chainstack_pop(cs);
    struct bx_block *block = cs->ring[cs->oldest].block;
    cs->oldest = (cs->oldest + 1) & cs->mask;
    cs->len--;
    return block;
}

#endif
