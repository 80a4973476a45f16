// Bin mapping: every size maps to the smallest bin that holds it, with bounded waste.
#include <catch2/catch.hpp>
#include "internals.h"

TEST_CASE("small bins: round trip and waste at most 7% or one 16-byte step", "[sizeclass]") {
    bx_sizeclass_init();
    REQUIRE(bx_small_bins > 40);
    REQUIRE(bx_small_size[0] == 16);
    REQUIRE(bx_small_size[bx_small_bins - 1] == BX_SMALL_MAX);
    for (unsigned i = 1; i < bx_small_bins; i++) {
        REQUIRE(bx_small_size[i] % 16 == 0);
        REQUIRE(bx_small_size[i] > bx_small_size[i - 1]);
    }
    for (size_t n = 0; n <= BX_SMALL_MAX; n++) {
        unsigned bin = bx_small_bin(n);
        REQUIRE(bin < bx_small_bins);
        size_t size = bx_small_size[bin];
        REQUIRE(size >= n);
        if (bin > 0) REQUIRE(bx_small_size[bin - 1] < n); // the smallest bin that fits
        if (n >= 16) REQUIRE((size - n < 16 || (size - n) * 100 <= 7 * size));
    }
    // Four objects of the largest size fit in a block beside its header.
    REQUIRE(4 * BX_SMALL_MAX + BX_BLOCK_HEADER <= BX_BLOCK_SIZE);
}

TEST_CASE("medium bins: round trip, 512-byte multiples, 20% apart: waste under 17%", "[sizeclass]") {
    bx_sizeclass_init();
    REQUIRE(bx_medium_size[0] > BX_SMALL_MAX);
    REQUIRE(bx_medium_size[bx_medium_bins - 1] == BX_MEDIUM_MAX);
    for (size_t n = BX_SMALL_MAX + 1; n <= BX_MEDIUM_MAX; n++) {
        unsigned bin = bx_medium_bin(n);
        REQUIRE(bin < bx_medium_bins);
        size_t size = bx_medium_size[bin];
        REQUIRE(size % 512 == 0);
        REQUIRE(size >= n);
        if (bin > 0) REQUIRE(bx_medium_size[bin - 1] < n);
        REQUIRE((size - n) * 100 < 17 * size);
    }
    // 20% apart (less what rounding down to 512 B takes), not 7%: about 20 bins, not 56.
    REQUIRE(bx_medium_bins >= 15);
    REQUIRE(bx_medium_bins <= 25);
    for (unsigned i = 1; i + 1 < bx_medium_bins; i++) REQUIRE(bx_medium_size[i] * 100 >= bx_medium_size[i - 1] * 116);
    // 510 KB does not divide a 10 MB superblock: twenty of them leave room for its header.
    REQUIRE(BX_SUPERBLOCK_SIZE - 20 * BX_MEDIUM_MAX >= 4096);
}
