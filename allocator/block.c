/* block.c - formatting small-object blocks. */
#include "block.h"

bx_block_t bx_block_none = {.heap = BX_BLOCK_NO_OWNER};

static uint32_t div_magic_for(uint32_t size) { return (uint32_t)((((uint64_t)1) << 32) / size + 1); }

void bx_block_init(bx_block_t *b, void *mem, struct bx_heap *heap, struct bx_remote *home, struct bx_bin *owner_bin,
                   unsigned bin, uint32_t size) {
    b->mem = mem;
    b->free = NULL;
    b->carved = b->slot_limit = 0;
    b->shared_slot_limit = 0;
    b->heap = heap;
    b->owner_bin = owner_bin;
    b->home = home;
    b->prev = b->next = NULL;
    b->size = size;
    b->div_magic = div_magic_for(size);
    b->free_key = bx_format_key(mem, size); /* the 64 KB-aligned start: base | size is unique */
    b->used = 0;
    b->capacity = (uint16_t)(BX_BLOCK_SIZE / size);
    b->chain_refs = 0;
    b->bin = (uint8_t)bin;
    b->list = BX_LIST_NONE;
}

bool bx_block_check_header(const bx_block_t *b) {
    uint32_t size = b->size;
    if (size < BX_MIN_OBJECT || size > BX_SMALL_MAX || size % BX_ALIGNMENT) return false;
    if (b->capacity != BX_BLOCK_SIZE / size || b->div_magic != div_magic_for(size)) return false;
    if (b->mem != bx_block_mem_of(b->mem) || bx_block_of(b->mem) != b) return false;
    /* Any thread may check: the limits free reads (carved is the owner's). The published one
     * first: it is a past value of the other, which only grows while anyone may check. */
    uint32_t shared = bx_block_shared_slot_limit(b), limit = bx_block_slot_limit(b), step = bx_block_slot_step(b);
    if (!step || limit % step || limit / step > b->capacity || shared % step || shared > limit) return false;
    return b->used <= b->capacity && b->list < BX_LIST_COUNT;
}

bool bx_block_check_free_object(const bx_block_t *b, const void *obj) {
    return bx_block_of(obj) == b && bx_block_is_slot(b, obj) && bx_object_is_free(obj, bx_block_key(b));
}

bool bx_block_check(const bx_block_t *b) {
    if (!bx_block_check_header(b)) return false;
    if (b->carved != bx_block_slot_limit(b) / bx_block_slot_step(b) * b->size) return false;
    uint32_t listed = 0;
    for (const void *obj = b->free; obj; obj = bx_link_get(obj))
        if (++listed > b->capacity || !bx_block_check_free_object(b, obj)) return false;
    /* Objects on their way back from other threads still count as used. */
    uint32_t never_used =
        (uint32_t)((size_t)(bx_block_first(b) + (size_t)b->capacity * b->size - bx_block_bump(b)) / b->size);
    return listed + never_used == bx_block_free_count(b);
}
