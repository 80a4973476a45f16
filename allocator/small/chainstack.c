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

uint32_t bx_chainstack_remove_block(bx_chainstack_t *cs, struct bx_block *block) {
    if (cs->len == 0) return 0;
    uint32_t below = cs->len - 1, kept = 0; /* records in the ring, and those that stay */
    for (uint32_t i = 0; i < below; i++) {
        bx_chain_t rec = cs->ring[(cs->oldest + i) & cs->mask];
        if (rec.block != block) cs->ring[(cs->oldest + kept++) & cs->mask] = rec;
    }
    uint32_t removed = below - kept;
    cs->len = kept + 1;
    if (cs->top.block == block) {
        removed++;
        bx_chainstack_pop(cs); /* the newest kept record becomes the top */
    }
    return removed;
}
