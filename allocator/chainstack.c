/* chainstack.c - the ring of chain records. */
#include "chainstack.h"
#include "block.h"

#define EMPTY_TOP ((bx_chain_t){.block = &bx_block_none, .count = 0})

void bx_chainstack_init(bx_chainstack_t *cs, bx_chain_t *ring, uint32_t ring_size) {
    cs->top = EMPTY_TOP;
    cs->ring = ring;
    cs->mask = ring_size - 1;
    cs->oldest = 0;
    cs->len = 0;
}

void bx_chainstack_push(bx_chainstack_t *cs, struct bx_block *block, uint32_t count) {
    if (cs->len) cs->ring[(cs->oldest + cs->len - 1) & cs->mask] = cs->top;
    cs->top = (bx_chain_t){.block = block, .count = count};
    cs->len++;
}

struct bx_block *bx_chainstack_pop(bx_chainstack_t *cs) {
    struct bx_block *block = cs->top.block;
    cs->len--;
    cs->top = cs->len ? cs->ring[(cs->oldest + cs->len - 1) & cs->mask] : EMPTY_TOP;
    return block;
}

struct bx_block *bx_chainstack_drop_oldest(bx_chainstack_t *cs) {
    if (cs->len == 1) return bx_chainstack_pop(cs);
    struct bx_block *block = cs->ring[cs->oldest].block;
    cs->oldest = (cs->oldest + 1) & cs->mask;
    cs->len--;
    return block;
}
