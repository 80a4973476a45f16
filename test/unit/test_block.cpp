// The arithmetic free() trusts before writing: which addresses of a 64 KB block are slots
// handed out, and which slot holds an address. Checked for every small size and every
// byte offset of a block against the plain definition (division).
#include <catch2/catch.hpp>
#include <cstddef>
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <sys/mman.h>
#include <vector>
#include "internals.h"

namespace {
// Block `which` of the room, formatted for small size class `bin`, owned by the stand-in heap.
bx_block_t *format(BlockRoom &room, unsigned which, unsigned bin) {
    bx_block_t *blk = room.block(which);
    bx_block_init(blk, room.mem(which), fake_heap(), nullptr, nullptr, bin, bx_small_size[bin]);
    return blk;
}
} // namespace

TEST_CASE("block: slot tests agree with division for every size and offset", "[block]") {
    BlockRoom room(1);
    char *mem = room.mem(0);
    bx_block_t *blk = room.block(0);
    char *first = mem;
    size_t mismatches = 0;
    for (unsigned bin = 0; bin < BX_SMALL_BINS; bin++) {
        uint32_t size = bx_small_size[bin];
        bx_block_init(blk, mem, fake_heap(), nullptr, nullptr, bin, size);
        REQUIRE(bx_block_check_header(blk));
        uint32_t capacity = blk->capacity;
        // The free list's end marker is no slot's offset; the slots fill the block otherwise.
        REQUIRE_FALSE((BX_FREE_END % size == 0 && BX_FREE_END / size < capacity));
        REQUIRE(capacity >= BX_BLOCK_SIZE / size - 1);
        // Nothing carved, some carved, all carved; the published limit none, half or all of it.
        for (uint32_t carved_slots : {0u, 1u, capacity / 2, capacity}) {
            for (uint32_t shared_slots : {0u, carved_slots / 2, carved_slots}) {
                blk->carved = carved_slots * size;
                blk->slot_limit = carved_slots * bx_block_slot_step(blk);
                blk->shared_slot_limit = shared_slots * bx_block_slot_step(blk);
                REQUIRE(bx_block_check_header(blk));
                for (uint32_t at = 0; at < BX_BLOCK_SIZE; at++) {
                    const char *p = mem + at;
                    bool in_slots = p >= first;
                    size_t off = in_slots ? (size_t)(p - first) : 0;
                    bool expect_slot = in_slots && off % size == 0 && off < blk->carved;
                    const char *expect_object = in_slots && off / size < capacity ? first + off / size * size : nullptr;
                    if (bx_block_is_slot(blk, p) != expect_slot || bx_block_object(blk, p) != expect_object) mismatches++;
                }
            }
        }
    }
    REQUIRE(mismatches == 0);
}

TEST_CASE("block: objects come from the bump pointer first, then from the free list", "[block]") {
    BlockRoom room(1);
    bx_block_t *blk = format(room, 0, 3);
    uint32_t size = blk->size;
    char *a = static_cast<char *>(bx_block_pop(blk));
    char *b = static_cast<char *>(bx_block_pop(blk));
    REQUIRE(a == bx_block_first(blk));
    REQUIRE(b == a + size);
    REQUIRE(blk->carved == 2 * size);
    REQUIRE(blk->slot_limit == 2 * bx_block_slot_step(blk));
    REQUIRE(bx_block_is_slot(blk, b));
    REQUIRE_FALSE(bx_block_is_slot(blk, b + size)); // never handed out
    bx_block_push(blk, a);
    REQUIRE(bx_object_is_free(a, bx_block_key(blk)));
    REQUIRE(bx_block_check(blk));
    REQUIRE(bx_block_pop(blk) == a); // LIFO
    REQUIRE_FALSE(bx_object_is_free(a, bx_block_key(blk)));
    REQUIRE(blk->used == 2);
}

TEST_CASE("block: the free list is kept as offsets, and a link written over fails the check", "[block]") {
    BlockRoom room(1);
    char *mem = room.mem(0);
    bx_block_t *blk = format(room, 0, 5);
    char *a = static_cast<char *>(bx_block_pop(blk));
    char *b = static_cast<char *>(bx_block_pop(blk));
    bx_block_push(blk, a);
    bx_block_push(blk, b);
    REQUIRE(blk->free == (uint16_t)(b - mem));
    REQUIRE(((*reinterpret_cast<uintptr_t *>(b) ^ bx_link_secret) == (uintptr_t)(a - mem)));
    REQUIRE(bx_block_check(blk));
    // Any byte but byte 1 (which moves the offset within the block) makes it no slot's offset.
    for (int byte : {0, 2, 3, 4, 5, 6, 7}) {
        uintptr_t saved = *reinterpret_cast<uintptr_t *>(b);
        reinterpret_cast<unsigned char *>(b)[byte] ^= 0x5b;
        INFO("byte " << byte);
        REQUIRE(((*reinterpret_cast<uintptr_t *>(b) ^ bx_link_secret) & BX_FREE_LINK_BAD) != 0);
        REQUIRE_FALSE(bx_block_check(blk));
        *reinterpret_cast<uintptr_t *>(b) = saved;
    }
    REQUIRE(bx_block_check(blk));
}

TEST_CASE("block: demoting the head hands out another slot first, and keeps the list whole", "[block]") {
    BlockRoom room(1);
    bx_block_t *blk = format(room, 0, 2);
    uint32_t size = blk->size;
    char *a = static_cast<char *>(bx_block_pop(blk));
    char *b = static_cast<char *>(bx_block_pop(blk));
    // The only one listed: a slot never used goes first.
    bx_block_push(blk, a);
    REQUIRE(bx_block_demote_head(blk, a));
    REQUIRE(bx_block_check(blk));
    char *fresh = static_cast<char *>(bx_block_pop(blk));
    REQUIRE(fresh == b + size);
    REQUIRE(bx_block_pop(blk) == a);
    // With others listed: swapped with the second.
    bx_block_push(blk, fresh);
    bx_block_push(blk, b);
    bx_block_push(blk, a);
    REQUIRE(bx_block_demote_head(blk, a));
    REQUIRE_FALSE(bx_block_demote_head(blk, a)); // no longer the head
    REQUIRE(bx_block_check(blk));
    REQUIRE(bx_block_free_count(blk) == blk->capacity);
    REQUIRE(bx_block_pop(blk) == b);
    REQUIRE(bx_block_pop(blk) == a);
    REQUIRE(bx_block_pop(blk) == fresh);
}

TEST_CASE("block: a free record of one format is not free under the next", "[block]") {
    BlockRoom room(2);
    char *blocks = room.mem(0);
    // Odd (never an aligned pointer) and negative (never a user-space address).
    std::vector<uintptr_t> keys;
    for (int which = 0; which < 2; which++) {
        for (unsigned bin = 0; bin < BX_SMALL_BINS; bin++) keys.push_back(bx_block_key(format(room, which, bin)));
    }
    // Medium formats at two addresses a superblock could have.
    auto *superblock = reinterpret_cast<char *>(((uintptr_t)blocks + (2u << 20)) & ~(uintptr_t)((2u << 20) - 1));
    for (unsigned bin = 0; bin < BX_MEDIUM_BINS; bin++)
        for (char *base : {superblock, superblock + (2u << 20)}) keys.push_back(bx_format_key(base, bx_medium_size[bin]));
    for (uintptr_t key : keys) REQUIRE(((key & 1) == 1 && (intptr_t)key < 0 && key != bx_free_key));
    std::sort(keys.begin(), keys.end());
    REQUIRE(std::adjacent_find(keys.begin(), keys.end()) == keys.end());

    // Every record a 16 B format leaves, at every 16 B offset, read by each later format of
    // this block and by the same format of the next block.
    bx_block_t *blk = format(room, 0, 0), *next = format(room, 1, 0);
    std::vector<void *> objs;
    while (void *o = bx_block_free_count(blk) ? bx_block_pop(blk) : nullptr) objs.push_back(o);
    for (void *o : objs) bx_block_push(blk, o);
    for (void *o : objs) REQUIRE(bx_object_is_free(o, bx_block_key(blk)));
    for (void *o : objs) REQUIRE_FALSE(bx_object_is_free(o, bx_block_key(next)));
    for (unsigned bin = 1; bin < BX_SMALL_BINS; bin++) {
        format(room, 0, bin);
        for (void *o : objs) REQUIRE_FALSE(bx_object_keyed(o, bx_block_key(blk)));
    }
}

TEST_CASE("block: the header fields other threads read first are off the owner's written line", "[block]") {
    // A free from another thread reads the owner, then size, bin and the published slot
    // limit; the owner writes the free list, the counts and the bump pointer on every
    // malloc and free.
    auto line = [](size_t offset) { return offset / 64; };
    size_t owner_line = line(offsetof(bx_block_t, free));
    for (size_t written : {offsetof(bx_block_t, used), offsetof(bx_block_t, carved), offsetof(bx_block_t, slot_limit),
                           offsetof(bx_block_t, chain_refs), offsetof(bx_block_t, prev), offsetof(bx_block_t, next)})
        REQUIRE(line(written) == owner_line);
    for (size_t read : {offsetof(bx_block_t, heap), offsetof(bx_block_t, owner_bin), offsetof(bx_block_t, free_key),
                        offsetof(bx_block_t, size),
                        offsetof(bx_block_t, div_magic), offsetof(bx_block_t, capacity), offsetof(bx_block_t, bin),
                        offsetof(bx_block_t, shared_slot_limit)})
        REQUIRE(line(read) != owner_line);
    REQUIRE(sizeof(bx_block_t) <= BX_BLOCK_DESC);
    REQUIRE(alignof(bx_block_t) == 64);
}

namespace {
bool page_resident(const void *page) {
    unsigned char vec = 0;
    REQUIRE(mincore(const_cast<void *>(page), BX_PURGE_PAGE, &vec) == 0);
    return vec & 1;
}
} // namespace

TEST_CASE("block: pages with no live object go back, their slots come back when the block is reused", "[block]") {
    BlockRoom room(1);
    std::srand(47);
    size_t purged_total = 0;
    for (unsigned bin = 0; bin < BX_SMALL_BINS; bin++) {
        bx_block_t *blk = format(room, 0, bin);
        uint32_t size = blk->size;
        char *mem = bx_block_first(blk);
        // Some slots carved (all, or three quarters: a recorded page may hold fresh ones),
        // then freed in runs so that whole pages go, and a few alone.
        uint32_t carved = bin % 2 ? blk->capacity : blk->capacity * 3 / 4 + 1;
        std::vector<char *> objs;
        for (uint32_t i = 0; i < carved; i++) objs.push_back(static_cast<char *>(bx_block_pop(blk)));
        std::vector<bool> live(carved, true);
        for (uint32_t i = 0; i < carved; i++) {
            bool in_run = (i * size / 8192) % 2 == 1; // every other 8 KB of the block
            if (in_run || std::rand() % 8 == 0) live[i] = false;
        }
        for (uint32_t i = 0; i < carved; i++)
            if (live[i]) std::memset(objs[i], 0x5a, size);
        for (uint32_t i = carved; i-- > 0;)
            if (!live[i]) bx_block_push(blk, objs[i]);
        uint32_t free_before = bx_block_free_count(blk);
        size_t bytes = bx_block_purge_pages(blk);
        INFO("size " << size);
        REQUIRE(bx_block_check(blk));
        REQUIRE(bx_block_free_count(blk) == free_before);
        REQUIRE(bx_block_purge_pages(blk) == 0); // nothing changed since
        purged_total += bytes;
        // Every page given back overlapped no live object, and is no longer resident.
        size_t gone = 0;
        for (uint32_t page = 0; page < BX_PURGE_PAGES; page++) {
            const char *at = mem + (size_t)page * BX_PURGE_PAGE;
            bool resident = page_resident(at);
            bool has_live = false;
            for (uint32_t i = 0; i < carved; i++)
                if (live[i] && objs[i] < at + BX_PURGE_PAGE && objs[i] + size > at) has_live = true;
            if (has_live) REQUIRE(resident);
            if (!resident && !has_live && page * BX_PURGE_PAGE < carved * size) gone++;
        }
        REQUIRE(bytes <= gone * BX_PURGE_PAGE);
        if (size <= 4096) REQUIRE(bytes > 0); // a whole free 8 KB run holds a page
        for (uint32_t i = 0; i < carved; i++)
            if (live[i]) REQUIRE(std::count(objs[i], objs[i] + size, 0x5a) == (long)size);
        // Without the pages' slots, the list hands out only slots on pages still resident.
        if (blk->free != BX_FREE_END) {
            char *p = static_cast<char *>(bx_block_pop(blk));
            REQUIRE(page_resident(reinterpret_cast<char *>((uintptr_t)p & ~(uintptr_t)(BX_PURGE_PAGE - 1))));
            bx_block_push(blk, p);
        }
        // Reused: every free slot once, none of them live.
        bx_block_unpurge(blk);
        REQUIRE(bx_block_check(blk));
        std::vector<char *> got;
        uint32_t n = bx_block_free_count(blk);
        for (uint32_t i = 0; i < n; i++) got.push_back(static_cast<char *>(bx_block_pop(blk)));
        REQUIRE(blk->used == blk->capacity);
        std::sort(got.begin(), got.end());
        REQUIRE(std::adjacent_find(got.begin(), got.end()) == got.end());
        for (uint32_t i = 0; i < carved; i++)
            if (live[i]) REQUIRE_FALSE(std::binary_search(got.begin(), got.end(), objs[i]));
        for (char *p : got) {
            REQUIRE(p >= mem);
            REQUIRE((size_t)(p - mem) % size == 0);
            REQUIRE((size_t)(p - mem) / size < blk->capacity);
        }
    }
    REQUIRE(purged_total > 0);
}

TEST_CASE("block: a second pass gives back the pages that more frees emptied", "[block]") {
    BlockRoom room(1);
    bx_block_t *blk = format(room, 0, 3); // 64 B: 64 slots a page
    uint32_t per_page = BX_PURGE_PAGE / blk->size;
    std::vector<char *> objs;
    for (uint32_t i = 0; i < blk->capacity; i++) objs.push_back(static_cast<char *>(bx_block_pop(blk)));
    for (uint32_t i = 0; i < per_page; i++) bx_block_push(blk, objs[i]); // page 0
    REQUIRE(bx_block_purge_pages(blk) == BX_PURGE_PAGE);
    REQUIRE(blk->purged == 1);
    for (uint32_t i = 3 * per_page; i < 4 * per_page; i++) bx_block_push(blk, objs[i]); // page 3
    bx_block_push(blk, objs[per_page]); // one of page 1: it stays
    REQUIRE(bx_block_purge_pages(blk) == BX_PURGE_PAGE);
    REQUIRE(blk->purged == (1 | 1 << 3));
    REQUIRE(blk->purged_slots == 2 * per_page);
    REQUIRE(bx_block_check(blk));
    REQUIRE(bx_block_pop(blk) == objs[per_page]); // the only listed one
    bx_block_push(blk, objs[per_page]);
    bx_block_unpurge(blk);
    REQUIRE(blk->purged == 0);
    REQUIRE(bx_block_check(blk));
    REQUIRE(bx_block_pop(blk) == objs[0]); // address order
}
