/* block.c - formatting small-object blocks. */
#include "mem/block.h"

#include "os/os.h"

bx_block_t bx_block_none = {.heap = BX_BLOCK_NO_OWNER};

static uint32_t div_magic_for(uint32_t size) { return (uint32_t)((((uint64_t)1) << 32) / size + 1); }

void bx_block_init(bx_block_t *b, void *mem, struct bx_heap *heap, struct bx_remote *home, struct bx_bin *owner_bin,
                   unsigned bin, uint32_t size) {
    b->mem = mem;
    b->free = BX_FREE_END;
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
    b->capacity = (uint16_t)bx_block_capacity(size);
    b->chain_refs = 0;
    b->bin = (uint8_t)bin;
    b->list = BX_LIST_NONE;
    b->purged = b->purged_slots = b->purge_seen = 0;
    b->mixed = 0;
}

bool bx_block_check_header(const bx_block_t *b) {
    uint32_t size = b->size;
    if (size < BX_MIN_OBJECT || size > BX_SMALL_MAX || size % BX_ALIGNMENT) return false;
    if (b->capacity != bx_block_capacity(size) || b->div_magic != div_magic_for(size)) return false;
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

void bx_free_object_corrupt(const char *op, const void *obj) {
    bx_fatalf("%s: corrupted free list at %p (block %p): the free object there was written after it was freed", op, obj,
              (const void *)bx_block_of(obj));
}

__attribute__((force_align_arg_pointer)) void bx_block_corrupt(const bx_block_t *b) {
    if (b->free < BX_FREE_END) bx_free_object_corrupt("malloc()", b->mem + b->free);
    bx_fatalf("malloc(): corrupted free list in block %p: a free object was written after it was freed",
              (const void *)b);
}

/* A decoded link of b's list names a free object of b; checked before the object is read. */
static bool listed_ok(const bx_block_t *b, uintptr_t off) {
    return !(off & BX_FREE_LINK_BAD) && bx_block_check_free_object(b, b->mem + off);
}

void bx_block_check_head(const bx_block_t *b, const char *op) {
    if (b->free >= BX_FREE_END) return; /* none listed, or a keep block's */
    const char *obj = b->mem + b->free;
    uintptr_t next = *(const uintptr_t *)obj ^ bx_link_secret;
    if (!listed_ok(b, b->free) || (next != BX_FREE_END && !listed_ok(b, next))) bx_free_object_corrupt(op, obj);
}

bool bx_block_check(const bx_block_t *b) {
    if (!bx_block_check_header(b)) return false;
    if (b->carved != bx_block_slot_limit(b) / bx_block_slot_step(b) * b->size) return false;
    uint32_t listed = 0;
    /* Each offset is checked before the object at it is read. */
    for (uintptr_t off = b->free; off != BX_FREE_END; off = *(const uintptr_t *)(b->mem + off) ^ bx_link_secret)
        if (++listed > b->capacity || !listed_ok(b, off))
            return false;
    /* Objects on their way back from other threads still count as used. */
    uint32_t never_used =
        (uint32_t)((size_t)(bx_block_first(b) + (size_t)b->capacity * b->size - bx_block_bump(b)) / b->size);
    return listed + never_used + b->purged_slots == bx_block_free_count(b);
}

static uint32_t slot_index(const bx_block_t *b, uint32_t off) { return (uint32_t)(((uint64_t)off * b->div_magic) >> 32); }
/* The first slot starting at or after byte `at` of the block. */
static uint32_t first_slot_from(const bx_block_t *b, uint32_t at) { return (at + b->size - 1) / b->size; }
static bool page_purged(uint16_t mask, uint32_t at) { return mask >> (at / BX_PURGE_PAGE) & 1; }

void bx_block_map_list(const bx_block_t *b, uint64_t *map) {
    uint32_t listed = 0;
    if (b->free != BX_FREE_END && !listed_ok(b, b->free)) bx_block_corrupt(b);
    for (uintptr_t off = b->free; off != BX_FREE_END;) {
        uintptr_t next = *(const uintptr_t *)(b->mem + off) ^ bx_link_secret;
        /* Named as malloc names it: the object whose link was written over. */
        if (++listed > b->capacity || (next != BX_FREE_END && !listed_ok(b, next)))
            bx_free_object_corrupt("malloc()", b->mem + off);
        uint32_t i = slot_index(b, (uint32_t)off);
        off = next;
        map[i / 64] |= (uint64_t)1 << (i % 64);
    }
}

size_t bx_block_give_pages(const bx_block_t *b, uint16_t pages) {
    size_t bytes = 0;
    for (uint32_t page = 0; page < BX_PURGE_PAGES;) {
        uint32_t run = 0;
        while (page + run < BX_PURGE_PAGES && pages >> (page + run) & 1) run++;
        if (run) {
            bx_os_purge(b->mem + (size_t)page * BX_PURGE_PAGE, (size_t)run * BX_PURGE_PAGE);
            bytes += (size_t)run * BX_PURGE_PAGE;
        }
        page += run ? run : 1;
    }
    return bytes;
}

size_t bx_block_purge_pages(bx_block_t *b) {
    uint32_t free = bx_block_free_count(b);
    if (free == b->purge_seen) return 0;
    b->purge_seen = (uint16_t)free;
    if (bx_os_page_size() != BX_PURGE_PAGE) return 0;
    uint32_t size = b->size, carved = b->carved / size;
    uint64_t listed_map[BX_BLOCK_MAP_WORDS] = {0};
    bx_block_map_list(b, listed_map);
    /* A page goes when every carved slot overlapping it is free: listed, or off the list on a
     * page that went before. It is recorded when a carved slot starts on it (that slot is
     * then listed again by bx_block_unpurge); a page in the middle of a slot holds no link. */
    uint16_t mask = b->purged, loose = 0;
    for (uint32_t page = 0; page < BX_PURGE_PAGES; page++) {
        uint32_t start = page * BX_PURGE_PAGE, end = start + BX_PURGE_PAGE;
        if (mask >> page & 1 || start / size >= carved) continue; /* none of its bytes written */
        uint32_t stop = (end - 1) / size + 1;
        if (stop > carved) stop = carved;
        bool all_free = true;
        for (uint32_t i = start / size; i < stop && all_free; i++)
            all_free = (listed_map[i / 64] >> (i % 64) & 1) || page_purged(b->purged, i * size);
        if (!all_free) continue;
        uint32_t starting = first_slot_from(b, start);
        if (starting < carved && starting * size < end)
            mask = (uint16_t)(mask | 1u << page);
        else
            loose = (uint16_t)(loose | 1u << page);
    }
    uint16_t gone = (uint16_t)((mask & ~b->purged) | loose);
    if (!gone) return 0;
    /* Slots starting on a recorded page past the carved ones are carved now, free and off the
     * list with the others: every slot starting on a recorded page is one to list again. */
    uint32_t top = 0;
    for (uint32_t page = 0; page < BX_PURGE_PAGES; page++)
        if (mask >> page & 1) top = page + 1;
    uint32_t covered = first_slot_from(b, top * BX_PURGE_PAGE);
    if (covered > b->capacity) covered = b->capacity;
    if (covered < carved) covered = carved;
    if (covered > carved) {
        b->carved = covered * size;
        __atomic_store_n(&b->slot_limit, covered * bx_block_slot_step(b), __ATOMIC_RELAXED);
    }
    /* The list anew, in address order, without the slots of the pages going. */
    uintptr_t head = BX_FREE_END;
    uint32_t off_list = 0;
    for (uint32_t i = covered; i-- > 0;) {
        bool was_listed = listed_map[i / 64] >> (i % 64) & 1;
        if (page_purged(mask, i * size)) {
            off_list += was_listed || i >= carved;
            continue;
        }
        if (!was_listed) continue;
        *(uintptr_t *)(b->mem + (size_t)i * size) = head ^ bx_link_secret;
        head = (uintptr_t)i * size;
    }
    b->free = (uint16_t)head;
    b->purged = mask;
    b->purged_slots = (uint16_t)(b->purged_slots + off_list);
    return bx_block_give_pages(b, gone);
}

void bx_block_unpurge(bx_block_t *b) {
    if (!b->purged) return;
    uintptr_t key = bx_block_key(b);
    uint32_t size = b->size, carved = b->carved / size;
    for (uint32_t i = carved; i-- > 0;) {
        if (!page_purged(b->purged, i * size)) continue;
        uintptr_t *obj = (uintptr_t *)(b->mem + (size_t)i * size);
        if (bx_object_keyed(obj, key))
            bx_fatalf("free(): double free of %p: it was freed again after its page was given back", (void *)obj);
        obj[0] = b->free ^ bx_link_secret;
        obj[1] = key;
        b->free = (uint16_t)((uintptr_t)i * size);
    }
    b->purged = b->purged_slots = b->purge_seen = 0;
}

bool bx_block_demote_head(bx_block_t *b, const void *obj) {
    uint32_t off = (uint16_t)(uintptr_t)obj;
    if (b->free != off || off >= BX_FREE_END) return false;
    uintptr_t *head = (uintptr_t *)(b->mem + off);
    uintptr_t next = *head ^ bx_link_secret;
    if (next & BX_FREE_LINK_BAD) return false; /* left for the next malloc to report */
    if (next != BX_FREE_END) {
        uintptr_t *second = (uintptr_t *)(b->mem + next);
        *head = *second; /* the second's link, still mangled */
        *second = off ^ bx_link_secret;
        b->free = (uint16_t)next;
        return true;
    }
    if (b->carved + b->size > (uint32_t)b->capacity * b->size) return false;
    uintptr_t *fresh = (uintptr_t *)bx_block_bump(b);
    b->carved += b->size;
    __atomic_store_n(&b->slot_limit, b->slot_limit + bx_block_slot_step(b), __ATOMIC_RELAXED);
    fresh[0] = off ^ bx_link_secret;
    fresh[1] = bx_block_key(b);
    b->free = (uint16_t)(uintptr_t)fresh;
    return true;
}
