// The samples' pool of large.c: mappings for the profiler's sampled small and medium objects,
// in 64 KB steps, reused newest first, never handed to other large requests, bounded, and
// returned to the OS by a purge.
#include <catch2/catch.hpp>
#include <cerrno>
#include <cstdint>
#include <cstring>
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
// A fresh mapping of `whole` bytes (filled with `fill` if given), freed into the cache, then
// taken by a request of `head`: the head (returned) is live, the rest cached as a mapping of
// its own.
char *cut_head(size_t whole, size_t head, int fill = -1) {
    bool fresh;
    char *big = static_cast<char *>(bx_large_alloc(whole, BX_ALIGNMENT, 0, &fresh));
    REQUIRE(big != nullptr);
    if (fill >= 0) memset(big, fill, whole);
    bx_large_free(header_of(big));
    char *a = static_cast<char *>(bx_large_alloc(head, BX_ALIGNMENT, 0, &fresh));
    REQUIRE(a == big);
    return a;
}
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

TEST_CASE("large: a cached mapping cut for a smaller request leaves its tail for the next, and they merge again", "[large]") {
    bobox_free(bobox_malloc(1)); // start-up
    bx_large_purge(true);
    const size_t MB = size_t(1) << 20, pg = bx_os_page_size();
    bool fresh;
    char *big = static_cast<char *>(bx_large_alloc(40 * MB, BX_ALIGNMENT, 0, &fresh));
    REQUIRE(big != nullptr);
    CHECK(fresh);
    bx_large_free(header_of(big));
    REQUIRE(bx_large_cached_bytes() == 40 * MB + pg);
    // sort's shape: its 64 MB buffer freed, then three of 22 MB. The first takes the head of
    // the cached mapping, the second its tail: no fresh mapping while the cache holds one.
    char *a = static_cast<char *>(bx_large_alloc(15 * MB, BX_ALIGNMENT, 0, &fresh));
    REQUIRE(a == big);
    CHECK(!fresh);
    CHECK(header_of(a)->usable == 15 * MB);
    CHECK(bx_large_cached_bytes() == 25 * MB); // the tail, a mapping of its own
    char *b = static_cast<char *>(bx_large_alloc(15 * MB, BX_ALIGNMENT, 0, &fresh));
    REQUIRE(b == big + 15 * MB + pg);
    CHECK(!fresh);
    CHECK(bx_large_cached_bytes() == 10 * MB - pg);
    memset(a, 1, 15 * MB);
    memset(b, 2, 15 * MB);
    CHECK(a[15 * MB - 1] == 1);
    CHECK(b[0] == 2);
    // A tail of less than a quarter of the request stays with it.
    char *c = static_cast<char *>(bx_large_alloc(9 * MB, BX_ALIGNMENT, 0, &fresh));
    REQUIRE(c == big + 30 * MB + 2 * pg);
    CHECK(header_of(c)->usable == 10 * MB - 2 * pg);
    CHECK(bx_large_cached_bytes() == 0);
    // Freed in any order, the three are one mapping again: a request of 35 MB takes it whole.
    bx_large_free(header_of(b));
    bx_large_free(header_of(c));
    CHECK(bx_large_cached_bytes() == 25 * MB);
    bx_large_free(header_of(a));
    CHECK(bx_large_cached_bytes() == 40 * MB + pg);
    char *d = static_cast<char *>(bx_large_alloc(35 * MB, BX_ALIGNMENT, 0, &fresh));
    REQUIRE(d == big);
    CHECK(!fresh);
    CHECK(header_of(d)->usable == 40 * MB); // 5 MB over: less than a quarter, kept
    CHECK(d[15 * MB - 1] == 1); // the same pages, not fresh ones
    CHECK(d[15 * MB + pg] == 2);
    bx_large_free(header_of(d));
    CHECK(bx_large_purge(true) == 40 * MB + pg);
    CHECK(!mapped(big));
}

TEST_CASE("large: a cut mapping's neighbours given back or moved are no longer merged with", "[large]") {
    bobox_free(bobox_malloc(1));
    bx_large_purge(true);
    const size_t MB = size_t(1) << 20, pg = bx_os_page_size();
    bool fresh;
    // The tail goes back to the OS (a purge): the head's free merges with nothing (reading
    // the tail's header would fault).
    char *a = cut_head(24 * MB, 8 * MB), *big = a;
    CHECK(bx_large_purge(true) == 16 * MB);
    CHECK(!mapped(big + 9 * MB));
    bx_large_free(header_of(a));
    CHECK(bx_large_cached_bytes() == 8 * MB + pg);
    CHECK(bx_large_purge(true) == 8 * MB + pg);
    // The head moves away (realloc, the tail in its way): the tail's free merges with nothing.
    a = big = cut_head(24 * MB, 8 * MB);
    a[0] = 5;
    char *moved = static_cast<char *>(bx_large_realloc(header_of(a), 30 * MB)); // more than both
    REQUIRE(moved != nullptr);
    CHECK(moved != big);
    CHECK(moved[0] == 5);
    CHECK(!mapped(big));
    char *tail = static_cast<char *>(bx_large_alloc(15 * MB, BX_ALIGNMENT, 0, &fresh));
    REQUIRE(tail == big + 8 * MB + pg);
    bx_large_free(header_of(tail));
    CHECK(bx_large_cached_bytes() == 16 * MB);
    bx_large_free(header_of(moved));
    CHECK(bx_large_purge(true) == 16 * MB + 30 * MB + pg);
}

TEST_CASE("large: realloc grows a cut mapping in place over the cached tail above it", "[large]") {
    bobox_free(bobox_malloc(1));
    bx_large_purge(true);
    const size_t MB = size_t(1) << 20, pg = bx_os_page_size();
    char *a = cut_head(24 * MB, 8 * MB, 7);
    CHECK(bx_large_cached_bytes() == 16 * MB);
    // A Python list's buffer growing: in place, the tail's pages (still 7s) now its own.
    char *grown = static_cast<char *>(bx_large_realloc(header_of(a), 12 * MB));
    REQUIRE(grown == a);
    CHECK(header_of(a)->usable == 12 * MB);
    CHECK(a[12 * MB - 1] == 7);
    CHECK(bx_large_cached_bytes() == 12 * MB); // the rest, cut off again
    // Grown to the end, nothing left over.
    grown = static_cast<char *>(bx_large_realloc(header_of(a), 24 * MB - pg));
    REQUIRE(grown == a);
    CHECK(header_of(a)->usable == 24 * MB);
    CHECK(bx_large_cached_bytes() == 0);
    bx_large_free(header_of(a));
    CHECK(bx_large_purge(true) == 24 * MB + pg);
}
