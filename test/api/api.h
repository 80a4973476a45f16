// api.h - shared helpers of the API tests (test/api/*.cpp).
//
// The same sources are built twice by the Makefile:
//   build/test/unit_api     -DAPI_PREFIXED, linked with libbobox.a: every call goes to bobox_*.
//   build/test/preload_api  plain names, run under LD_PRELOAD=build/libbobox.so.
// A third, scratch build (not in the Makefile) checks the tests themselves against glibc:
//   g++ -std=c++17 -O2 -pthread -DAPI_ALLOW_FOREIGN -Iinclude -Itest
//       test/api/*.cpp test/catch_main.cpp -o /tmp/api_glibc -ldl
// Only with API_ALLOW_FOREIGN may the bobox-only checks (bobox_owns, bobox stats, free_sized
// from the preload) be skipped; in the two real builds a missing symbol is a hard failure.
//
// Every call goes through API(f), and through the a_* wrappers below, which hide the result
// from the optimiser (GCC knows malloc/calloc/free as builtins and could otherwise fold
// "calloc memory reads as zero" or drop a malloc/free pair in the preload build).
#ifndef BOBOX_TEST_API_H
#define BOBOX_TEST_API_H

#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <mutex>
#include <string>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <cstdlib>
#include <malloc.h>
#include <dlfcn.h>
#include <unistd.h>
#include "bobox.h"

#ifdef API_PREFIXED
#define API(f) bobox_##f
#else
#define API(f) f
#endif

#if defined(API_PREFIXED) && defined(API_ALLOW_FOREIGN)
#error "API_ALLOW_FOREIGN is only for the scratch glibc build (plain names)"
#endif

namespace api {

// Hides a value from the optimiser and acts as a compiler memory barrier.
template <class T> static inline T opaque(T v) {
    asm volatile("" : "+r"(v) : : "memory");
    return v;
}

// BOBOX_CHECK=1: test/system/hardening_checked.sh runs the whole suite in checked mode.
static inline bool checked_mode() {
    const char *s = getenv("BOBOX_CHECK");
    return s && !strcmp(s, "1");
}

static inline void *a_malloc(size_t n) { return opaque(API(malloc)(opaque(n))); }
static inline void a_free(void *p) { API(free)(opaque(p)); asm volatile("" ::: "memory"); }
static inline void *a_calloc(size_t c, size_t n) { return opaque(API(calloc)(opaque(c), n)); }
static inline void *a_realloc(void *p, size_t n) { return opaque(API(realloc)(opaque(p), opaque(n))); }
static inline void *a_reallocarray(void *p, size_t c, size_t n) {
    return opaque(API(reallocarray)(opaque(p), opaque(c), n));
}
static inline int a_posix_memalign(void **out, size_t al, size_t n) {
    int r = API(posix_memalign)(opaque(out), opaque(al), opaque(n));
    asm volatile("" ::: "memory");
    return r;
}
static inline void *a_aligned_alloc(size_t al, size_t n) { return opaque(API(aligned_alloc)(opaque(al), opaque(n))); }
static inline void *a_memalign(size_t al, size_t n) { return opaque(API(memalign)(opaque(al), opaque(n))); }
static inline void *a_valloc(size_t n) { return opaque(API(valloc)(opaque(n))); }
static inline void *a_pvalloc(size_t n) { return opaque(API(pvalloc)(opaque(n))); }
static inline size_t a_usable(void *p) { return opaque(API(malloc_usable_size)(opaque(p))); }
static inline int a_malloc_trim(size_t pad) { return API(malloc_trim)(pad); }
static inline int a_mallopt(int param, int value) { return API(mallopt)(param, value); }
static inline void a_malloc_stats() { API(malloc_stats)(); }

// --- bobox-only entry points -----------------------------------------------------------
// Resolved once. In the preload build they must come from libbobox.so via dlsym.
template <class F> static inline F lookup(const char *name) {
    return reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));
}

using owns_fn = int (*)(const void *);
using free_sized_fn = void (*)(void *, size_t);
using free_aligned_sized_fn = void (*)(void *, size_t, size_t);
using get_stats_fn = void (*)(struct bobox_stats *);
using print_stats_fn = void (*)(int);

static inline owns_fn owns_ptr() {
#ifdef API_PREFIXED
    return &bobox_owns;
#else
    static owns_fn f = lookup<owns_fn>("bobox_owns");
    return f;
#endif
}
static inline free_sized_fn free_sized_ptr() {
#ifdef API_PREFIXED
    return &bobox_free_sized;
#else
    static free_sized_fn f = lookup<free_sized_fn>("free_sized");
    return f;
#endif
}
static inline free_aligned_sized_fn free_aligned_sized_ptr() {
#ifdef API_PREFIXED
    return &bobox_free_aligned_sized;
#else
    static free_aligned_sized_fn f = lookup<free_aligned_sized_fn>("free_aligned_sized");
    return f;
#endif
}
static inline get_stats_fn get_stats_ptr() {
#ifdef API_PREFIXED
    return &bobox_get_stats;
#else
    static get_stats_fn f = lookup<get_stats_fn>("bobox_get_stats");
    return f;
#endif
}
using bobox_ctl_fn = int (*)(const char *, void *, size_t *, void *, size_t);
static inline bobox_ctl_fn bobox_ctl_ptr() {
#ifdef API_PREFIXED
    return &bobox_ctl;
#else
    static bobox_ctl_fn f = lookup<bobox_ctl_fn>("bobox_ctl");
    return f;
#endif
}
static inline print_stats_fn print_stats_ptr() {
#ifdef API_PREFIXED
    return &bobox_print_stats;
#else
    static print_stats_fn f = lookup<print_stats_fn>("bobox_print_stats");
    return f;
#endif
}

// The calling thread's own heap now (bobox_thread_own_heap): tests of what a thread's heap
// does (keeping, draining, adopting) give one to each thread, which would otherwise share its
// CPU's heap until it had made 1,024 calls within 100 ms. A no-op where bobox is absent.
using own_heap_fn = int (*)();
static inline void a_own_heap() {
#ifdef API_PREFIXED
    bobox_thread_own_heap();
#else
    static own_heap_fn f = lookup<own_heap_fn>("bobox_thread_own_heap");
    if (f) f();
#endif
}

// True when the bobox-only checks may be skipped (scratch glibc build without the preload).
static inline bool foreign_allowed() {
#ifdef API_ALLOW_FOREIGN
    return owns_ptr() == nullptr;
#else
    return false;
#endif
}

// bobox_owns(p): 1/0, or -1 when it is unavailable (only possible in the scratch build;
// test_api_preload.cpp fails hard when it is missing in a real build).
static inline int a_owns(const void *p) {
    owns_fn f = owns_ptr();
    return f ? f(opaque(p)) : -1;
}
// free_sized / free_aligned_sized: glibc 2.36 has neither, so the scratch build falls back
// to free(); a missing symbol in a real build is caught by a dedicated test case.
static inline void a_free_sized(void *p, size_t n) {
    free_sized_fn f = free_sized_ptr();
    if (f) f(opaque(p), n); else a_free(p);
    asm volatile("" ::: "memory");
}
static inline void a_free_aligned_sized(void *p, size_t al, size_t n) {
    free_aligned_sized_fn f = free_aligned_sized_ptr();
    if (f) f(opaque(p), al, n); else a_free(p);
    asm volatile("" ::: "memory");
}

// --- patterns ----------------------------------------------------------------------------
static inline uint8_t pat_byte(uint64_t seed, size_t i) {
    return static_cast<uint8_t>((seed * 0x9E3779B97F4A7C15ull >> 56) + i * 131u + (i >> 9) + (i >> 17));
}
// The pattern's 8 bytes from i, a multiple of 8: within them only i * 131 changes (i >> 9 and
// i >> 17 do not), so the lanes add 131 each with no carry between them. Word-wise fill and
// check cost an eighth of the loads and stores, which sanitizer and checked builds instrument.
static inline uint64_t pat_lanes(uint64_t seed, size_t i) {
    const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
    const uint64_t steps = 0x95128F0C89068300ull;  // lane k: 131 * k mod 256, k = 0..7
    uint64_t base = pat_byte(seed, i) * ones;
    return ((base & ~high) + (steps & ~high)) ^ ((base ^ steps) & high);
}
static inline void fill(void *p, size_t n, uint64_t seed) {
    uint8_t *b = static_cast<uint8_t *>(p);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w = pat_lanes(seed, i);
        memcpy(b + i, &w, 8);
    }
    for (; i < n; i++) b[i] = pat_byte(seed, i);
    asm volatile("" ::: "memory");
}
// Index of the first byte that differs from the pattern, or SIZE_MAX when all match.
static inline size_t check(const void *p, size_t n, uint64_t seed) {
    asm volatile("" ::: "memory");
    const uint8_t *b = static_cast<const uint8_t *>(p);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, b + i, 8);
        if (w != pat_lanes(seed, i)) break;  // the byte loop names the first that differs
    }
    for (; i < n; i++)
        if (b[i] != pat_byte(seed, i)) return i;
    return SIZE_MAX;
}
static inline size_t first_nonzero(const void *p, size_t n) {
    asm volatile("" ::: "memory");
    const uint8_t *b = static_cast<const uint8_t *>(p);
    for (size_t i = 0; i < n; i++)
        if (b[i]) return i;
    return SIZE_MAX;
}
static inline bool aligned_to(const void *p, size_t al) {
    return (reinterpret_cast<uintptr_t>(p) & (al - 1)) == 0;
}
static inline size_t page_size() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }
// Resident set size of the process, in bytes (0 when /proc is unreadable).
static inline size_t rss_bytes() {
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return 0;
    unsigned long size = 0, rss = 0;
    if (fscanf(f, "%lu %lu", &size, &rss) != 2) rss = 0;
    fclose(f);
    return rss * page_size();
}

// bobox's mapped bytes (bobox_get_stats, which the caller has checked is there).
static inline size_t mapped_bytes() {
    bobox_stats s;
    get_stats_ptr()(&s);
    return s.mapped_bytes;
}

// Small deterministic PRNG (xorshift64*).
struct Rng {
    uint64_t s;
    explicit Rng(uint64_t seed) : s(seed * 2654435761u + 0x1234567u) {}
    uint64_t next() { s ^= s >> 12; s ^= s << 25; s ^= s >> 27; return s * 2685821657736338717ull; }
    size_t below(size_t n) { return static_cast<size_t>(next() % n); }
};

// Size ranges of the design (for naming sizes in the tests).
constexpr size_t kSmallMax = 16 * 1024;     // small objects up to ~16 KB (64 KB blocks)
constexpr size_t kMediumMax = 522240;       // medium up to 510 KB
constexpr size_t MB = 1024 * 1024;

// Errors found in worker threads (Catch2 assertions are not thread-safe).
struct Errors {
    std::atomic<int> count{0};
    std::mutex mu;
    std::string first;
    void report(const char *fmt, ...) __attribute__((format(printf, 2, 3))) {
        char buf[512];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(buf, sizeof buf, fmt, ap);
        va_end(ap);
        if (count.fetch_add(1) == 0) {
            std::lock_guard<std::mutex> g(mu);
            first = buf;
        }
    }
    std::string summary() {
        std::lock_guard<std::mutex> g(mu);
        return std::to_string(count.load()) + " error(s); first: " + first;
    }
};

} // namespace api

#endif
