// realloc of large objects from several threads at once: moving mappings (mremap) must not
// let one thread's object lose its registration to another's (found by bench/realloc).
#include <catch2/catch.hpp>
#include <cstring>
#include <thread>
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
