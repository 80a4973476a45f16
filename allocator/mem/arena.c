/* arena.c - the small superblocks' reservation: slots handed out by bump, given back to a
 * stack. */
#include "mem/arena.h"

#include "base/lock.h"

#define SLOT_BYTES BX_SUPERBLOCK_ALIGN

bx_arena_range_t bx_arena = {.base = (uintptr_t)1 << 63};

static bx_lock_t lock = BX_LOCK_INIT;
static bool reserved; /* tried, once */
static uint32_t next_fresh;               /* slots below it have been handed out */
static uint32_t released[BX_ARENA_SLOTS]; /* slots given back, newest last */
static uint32_t released_count;

void bx_arena_init(void) {
    if (reserved) return;
    reserved = true;
    for (int shift = BX_ARENA_MAX_SHIFT; shift >= BX_ARENA_MIN_SHIFT; shift--) {
        size_t bytes = (size_t)1 << shift;
        void *base = bx_os_reserve_aligned(bytes, SLOT_BYTES);
        if (base) {
            bx_arena.base = (uintptr_t)base;
            bx_arena.bytes = bytes;
            return;
        }
    }
}

/* Called with the lock held. */
static void shrink_locked(void) {
    uintptr_t used = (uintptr_t)next_fresh * SLOT_BYTES, bytes = bx_arena.bytes;
    if (used < bytes) {
        /* Narrowed first: from then on no free reads the slots that go. */
        __atomic_store_n(&bx_arena.bytes, used, __ATOMIC_RELAXED);
        bx_os_unreserve((char *)bx_arena.base + used, bytes - used);
    }
}

void *bx_arena_take(bx_os_place_fn *place, void *arg) {
    if (!bx_arena.bytes) return NULL;
    bx_lock(&lock);
    bool fresh = released_count == 0;
    /* A slot never used costs no address space the limit sees (the reservation counted it):
     * under a limit set since start-up, superblocks come from mappings the limit bounds. */
    if (fresh && next_fresh < bx_arena.bytes / SLOT_BYTES && bx_os_address_space_limited()) shrink_locked();
    uint32_t index = fresh ? next_fresh : released[released_count - 1];
    void *slot = NULL;
    if (index < bx_arena.bytes / SLOT_BYTES) {
        slot = (char *)bx_arena.base + (size_t)index * SLOT_BYTES;
        if (!bx_os_commit(slot, BX_SUPERBLOCK_SIZE, place, arg))
            slot = NULL;
        else if (fresh)
            next_fresh++;
        else
            released_count--;
    }
    bx_unlock(&lock);
    return slot;
}

void bx_arena_release(void *sb) {
    bx_os_decommit(sb, BX_SUPERBLOCK_SIZE);
    bx_lock(&lock);
    released[released_count++] = (uint32_t)(((uintptr_t)sb - bx_arena.base) / SLOT_BYTES);
    bx_unlock(&lock);
}

void bx_arena_shrink(void) {
    if (!bx_os_address_space_limited()) return;
    bx_lock(&lock);
    shrink_locked();
    bx_unlock(&lock);
}

size_t bx_arena_retained_bytes(void) {
    return (size_t)__atomic_load_n(&released_count, __ATOMIC_RELAXED) * BX_SUPERBLOCK_SIZE;
}
size_t bx_arena_unused_bytes(void) {
    bx_lock(&lock);
    size_t used = (size_t)next_fresh * SLOT_BYTES, bytes = bx_arena.bytes;
    bx_unlock(&lock);
    return bytes > used ? bytes - used : 0;
}

void bx_arena_lock(void) { bx_lock(&lock); }
void bx_arena_unlock(void) { bx_unlock(&lock); }
void bx_arena_reset_lock(void) { bx_lock_reset(&lock); }

#ifdef BX_TESTING
bool bx_arena_contains(const void *p) { return bx_in_small_arena(p); }
#endif
