/* chainstack.c - the ring of chain records. */
#include "chainstack.h"
#include "block.h"

bx_chain_t bx_chain_none = {.block = &bx_block_none, .count = 0};

void bx_chainstack_init(bx_chainstack_t *cs, bx_chain_t *ring, uint32_t ring_size) {
    cs->top = &bx_chain_none;
    cs->ring = ring;
    cs->mask = ring_size - 1;
    cs->oldest = 0;
    cs->len = 0;
}

void bx_chainstack_push(bx_chainstack_t *cs, struct bx_block *block, uint32_t count) {
    bx_chain_t *rec = &cs->ring[(cs->oldest + cs->len) & cs->mask];
    rec->block = block;
    rec->count = count;
    cs->len++;
    cs->top = rec;
}

struct bx_block *bx_chainstack_pop(bx_chainstack_t *cs) {
    struct bx_block *block = cs->top->block;
    cs->len--;
    cs->top = cs->len ? &cs->ring[(cs->oldest + cs->len - 1) & cs->mask] : &bx_chain_none;
    return block;
}

struct bx_block *bx_chainstack_drop_oldest(bx_chainstack_t *cs) {
    struct bx_block *block = cs->ring[cs->oldest].block;
    cs->oldest = (cs->oldest + 1) & cs->mask;
    cs->len--;
    if (!cs->len) cs->top = &bx_chain_none;
    return block;
}
