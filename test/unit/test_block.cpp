// The arithmetic free() trusts before writing: which addresses of a 64 KB block are slots
// handed out, and which slot holds an address. Checked for every small size and every
// byte offset of a block against the plain definition (division).
#include <catch2/catch.hpp>
#include <cstddef>
#include <algorithm>
#include <cstdlib>
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
