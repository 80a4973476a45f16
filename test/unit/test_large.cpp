// The samples' pool of large.c: mappings for the profiler's sampled small and medium objects,
// in 64 KB steps, reused newest first, never handed to other large requests, bounded, and
// returned to the OS by a purge.
#include <catch2/catch.hpp>
#include <cerrno>
#include <cstdint>
#include <sys/mman.h>
#include <vector>
#include "bobox.h"
extern "C" {
#include "mem/large.h"
#include "os/options.h"
#include "os/os.h"
}

namespace {
bx_large_t *header_of(void *p) { return reinterpret_cast<bx_large_t *>(static_cast<char *>(p) - bx_os_page_size()); }
bool mapped(void *p) { return msync(reinterpret_cast<void *>(reinterpret_cast<uintptr_t>(p) & ~uintptr_t(4095)), 4096, MS_ASYNC) == 0; }
} // namespace

TEST_CASE("large: the samples' pool reuses a sample's mapping for the next sample of its step", "[large][prof]") {
    bobox_free(bobox_malloc(1)); // start-up
    bx_large_purge(true);
    void *a = bx_large_alloc_sample(100, 0);
    REQUIRE(a != nullptr);
    CHECK(header_of(a)->usable == BX_BLOCK_SIZE); // one step
    CHECK(header_of(a)->sample);
    void *b = bx_large_alloc_sample(200 * 1024, 0);
    REQUIRE(b != nullptr);
    CHECK(header_of(b)->usable == 4 * BX_BLOCK_SIZE); // 200 KB: four steps
    static_cast<char *>(b)[200 * 1024 - 1] = 1;
    bx_large_free(header_of(a));
    bx_large_free(header_of(b));
    CHECK(bx_large_cached_bytes() == 5 * BX_BLOCK_SIZE + 2 * bx_os_page_size());
    // Not for other requests: a large malloc of 70 KB would have grown a's mapping.
    bool fresh;
    void *big = bx_large_alloc(70 * 1024, BX_ALIGNMENT, 0, &fresh);
    REQUIRE(big != nullptr);
    CHECK(big != a);
    CHECK(big != b);
    CHECK(!header_of(big)->sample);
    // The next sample of a step gets that step's mapping back, whatever its size within it.
    void *c = bx_large_alloc_sample(65536, 0);
    CHECK(c == a);
    void *d = bx_large_alloc_sample(3 * BX_BLOCK_SIZE + 1, 0);
    CHECK(d == b);
    bx_large_free(header_of(c));
    bx_large_free(header_of(d));
    bx_large_free(header_of(big));
    CHECK(bx_large_purge(true) > 0);
    CHECK(bx_large_cached_bytes() == 0);
    CHECK(!mapped(a));
    CHECK(!mapped(b));
}

TEST_CASE("large: the samples' pool is bounded by a quarter of the cache", "[large][prof]") {
    bobox_free(bobox_malloc(1));
    bx_large_purge(true);
    size_t limit = bx_options.cache_bytes / 4;
    size_t map = BX_BLOCK_SIZE + bx_os_page_size();
    std::vector<void *> samples;
    for (size_t i = 0; i < limit / map + 8; i++) {
        samples.push_back(bx_large_alloc_sample(16, 0));
        REQUIRE(samples.back() != nullptr);
    }
    for (void *p : samples) bx_large_free(header_of(p));
    CHECK(bx_large_cached_bytes() <= limit);
    CHECK(bx_large_cached_bytes() + map > limit);
    CHECK(!mapped(samples.back())); // freed past the bound: unmapped at once
    bx_large_purge(true);
    CHECK(bx_large_cached_bytes() == 0);
}

TEST_CASE("large: a sample grown by realloc leaves the pool's sizes", "[large][prof]") {
    bobox_free(bobox_malloc(1));
    bx_large_purge(true);
    void *a = bx_large_alloc_sample(1000, 0);
    REQUIRE(a != nullptr);
    void *grown = bx_large_realloc(header_of(a), 1 << 20);
    REQUIRE(grown != nullptr);
    CHECK(!header_of(grown)->sample);
    bx_large_free(header_of(grown));
    void *b = bx_large_alloc_sample(1000, 0); // the pool has nothing of this step
    CHECK(b != grown);
    CHECK(header_of(b)->usable == BX_BLOCK_SIZE);
    bx_large_free(header_of(b));
    bx_large_purge(true);
}

TEST_CASE("large: a sample above the medium range is refused with ENOMEM", "[large][prof]") {
    errno = 0;
    CHECK(bx_large_alloc_sample(BX_MEDIUM_MAX + BX_BLOCK_SIZE, 0) == nullptr);
    CHECK(errno == ENOMEM);
}
