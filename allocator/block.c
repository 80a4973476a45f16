/* block.c - formatting small-object blocks. */
#define _GNU_SOURCE
#include "block.h"

#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

uintptr_t bx_free_key = 0x5bd1e9955bd1e995u;

void bx_block_init_key(void) {
    uintptr_t key = 0;
    if (syscall(SYS_getrandom, &key, sizeof key, 1 /* GRND_NONBLOCK */) != sizeof key) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        key = ((uintptr_t)&key * 0x9e3779b97f4a7c15u) ^ (uintptr_t)ts.tv_nsec ^ ((uintptr_t)ts.tv_sec << 32);
    }
    /* Odd and above any user-space address: never a valid pointer or a small integer. */
    bx_free_key = key | 0x8000000000000001u;
}

void bx_block_init(bx_block_t *b, struct bx_heap *heap, struct bx_bin *owner_bin, unsigned bin, uint32_t size) {
    b->free = NULL;
    b->bump = bx_block_first(b);
    b->heap = heap;
    b->owner_bin = owner_bin;
    b->prev = b->next = NULL;
    b->size = size;
    /* Exact for offsets below 64 KB: the rounding error stays under 1/size. */
    b->div_magic = (uint32_t)((((uint64_t)1) << 32) / size + 1);
    b->used = 0;
    b->capacity = (uint16_t)((BX_BLOCK_SIZE - BX_BLOCK_HEADER) / size);
    b->chain_refs = 0;
    b->bin = (uint8_t)bin;
    b->list = BX_LIST_NONE;
}
