// The chain stack against a reference deque under random operations.
#include <catch2/catch.hpp>
#include <algorithm>
#include <deque>
#include <vector>
#include "internals.h"

TEST_CASE("chain stack: push, pop, drop oldest, remove a block match a deque", "[chainstack]") {
    const uint32_t max_chains = 37;
    uint32_t ring_size = bx_chainstack_ring_size(max_chains);
    REQUIRE(ring_size >= max_chains + 1);
    REQUIRE((ring_size & (ring_size - 1)) == 0);
    std::vector<bx_chain_t> ring(ring_size);
    bx_chainstack_t cs;
    bx_chainstack_init(&cs, ring.data(), ring_size);
    std::deque<std::pair<bx_block *, uint32_t>> model;
    std::mt19937 rng(42);
    for (int step = 0; step < 200000; step++) {
        int op = rng() % 5;
        // Few distinct blocks: several records name the same one, as in a bin.
        auto *blk = reinterpret_cast<bx_block *>(uintptr_t(rng() % 12 + 1) << 16);
        if (op <= 1 && model.size() <= max_chains) {
            uint32_t count = rng() % 100 + 1;
            bx_chainstack_push(&cs, blk, count);
            model.emplace_back(blk, count);
        } else if (op == 2 && !model.empty()) {
            REQUIRE(bx_chainstack_pop(&cs) == model.back().first);
            model.pop_back();
        } else if (op == 3 && !model.empty()) {
            REQUIRE(bx_chainstack_drop_oldest(&cs) == model.front().first);
            model.pop_front();
        } else if (op == 4) {
            auto named = [&](const std::pair<bx_block *, uint32_t> &rec) { return rec.first == blk; };
            uint32_t expected = uint32_t(std::count_if(model.begin(), model.end(), named));
            REQUIRE(bx_chainstack_remove_block(&cs, blk) == expected);
            model.erase(std::remove_if(model.begin(), model.end(), named), model.end());
        }
        REQUIRE(cs.len == model.size());
        if (model.empty()) {
            // The empty top: the stand-in block, no objects.
            REQUIRE(cs.top.block == &bx_block_none);
            REQUIRE(cs.top.count == 0);
        } else {
            REQUIRE(cs.top.block == model.back().first);
            REQUIRE(cs.top.count == model.back().second);
            for (uint32_t i = 0; i < cs.len; i++) {
                REQUIRE(bx_chainstack_record(&cs, i)->block == model[i].first);
                REQUIRE(bx_chainstack_record(&cs, i)->count == model[i].second);
            }
        }
    }
}
