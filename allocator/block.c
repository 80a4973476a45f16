/* block.c - formatting small-object blocks. */
#include "block.h"

void bx_block_init(bx_block_t *b, struct bx_heap *heap, unsigned bin, uint32_t size) {
    b->free = NULL;
    b->bump = bx_block_first(b);
    b->heap = heap;
    b->prev = b->next = NULL;
    b->size = size;
    /* Exact for offsets below 64 KB: the rounding error stays under 1/size. */
    b->div_magic = (uint32_t)((((uint64_t)1) << 32) / size + 1);
    b->used = 0;
    b->capacity = (uint16_t)((BX_BLOCK_SIZE - BX_BLOCK_HEADER) / size);
    b->chain_refs = 0;
    b->bin = (uint8_t)bin;
    b->list = BX_LIST_NONE;
    b->flags = 0;
}
