// realloc of large objects from several threads at once: moving mappings (mremap) must not
// let one thread's object lose its registration to another's (found by bench/realloc).
#include <sys/resource.h>
#include <catch2/catch.hpp>
#include <cstring>
#include <thread>
#include <unistd.h>
#include <vector>
#include "api.h"

TEST_CASE("large reallocs in several threads keep every object valid", "[api][threads][realloc]") {
    constexpr int THREADS = 4, ROUNDS = 30;
    std::vector<std::thread> threads;
    std::vector<int> errors(THREADS, 0);
    for (int t = 0; t < THREADS; t++)
        threads.emplace_back([t, &errors] {
            for (int round = 0; round < ROUNDS; round++) {
                char *p = nullptr;
                size_t size = 0;
                // Grow by doubling from 600 KB to 19 MB, then shrink back down to small.
                for (size_t n = 600 << 10; n <= (19u << 20); n *= 2) {
                    char *q = static_cast<char *>(api::a_realloc(p, n));
                    if (!q || (size && q[size - 1] != char(t + round))) errors[t]++;
                    if (!q) return;
                    memset(q + size, t + round, n - size);
                    p = q;
                    size = n;
                }
                for (size_t n = size / 3; n >= 64; n /= 7) {
                    char *q = static_cast<char *>(api::a_realloc(p, n));
                    if (!q || q[n - 1] != char(t + round) || q[0] != char(t + round)) errors[t]++;
                    if (!q) return;
                    p = q;
                }
                api::a_free(p);
            }
        });
    for (auto &th : threads) th.join();
    for (int t = 0; t < THREADS; t++) REQUIRE(errors[t] == 0);
}

TEST_CASE("a large object grows its own mapping and leaves cached mappings to the next malloc", "[api][realloc]") {
    // Taking a cached mapping to grow into (and unmapping the smaller one) kept the number of
    // mappings below what threads growing vectors side by side need: they mapped and faulted
    // fresh ones again and again (bench/realloc).
    api::get_stats_fn stats = api::get_stats_ptr();
    if (!stats) {
        if (!api::foreign_allowed()) FAIL("bobox_get_stats missing");
        return;
    }
    if (api::checked_mode()) return; // its realloc is always a malloc, a copy and a free
    constexpr size_t SMALLER = 600 << 10, GROWN = 1200 << 10;
    char *cached = static_cast<char *>(api::a_malloc(GROWN));
    char *p = static_cast<char *>(api::a_malloc(SMALLER));
    REQUIRE((cached && p));
    memset(cached, 1, GROWN);
    memset(p, 2, SMALLER);
    api::a_free(cached); // its mapping waits in the large cache
    struct bobox_stats before {}, grown {}, after {};
    stats(&before);
    REQUIRE(before.large_cached_bytes >= GROWN);
    p = static_cast<char *>(api::a_realloc(p, GROWN));
    REQUIRE(p != nullptr);
    REQUIRE((p[0] == 2 && p[SMALLER - 1] == 2));
    memset(p + SMALLER, 3, GROWN - SMALLER);
    stats(&grown);
    REQUIRE(grown.large_cached_bytes == before.large_cached_bytes); // the cache was left alone
    // Grown in place, or moved by the kernel when the next pages were taken (the cached
    // mapping, mapped just above it when this case runs first): the old range is then
    // counted as given back, and nothing else is.
    size_t moved = grown.released_bytes - before.released_bytes;
    size_t old_mapping = SMALLER + static_cast<size_t>(sysconf(_SC_PAGESIZE));
    REQUIRE((moved == 0 || moved == old_mapping));
    char *next = static_cast<char *>(api::a_malloc(SMALLER)); // served from the cache
    REQUIRE(next != nullptr);
    memset(next, 4, SMALLER);
    stats(&after);
    // Nothing was unmapped for it; under a limit on address space, the cached mapping's tail
    // past what it serves (more than a quarter of it) went back.
    struct rlimit as {};
    bool limited = getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY;
    if (limited)
        REQUIRE(after.released_bytes - grown.released_bytes <= GROWN - SMALLER);
    else
        REQUIRE(after.released_bytes == grown.released_bytes);
    REQUIRE(after.large_cached_bytes < before.large_cached_bytes);
    REQUIRE((p[SMALLER - 1] == 2 && p[GROWN - 1] == 3));
    api::a_free(next);
    api::a_free(p);
}

TEST_CASE("realloc past 128 KB moves an object into a mapping of its own, served by a larger freed one", "[api][realloc]") {
    // A vector that doubles through the medium sizes left a freed block of each size resident
    // in that size's superblock, where no larger size could use it (bench realloc: 75 of its
    // 208 MB peak). Grown past 128 KB it now moves into a mapping, which the large cache
    // serves from a freed mapping of up to 8 times the size, and which grows in place.
    api::get_stats_fn stats = api::get_stats_ptr();
    if (!stats) {
        if (!api::foreign_allowed()) FAIL("bobox_get_stats missing");
        return;
    }
    if (api::checked_mode()) return; // its realloc is always a malloc, a copy and a free
    constexpr size_t MEDIUM = 100 << 10, GROWN = 200 << 10, CACHED = 1 << 20, LATER = 600 << 10;
    char *cached = static_cast<char *>(api::a_malloc(CACHED));
    REQUIRE(cached != nullptr);
    memset(cached, 1, CACHED);
    api::a_free(cached); // waits in the large cache
    char *p = static_cast<char *>(api::a_malloc(MEDIUM));
    REQUIRE(p != nullptr);
    for (size_t i = 0; i < MEDIUM; i++) p[i] = static_cast<char>(i * 13);
    struct bobox_stats before {}, grown {};
    stats(&before);
    REQUIRE(before.large_cached_bytes >= CACHED);
    char *q = static_cast<char *>(api::a_realloc(p, GROWN));
    REQUIRE(q != nullptr);
    stats(&grown);
    for (size_t i = 0; i < MEDIUM; i++)
        if (q[i] != static_cast<char>(i * 13)) FAIL("byte " << i << " changed by the move");
    REQUIRE(grown.large_objects == before.large_objects + 1);      // a mapping of its own
    REQUIRE(grown.large_cached_bytes < before.large_cached_bytes); // a cached one, not a fresh one
    memset(q + MEDIUM, 2, GROWN - MEDIUM);
    char *r = static_cast<char *>(api::a_realloc(q, LATER)); // room enough where it is
    REQUIRE(r == q);
    REQUIRE((r[MEDIUM - 1] == static_cast<char>((MEDIUM - 1) * 13) && r[GROWN - 1] == 2));
    api::a_free(r);
}

