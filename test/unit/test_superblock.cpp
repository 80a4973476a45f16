// Block allocators: the min-heap of superblocks, stored positions, the fullest-first rule,
// and entirely free superblocks going back to the node; the cache's superblock bound.
#include <catch2/catch.hpp>
#include <map>
#include <set>
#include <string>
#include <cstdio>
#include <vector>
#include "internals.h"
extern "C" {
#include "mem/arena.h"
#include "mem/pagemap.h"
}

static bx_superblock_t *sb_of(void *block) { return (bx_superblock_t *)bx_span_of(bx_pagemap_get(block)); }

TEST_CASE("block allocator: takes from the fullest superblock; heap order and positions hold", "[superblock]") {
    for (uint32_t block_size : {uint32_t(BX_BLOCK_SIZE), uint32_t(bx_medium_size[bx_medium_bin(256 * 1024)])}) {
        unsigned tag = block_size == BX_BLOCK_SIZE ? BX_TAG_SMALL : BX_TAG_MEDIUM;
        bx_blockalloc_t ba;
        bx_blockalloc_init(&ba, fake_heap(), tag, block_size, 0);
        size_t in_use_before = bx_node_superblocks_in_use();
        std::vector<char *> live;
        std::set<char *> seen;
        std::map<bx_superblock_t *, char *> block_of_sb; // one block each superblock handed out
        std::mt19937 rng(block_size);
        for (int step = 0; step < 6000; step++) {
            if (live.size() < 20 || rng() % 100 < 55) {
                // Expected: a block of the non-full superblock with the fewest free blocks.
                uint32_t min_free = UINT32_MAX;
                for (uint32_t i = 0; i < ba.count; i++)
                    min_free = std::min(min_free, ba.heap[i]->capacity - ba.heap[i]->used);
                char *p = static_cast<char *>(bx_blockalloc_alloc(&ba, nullptr));
                REQUIRE(p != nullptr);
                bx_superblock_t *sb = sb_of(p);
                REQUIRE(sb->block_size == block_size);
                REQUIRE((p - sb->first) % block_size == 0);
                if (min_free != UINT32_MAX) REQUIRE(sb->capacity - (sb->used - 1) == min_free);
                if (tag == BX_TAG_SMALL) REQUIRE((uintptr_t)p % BX_BLOCK_SIZE == 0);
                REQUIRE(seen.insert(p).second);
                block_of_sb.emplace(sb, p);
                live.push_back(p);
            } else {
                size_t i = rng() % live.size();
                char *p = live[i];
                live[i] = live.back();
                live.pop_back();
                seen.erase(p);
                bx_blockalloc_free(&ba, sb_of(p), p);
            }
            REQUIRE(bx_blockalloc_check(&ba));
        }
        REQUIRE(ba.superblocks > 1);
        for (char *p : live) bx_blockalloc_free(&ba, sb_of(p), p);
        // Entirely free superblocks went back to the node at once, and stale blocks are no longer ours.
        REQUIRE(ba.superblocks == 0);
        REQUIRE(ba.count == 0);
        // The reclaimer may hand back another heap's superblock meanwhile (it did under ASan,
        // 8 s into the test): the node's count does not rise, and none of ours is still
        // named in the address map.
        REQUIRE(bx_node_superblocks_in_use() <= in_use_before);
        REQUIRE(block_of_sb.size() > 1);
        for (auto &sb_block : block_of_sb) REQUIRE(bx_pagemap_get(sb_block.second) == 0);
        bx_blockalloc_destroy(&ba);
    }
}

static bool reads_no_owner(const void *p) {
    const bx_block_t *blk = bx_block_of(p);
    return blk->heap == nullptr || blk->heap == BX_BLOCK_NO_OWNER;
}

TEST_CASE("small arena: small superblocks lie in it, nothing else does; inside, what is no block has no owner",
          "[arena]") {
    bx_arena_init(); // this process runs without an address-space limit: the arena is there
    bx_superblock_t *small = bx_node_take(0, BX_TAG_SMALL), *medium = bx_node_take(0, BX_TAG_MEDIUM);
    REQUIRE(small != nullptr);
    REQUIRE(medium != nullptr);
    const char *s = reinterpret_cast<const char *>(small), *m = reinterpret_cast<const char *>(medium);
    for (size_t off = 0; off < BX_SUPERBLOCK_SIZE; off += BX_BLOCK_SIZE / 2) {
        REQUIRE(bx_arena_contains(s + off));
        REQUIRE(!bx_arena_contains(m + off));
        REQUIRE(reads_no_owner(s + off)); // taken, not yet formatted
    }
    REQUIRE(!bx_arena_contains(nullptr));
    REQUIRE(!bx_arena_contains(reinterpret_cast<void *>(~uintptr_t{0} - 4095))); // past 47 bits
    int local = 0;
    REQUIRE(!bx_arena_contains(&local));
    // The rest of its 16 MB slot, and the slots never handed out, read as no block.
    for (size_t off = BX_SUPERBLOCK_SIZE; off < BX_SUPERBLOCK_ALIGN; off += BX_BLOCK_SIZE) {
        REQUIRE(bx_arena_contains(s + off));
        REQUIRE(reads_no_owner(s + off));
    }
    REQUIRE(reads_no_owner(s + 64 * BX_SUPERBLOCK_ALIGN));

    bx_node_give(small);
    bx_node_give(medium);

    // Given back to the OS, a slot reads as zeros, and the arena hands it out again.
    bx_node_purge(true);
    char *sb = reinterpret_cast<char *>(bx_node_take(0, BX_TAG_SMALL));
    REQUIRE(sb != nullptr);
    REQUIRE(bx_arena_contains(sb));
    REQUIRE(sb[BX_BLOCK_SIZE] == 0);
    REQUIRE(sb[BX_SUPERBLOCK_SIZE - 1] == 0);
    bx_node_give(reinterpret_cast<bx_superblock_t *>(sb));
    bx_node_purge(true);
    REQUIRE(reads_no_owner(sb + BX_BLOCK_SIZE));
}

// The permissions /proc/self/maps gives the page holding p ("rw-p", "r--p"), or "" if unmapped.
static std::string permissions_at(const void *p) {
    FILE *maps = fopen("/proc/self/maps", "r");
    char line[512], perms[8] = "";
    uintptr_t lo, hi, at = reinterpret_cast<uintptr_t>(p);
    std::string found;
    while (maps && fgets(line, sizeof line, maps))
        if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3 && at >= lo && at < hi) found = perms;
    if (maps) fclose(maps);
    return found;
}

TEST_CASE("the frontier: a superblock is read-only from 512 KB past its last block handed out", "[superblock]") {
    for (uint32_t block_size : {uint32_t(BX_BLOCK_SIZE), uint32_t(bx_medium_size[bx_medium_bin(256 * 1024)])}) {
        unsigned tag = block_size == BX_BLOCK_SIZE ? BX_TAG_SMALL : BX_TAG_MEDIUM;
        bx_node_purge(true); // no cached superblock: the next one is fresh
        bx_blockalloc_t ba;
        bx_blockalloc_init(&ba, fake_heap(), tag, block_size, 0);
        std::vector<char *> blocks;
        bx_superblock_t *sb = nullptr;
        char *p;
        while ((p = static_cast<char *>(bx_blockalloc_alloc(&ba, &sb))) != nullptr && (blocks.empty() || sb_of(p) == sb_of(blocks[0]))) {
            blocks.push_back(p);
            char *end = p + block_size, *limit = reinterpret_cast<char *>(sb) + BX_SUPERBLOCK_SIZE;
            REQUIRE(permissions_at(end - 1) == "rw-p");
            REQUIRE(sb->writable_end >= end);
            if (sb->writable_end < limit) {
                REQUIRE(sb->writable_end - end < 512 * 1024); // a write 1 MB past the block faults
                REQUIRE(permissions_at(sb->writable_end) == "r--p");
                REQUIRE(permissions_at(limit - 1) == "r--p");
            }
        }
        REQUIRE(p != nullptr); // a second superblock: the first one was cut whole
        blocks.push_back(p);
        bx_superblock_t *first = sb_of(blocks[0]);
        REQUIRE(first->writable_end == reinterpret_cast<char *>(first) + BX_SUPERBLOCK_SIZE);
        REQUIRE(permissions_at(reinterpret_cast<char *>(first) + BX_SUPERBLOCK_SIZE - 1) == "rw-p");
        for (char *b : blocks) bx_blockalloc_free(&ba, sb_of(b), b);
        // Cached and formatted again, a superblock keeps its frontier.
        char *again = static_cast<char *>(bx_blockalloc_alloc(&ba, &sb));
        REQUIRE(again != nullptr);
        REQUIRE((sb->writable_end == reinterpret_cast<char *>(sb) + BX_SUPERBLOCK_SIZE || sb->writable_end - again < 1024 * 1024));
        bx_blockalloc_free(&ba, sb, again);
        bx_blockalloc_destroy(&ba);
    }
}

TEST_CASE("cached block allocator: never holds blocks of more superblocks than its bound", "[blockcache]") {
    uint32_t size = bx_medium_size[BX_MEDIUM_BINS - 1]; // 20 blocks per superblock
    for (uint32_t bound : {1u, 3u}) {
        bx_blockcache_t bc;
        bx_blockcache_init(&bc, fake_heap(), BX_TAG_MEDIUM, size, bound, UINT32_MAX, 0, NULL, 1);
        std::vector<char *> blocks;
        for (int i = 0; i < 20 * 6; i++) blocks.push_back(static_cast<char *>(bx_blockcache_alloc(&bc, nullptr)));
        REQUIRE(bc.alloc.superblocks == 6);
        std::mt19937 rng(bound);
        std::shuffle(blocks.begin(), blocks.end(), rng);
        std::map<bx_superblock_t *, int> cached;
        for (char *p : blocks) {
            bx_blockcache_free(&bc, sb_of(p), p);
            REQUIRE(bc.represented <= bound);
            std::set<bx_superblock_t *> distinct;
            for (void *q = bc.heads[0]; q; q = bx_link_get(q)) distinct.insert(sb_of(q));
            REQUIRE(distinct.size() == bc.represented);
        }
        // Everything not cached went back; the cache kept at most `bound` superblocks alive.
        REQUIRE(bc.alloc.superblocks <= bound);
        REQUIRE(bc.alloc.superblocks == bc.represented);
        // Reuse is LIFO from the cache, before any new superblock, but for the block freed
        // last: not handed straight back (a stale pointer to it would alias the next object).
        REQUIRE(bc.count >= 2);
        void *last = bc.heads[0], *before = bx_link_get(last);
        REQUIRE(bx_blockcache_alloc(&bc, nullptr) == before);
        REQUIRE(bc.heads[0] == last);
        REQUIRE(bx_blockcache_alloc(&bc, nullptr) == last);
        REQUIRE(bc.alloc.superblocks <= bound); // no new superblock
        bx_blockcache_free(&bc, sb_of(last), last);
        bx_blockcache_free(&bc, sb_of(before), before);
        bx_blockcache_flush(&bc, true);
        REQUIRE(bc.alloc.superblocks == 0);
        bx_blockalloc_destroy(&bc.alloc);
    }
}

TEST_CASE("cached medium blocks: a block freed and allocated in turn alternates with one other", "[blockcache]") {
    uint32_t size = bx_medium_size[BX_MEDIUM_BINS - 1];
    bx_blockcache_t bc;
    bx_blockcache_init(&bc, fake_heap(), BX_TAG_MEDIUM, size, 1, UINT32_MAX, 0, NULL, 1);
    void *keep = bx_blockcache_alloc(&bc, nullptr); // keeps the superblock owned throughout
    void *a = bx_blockcache_alloc(&bc, nullptr);
    std::set<void *> seen;
    void *prev = a;
    for (int i = 0; i < 8; i++) {
        bx_blockcache_free(&bc, sb_of(prev), prev);
        void *next = bx_blockcache_alloc(&bc, nullptr);
        REQUIRE(next != prev);
        seen.insert(next);
        prev = next;
    }
    REQUIRE(seen.size() == 2); // two blocks take turns: no fresh block after the first
    bx_blockcache_free(&bc, sb_of(prev), prev);
    bx_blockcache_free(&bc, sb_of(keep), keep);
    bx_blockcache_flush(&bc, true);
    REQUIRE(bc.alloc.superblocks == 0);
    bx_blockalloc_destroy(&bc.alloc);
}

TEST_CASE("cached block allocator: a decay tick flushes only a cache nothing was taken from since the last one", "[blockcache]") {
    uint32_t size = bx_medium_size[BX_MEDIUM_BINS - 1];
    bx_blockcache_t bc;
    bx_blockcache_init(&bc, fake_heap(), BX_TAG_MEDIUM, size, 1, UINT32_MAX, 0, NULL, 1);
    std::vector<char *> blocks;
    for (int i = 0; i < 4; i++) blocks.push_back(static_cast<char *>(bx_blockcache_alloc(&bc, nullptr)));
    for (char *p : blocks) bx_blockcache_free(&bc, sb_of(p), p);
    REQUIRE(bc.count == 4);
    // In use since the last tick: the blocks stay, so the bin's superblock is not handed to the
    // node (and to another bin) only to be replaced by fresh pages.
    bx_blockcache_decay(&bc);
    REQUIRE(bc.count == 4);
    REQUIRE(bc.alloc.superblocks == 1);
    // A whole delay without a take: the next tick gives everything back.
    bx_blockcache_decay(&bc);
    REQUIRE(bc.count == 0);
    REQUIRE(bc.alloc.superblocks == 0);
    // A take re-arms it.
    void *p = bx_blockcache_alloc(&bc, nullptr);
    bx_blockcache_free(&bc, sb_of(p), p);
    bx_blockcache_decay(&bc);
    REQUIRE(bc.count == 1);
    bx_blockcache_flush(&bc, true);
    bx_blockalloc_destroy(&bc.alloc);
}
