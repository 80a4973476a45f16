// stress.h - shared helpers of the stress tests (test/stress/*.cpp).
//
// Built like the API tests (test/api/api.h, whose API(f) and a_* wrappers they use):
//   build/test/unit_stress     -DAPI_PREFIXED, linked with libbobox.a: bobox_* names.
//   build/test/preload_stress  plain names under LD_PRELOAD=build/libbobox.so (a subset).
//   build/asan/unit_stress, build/tsan/unit_stress: the sanitizer builds (make asan / tsan).
// Catch2 assertions are not thread-safe: worker threads report through Errors, and the test
// thread REQUIREs after joining them.
#ifndef BOBOX_TEST_STRESS_H
#define BOBOX_TEST_STRESS_H

#include <atomic>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <mutex>
#include <string>

#include "api/api.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define STRESS_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define STRESS_SANITIZED 1
#endif
#endif
#ifndef STRESS_SANITIZED
#define STRESS_SANITIZED 0
#endif

#if defined(__SANITIZE_THREAD__)
#define STRESS_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define STRESS_TSAN 1
#endif
#endif
#ifndef STRESS_TSAN
#define STRESS_TSAN 0
#endif

namespace stress {

using namespace api;

// Sanitized builds run 5-20x slower, and checked mode (BOBOX_CHECK=1, hardening_checked.sh)
// 2-4x with a system call per large object: they do less work for the same coverage of paths.
inline const int kScale = STRESS_SANITIZED || checked_mode() ? 4 : 1;

// bobox_check_heap() of the calling thread: 1 consistent, 0 not, -1 unavailable (preload
// build without the symbol: a failure too).
using check_heap_fn = int (*)(void);
static inline int check_heap() {
#ifdef API_PREFIXED
    return bobox_check_heap();
#else
    static check_heap_fn f = lookup<check_heap_fn>("bobox_check_heap");
    return f ? f() : -1;
#endif
}

static inline void get_stats(struct bobox_stats *s) {
    get_stats_fn f = get_stats_ptr();
    if (f) f(s); else *s = {};
}


// Word-wise patterns (fast enough to cover every byte of multi-megabyte objects).
static inline uint64_t pat_word(uint64_t seed, size_t i) {
    uint64_t x = (seed + 1) * 0x9E3779B97F4A7C15ull ^ (i * 0xD6E8FEB86659FD93ull);
    return x ^ (x >> 29);
}
static inline void sfill(void *p, size_t n, uint64_t seed) {
    unsigned char *b = static_cast<unsigned char *>(p);
    size_t words = n / 8;
    for (size_t i = 0; i < words; i++) {
        uint64_t w = pat_word(seed, i);
        memcpy(b + 8 * i, &w, 8);
    }
    uint64_t w = pat_word(seed, words);
    memcpy(b + 8 * words, &w, n % 8);
    asm volatile("" ::: "memory");
}
// Offset of the first byte that differs from the pattern, or SIZE_MAX.
static inline size_t scheck(const void *p, size_t n, uint64_t seed) {
    asm volatile("" ::: "memory");
    const unsigned char *b = static_cast<const unsigned char *>(p);
    size_t words = n / 8;
    for (size_t i = 0; i < words; i++) {
        uint64_t w = pat_word(seed, i), got;
        memcpy(&got, b + 8 * i, 8);
        if (got != w) {
            for (size_t k = 0; k < 8; k++)
                if (b[8 * i + k] != reinterpret_cast<const unsigned char *>(&w)[k]) return 8 * i + k;
        }
    }
    uint64_t w = pat_word(seed, words);
    for (size_t k = 0; k < n % 8; k++)
        if (b[8 * words + k] != reinterpret_cast<const unsigned char *>(&w)[k]) return 8 * words + k;
    return SIZE_MAX;
}

// Sizes over every range: mostly small, some medium, a few large.
static inline size_t mixed_size(Rng &r, unsigned large_per_mille = 5) {
    size_t k = r.below(1000);
    if (k < 700) return 1 + r.below(256);
    if (k < 900) return 256 + r.below(kSmallMax - 256);
    if (k < 1000 - large_per_mille) return kSmallMax + 1 + r.below(kMediumMax - kSmallMax);
    return kMediumMax + 1 + r.below(2 * MB);
}

static inline double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

} // namespace stress

#endif
