// Bin mapping: every size maps to the smallest bin that holds it, with bounded waste.
#include <catch2/catch.hpp>
#include "internals.h"

#include <vector>

TEST_CASE("small bins: round trip and waste at most 7% or one 16-byte step", "[sizeclass]") {
    REQUIRE(BX_SMALL_BINS > 40);
    REQUIRE(bx_small_size[0] == 16);
    REQUIRE(bx_small_size[BX_SMALL_BINS - 1] == BX_SMALL_MAX);
    for (unsigned i = 1; i < BX_SMALL_BINS; i++) {
        REQUIRE(bx_small_size[i] % 16 == 0);
        REQUIRE(bx_small_size[i] > bx_small_size[i - 1]);
    }
    for (size_t n = 0; n <= BX_SMALL_MAX; n++) {
        unsigned bin = bx_small_bin(n);
        REQUIRE(bin < BX_SMALL_BINS);
        size_t size = bx_small_size[bin];
        REQUIRE(size >= n);
        if (bin > 0) REQUIRE(bx_small_size[bin - 1] < n); // the smallest bin that fits
        if (n >= 16) REQUIRE((size - n < 16 || (size - n) * 100 <= 7 * size));
    }
    // Four objects of the largest size fit in a block beside its header.
    REQUIRE(4 * BX_SMALL_MAX <= BX_BLOCK_SIZE);
}

TEST_CASE("medium bins: round trip, 512-byte multiples, 20% apart: waste under 17%", "[sizeclass]") {
    REQUIRE(bx_medium_size[0] > BX_SMALL_MAX);
    REQUIRE(bx_medium_size[BX_MEDIUM_BINS - 1] == BX_MEDIUM_MAX);
    for (size_t n = BX_SMALL_MAX + 1; n <= BX_MEDIUM_MAX; n++) {
        unsigned bin = bx_medium_bin(n);
        REQUIRE(bin < BX_MEDIUM_BINS);
        size_t size = bx_medium_size[bin];
        REQUIRE(size % 512 == 0);
        REQUIRE(size >= n);
        if (bin > 0) REQUIRE(bx_medium_size[bin - 1] < n);
        REQUIRE((size - n) * 100 < 17 * size);
    }
    // 20% apart (less what rounding down to 512 B takes), not 7%: about 20 bins, not 56.
    REQUIRE(BX_MEDIUM_BINS >= 15);
    REQUIRE(BX_MEDIUM_BINS <= 25);
    for (unsigned i = 1; i + 1 < BX_MEDIUM_BINS; i++) REQUIRE(bx_medium_size[i] * 100 >= bx_medium_size[i - 1] * 116);
    // 510 KB does not divide a 10 MB superblock: twenty of them leave room for its header.
    REQUIRE(BX_SUPERBLOCK_SIZE - 20 * BX_MEDIUM_MAX >= 4096);
}

// The tables are constants (scripts/gen/gen-sizeclass.py); the rule, restated: each size is
// max(previous + grain, previous * growth rounded down to the grain), up to the limit.
static std::vector<uint32_t> by_rule(uint32_t first, uint32_t grain, uint32_t limit, uint32_t growth_percent) {
    std::vector<uint32_t> sizes;
    for (uint64_t s = first; s < limit;) {
        sizes.push_back(uint32_t(s));
        uint64_t grown = s * growth_percent / 100 / grain * grain;
        s = grown > s + grain ? grown : s + grain;
    }
    sizes.push_back(limit);
    return sizes;
}

TEST_CASE("the constant tables follow the growth rules", "[sizeclass]") {
    std::vector<uint32_t> small = by_rule(16, 16, BX_SMALL_MAX, 107);
    REQUIRE(small.size() == BX_SMALL_BINS);
    for (unsigned i = 0; i < BX_SMALL_BINS; i++) REQUIRE(bx_small_size[i] == small[i]);
    std::vector<uint32_t> medium;
    for (uint32_t s : by_rule(512, BX_MEDIUM_GRAIN, BX_MEDIUM_MAX, 120))
        if (s > BX_SMALL_MAX) medium.push_back(s);
    REQUIRE(medium.size() == BX_MEDIUM_BINS);
    for (unsigned i = 0; i < BX_MEDIUM_BINS; i++) REQUIRE(bx_medium_size[i] == medium[i]);
}
