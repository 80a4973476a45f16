/* chainstack.c - the ring of chain records. */
#include "small/chainstack.h"
#include "mem/block.h"

void bx_chainstack_init(bx_chainstack_t *cs, bx_chain_t *ring, uint32_t ring_size) {
    cs->top.block = &bx_block_none;
    cs->top.count = 0;
    cs->ring = ring;
    cs->mask = ring_size - 1;
    cs->oldest = 0;
    cs->len = 0;
}
