/* keep.c - keep blocks and their keeper. */
#include "small/keep.h"

#include "small/remote.h"
#include "base/bounds.h"

uint32_t bx_keep_capacity(uint32_t size) {
    uint32_t limit = (uint32_t)(BX_KEEP_BYTES / size);
    return limit < BX_KEEP_MIN ? BX_KEEP_MIN : limit > BX_KEEP_MAX ? BX_KEEP_MAX : limit;
}

void bx_keep_init(bx_block_t *k, uint32_t size, unsigned bin, void **slots) {
    k->heap = BX_BLOCK_NO_OWNER;
    k->size = size;
    k->bin = (uint8_t)bin;
    k->capacity = k->used = 0;
    k->carved = 0; /* objects held: capacity - used */
    k->list = BX_LIST_QUEUE; /* never on a block list */
    k->free = BX_FREE_KEPT; /* bx_block_pop takes from `kept` */
    k->kept = slots;
}


void bx_keep_enable(bx_block_t *k) {
    if (k->kept) k->capacity = k->used = (uint16_t)bx_keep_capacity(k->size);
}

/* capacity - used stays the number held (`carved`): chains that count them are unchanged. */
static void set_capacity(bx_block_t *k, uint32_t capacity) {
    k->capacity = (uint16_t)capacity;
    k->used = (uint16_t)(capacity - k->carved);
}

void bx_keep_close(bx_block_t *k) {
    /* Never 0: that reads as a size the thread has not allocated yet (bx_keep_enabled). */
    if (bx_keep_enabled(k)) set_capacity(k, k->carved ? k->carved : 1);
}

void bx_keep_open(bx_block_t *k) {
    if (bx_keep_enabled(k)) set_capacity(k, bx_keep_capacity(k->size));
}

void bx_keep_restart(bx_block_t *k) {
    /* No write to a keep never enabled: its bin may be unformatted, its page untouched. */
    if (bx_keep_enabled(k) && !bx_block_free_count(k)) k->capacity = k->used = 0;
}

uint32_t bx_keep_uncount(bx_keeper_t *kp, bx_block_t *k) {
    uint32_t n = bx_block_free_count(k);
    kp->uncounted_bytes -= (size_t)n * k->size;
    return n;
}

bool bx_keep_retain(bx_keeper_t *kp, bx_block_t *k, uint32_t count) {
    if (kp->uncounted_bytes >= kp->limit) return false;
    kp->uncounted_bytes += (size_t)count * k->size;
    return true;
}

void bx_keep_send_home(bx_keeper_t *kp, bx_block_t *k, uint32_t n) {
    while (n--) {
        void *obj = bx_block_pop(k);
        /* Read before the send: the owner may drain the object, empty the block and give it
         * back before the send returns. */
        bx_block_t *blk = bx_block_of(obj);
        bx_remote_t *home = blk->home;
        size_t size = blk->size;
        bx_object_mark_free(obj, bx_block_key(blk)); /* still free: a second free of it must be caught */
        bx_remote_send(kp->outbox, home, obj, size);
    }
}
