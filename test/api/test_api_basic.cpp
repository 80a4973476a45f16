// Basic API tests: malloc/free/calloc/realloc/reallocarray/malloc_usable_size, errno rules,
// impossible sizes, calloc zeroing of reused memory, trim/mallinfo2/malloc_info/mallopt/stats.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <thread>
#include <utility>
#include <vector>

#include <sys/mman.h>

#include "api.h"

using namespace api;

namespace {

struct Live {
    void *p;
    size_t req, usable;
    uint64_t seed;
};

// Sizes 0 .. 64 MB: every size up to 1 KB, then a geometric sweep with odd offsets, and the
// boundaries of the three size ranges.
std::vector<size_t> sweep_sizes() {
    std::vector<size_t> v;
    for (size_t s = 0; s <= 1024; s++) v.push_back(s);
    for (size_t s = 1025; s <= 64 * MB; s = s + s / 5 + 13) v.push_back(s);
    const size_t edges[] = {2048, 4096, 8192, 12288, kSmallMax - 1, kSmallMax, kSmallMax + 1,
                            32768, 65535, 65536, 65537, 131072, 262144,
                            kMediumMax - 16, kMediumMax - 1, kMediumMax, kMediumMax + 1,
                            kMediumMax + 4096, 524288, MB, 4 * MB, 16 * MB, 64 * MB - 1, 64 * MB};
    for (size_t e : edges) v.push_back(e);
    return v;
}

std::string describe(const Live &a) {
    char buf[128];
    snprintf(buf, sizeof buf, "object %p request %zu usable %zu", a.p, a.req, a.usable);
    return buf;
}

// Checks every pair of [p, p+usable) ranges for overlap (sort by address).
void check_no_overlap(std::vector<Live> v) {
    std::sort(v.begin(), v.end(), [](const Live &a, const Live &b) { return a.p < b.p; });
    for (size_t i = 1; i < v.size(); i++) {
        const char *end_prev = static_cast<const char *>(v[i - 1].p) + std::max<size_t>(v[i - 1].usable, 1);
        if (end_prev > static_cast<const char *>(v[i].p)) {
            INFO(describe(v[i - 1]) << " overlaps " << describe(v[i]));
            FAIL("live objects overlap");
        }
    }
}

} // namespace

TEST_CASE("malloc: sizes 0..64 MB, alignment, usable size, patterns, no overlap", "[api][malloc]") {
    std::vector<Live> live;
    uint64_t seed = 1;
    for (size_t s : sweep_sizes()) {
        void *p = a_malloc(s);
        INFO("malloc(" << s << ")");
        REQUIRE(p != nullptr);
        REQUIRE(aligned_to(p, 16));
        size_t u = a_usable(p);
        REQUIRE(u >= s);
        if (s == 0) REQUIRE(a_owns(p) != 0);
        fill(p, u, seed);
        live.push_back({p, s, u, seed++});
    }
    check_no_overlap(live);
    for (const Live &l : live) {
        INFO(describe(l));
        REQUIRE(check(l.p, l.usable, l.seed) == SIZE_MAX);
        REQUIRE(a_usable(l.p) == l.usable);
        REQUIRE(a_owns(l.p) != 0);
    }
    for (const Live &l : live) a_free(l.p);
}

TEST_CASE("malloc: many live small and medium objects keep their contents", "[api][malloc]") {
    Rng rng(42);
    std::vector<Live> live;
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 15000; i++) {
            size_t s;
            switch (rng.below(20)) {
            case 0: s = rng.below(kMediumMax / 4) + kSmallMax; break;
            case 1: case 2: case 3: case 4: s = rng.below(kSmallMax) + 1; break;
            default: s = rng.below(512); break;
            }
            void *p = a_malloc(s);
            REQUIRE(p != nullptr);
            REQUIRE(aligned_to(p, 16));
            size_t u = a_usable(p);
            REQUIRE(u >= s);
            uint64_t sd = rng.next();
            fill(p, u, sd);
            live.push_back({p, s, u, sd});
        }
        check_no_overlap(live);
        // free a random half, verifying contents first
        for (size_t i = 0; i < live.size();) {
            if (rng.below(2)) {
                INFO(describe(live[i]));
                REQUIRE(check(live[i].p, live[i].usable, live[i].seed) == SIZE_MAX);
                a_free(live[i].p);
                live[i] = live.back();
                live.pop_back();
            } else {
                i++;
            }
        }
    }
    for (const Live &l : live) {
        INFO(describe(l));
        REQUIRE(check(l.p, l.usable, l.seed) == SIZE_MAX);
        a_free(l.p);
    }
}

TEST_CASE("malloc: a medium size about to touch fresh pages takes a freed block one size up", "[api][malloc]") {
    // glibc has no bins; checked mode reports the requested size as usable.
    if (foreign_allowed() || checked_mode()) return;
    // A thread of its own: bins are per thread, so little is left in them by other tests.
    std::thread([] {
        const size_t size = 40000;
        void *probe = a_malloc(size);
        REQUIRE(probe != nullptr);
        const size_t usable = a_usable(probe);
        void *up = a_malloc(usable + 1); // the next bin
        REQUIRE(up != nullptr);
        const size_t up_usable = a_usable(up);
        REQUIRE(up_usable > usable);
        memset(up, 0x5a, up_usable); // its pages are resident now
        a_free(up);
        // Once the bin of `size` has used its free blocks (at most a few partly used
        // superblocks' worth), its next block would be fresh memory: the freed one is taken.
        std::vector<void *> taken{probe};
        void *borrowed = nullptr;
        for (size_t i = 0; i < 3 * (10 * MB / usable) && !borrowed; i++) {
            void *p = a_malloc(size);
            REQUIRE(p != nullptr);
            taken.push_back(p);
            if (a_usable(p) == up_usable) borrowed = p;
        }
        CHECK(borrowed == up);
        if (borrowed) {
            memset(borrowed, 0x33, size); // the block is the caller's now
            CHECK(a_owns(borrowed));
        }
        for (void *p : taken) a_free(p);
    }).join();
}

TEST_CASE("malloc(0) returns unique non-NULL pointers", "[api][malloc]") {
    std::vector<void *> v;
    for (int i = 0; i < 1000; i++) {
        void *p = a_malloc(0);
        REQUIRE(p != nullptr);
        REQUIRE(aligned_to(p, 16));
        v.push_back(p);
    }
    std::vector<void *> s = v;
    std::sort(s.begin(), s.end());
    REQUIRE(std::adjacent_find(s.begin(), s.end()) == s.end());
    for (void *p : v) a_free(p);
}

TEST_CASE("free(NULL), realloc(NULL, n), realloc(p, 0), malloc_usable_size(NULL)", "[api][realloc]") {
    errno = 0;
    a_free(nullptr);
    REQUIRE(errno == 0);
    REQUIRE(a_usable(nullptr) == 0);

    for (size_t n : {size_t(0), size_t(1), size_t(100), size_t(20000), size_t(600000)}) {
        INFO("realloc(NULL, " << n << ")");
        void *p = a_realloc(nullptr, n);
        REQUIRE(p != nullptr);
        REQUIRE(aligned_to(p, 16));
        REQUIRE(a_usable(p) >= n);
        fill(p, a_usable(p), n);
        REQUIRE(check(p, a_usable(p), n) == SIZE_MAX);
        a_free(p);
    }
    // realloc(p, 0) frees p and returns NULL (glibc behaviour)
    for (size_t n : {size_t(1), size_t(100), size_t(20000), size_t(600000), size_t(5 * MB)}) {
        INFO("realloc(malloc(" << n << "), 0)");
        void *p = a_malloc(n);
        REQUIRE(p != nullptr);
        REQUIRE(a_owns(p) != 0);
        void *q = a_realloc(p, 0);
        REQUIRE(q == nullptr);
        if (!foreign_allowed()) REQUIRE(a_owns(p) == 0);  // it really was freed
    }
}

TEST_CASE("free preserves errno", "[api][errno]") {
    for (size_t n : {size_t(0), size_t(24), size_t(3000), size_t(20000), size_t(300000),
                     size_t(600000), size_t(8 * MB), size_t(64 * MB)}) {
        INFO("size " << n);
        void *p = a_malloc(n);
        REQUIRE(p != nullptr);
        fill(p, n, 7);
        errno = 12345;
        a_free(p);
        REQUIRE(errno == 12345);
        errno = EBADF;
        a_free(nullptr);
        REQUIRE(errno == EBADF);
    }
    // many frees of one size class (may trigger block release paths)
    std::vector<void *> v;
    for (int i = 0; i < 5000; i++) v.push_back(a_malloc(4000));
    for (void *p : v) {
        errno = 777;
        a_free(p);
        REQUIRE(errno == 777);
    }
}

TEST_CASE("bobox_owns: live, freed, interior and foreign pointers", "[api][owns]") {
    if (foreign_allowed()) { WARN("scratch glibc build: bobox_owns unavailable"); return; }
    for (size_t n : {size_t(0), size_t(16), size_t(1000), size_t(16384), size_t(100000),
                     size_t(522240), size_t(600000), size_t(10 * MB)}) {
        INFO("size " << n);
        char *p = static_cast<char *>(a_malloc(n));
        REQUIRE(p != nullptr);
        REQUIRE(a_owns(p) == 1);
        if (n >= 64) REQUIRE(a_owns(p + 32) == 0);  // not the start of an object
        a_free(p);
        REQUIRE(a_owns(p) == 0);
    }
    int on_stack = 0;
    static int in_data = 0;
    REQUIRE(a_owns(nullptr) == 0);
    REQUIRE(a_owns(&on_stack) == 0);
    REQUIRE(a_owns(&in_data) == 0);
    REQUIRE(a_owns(reinterpret_cast<void *>(uintptr_t(0x1000))) == 0);
#ifdef API_PREFIXED
    // the test binary's own malloc is glibc's: not ours
    void *g = malloc(100);
    REQUIRE(a_owns(g) == 0);
    free(g);
#endif
}

TEST_CASE("realloc preserves contents across small/medium/large, grow and shrink", "[api][realloc]") {
    const size_t sizes[] = {1, 24, 100, 1000, 8000, kSmallMax, kSmallMax + 1, 20000, 65536, 100000,
                            kMediumMax - 1, kMediumMax, kMediumMax + 1, 600000, MB, 8 * MB, 32 * MB};
    uint64_t seed = 100;
    for (size_t a : sizes) {
        for (size_t b : sizes) {
            if (a == b) continue;
            INFO("realloc " << a << " -> " << b);
            void *p = a_malloc(a);
            REQUIRE(p != nullptr);
            fill(p, a, seed);
            void *q = a_realloc(p, b);
            REQUIRE(q != nullptr);
            REQUIRE(aligned_to(q, 16));
            REQUIRE(check(q, std::min(a, b), seed) == SIZE_MAX);
            size_t u = a_usable(q);
            REQUIRE(u >= b);
            fill(q, u, seed + 1);
            REQUIRE(check(q, u, seed + 1) == SIZE_MAX);
            a_free(q);
            seed += 2;
        }
    }
}

TEST_CASE("realloc chain 1 B -> 64 MB -> 1 B keeps the prefix", "[api][realloc]") {
    // A neighbour keeps the heap from being trivially empty.
    void *guard = a_malloc(5000);
    fill(guard, 5000, 9);
    size_t n = 1;
    void *p = a_malloc(n);
    fill(p, n, 77);
    std::vector<size_t> steps;
    for (size_t s = 2; s <= 64 * MB; s = s * 3 / 2 + 1) steps.push_back(s);
    for (size_t s : steps) {   // grow
        INFO("grow " << n << " -> " << s);
        void *q = a_realloc(p, s);
        REQUIRE(q != nullptr);
        REQUIRE(check(q, n, 77) == SIZE_MAX);
        fill(q, s, 77);
        p = q;
        n = s;
    }
    std::reverse(steps.begin(), steps.end());
    for (size_t s : steps) {   // shrink, including large -> small
        INFO("shrink " << n << " -> " << s);
        void *q = a_realloc(p, s);
        REQUIRE(q != nullptr);
        REQUIRE(a_usable(q) >= s);
        REQUIRE(check(q, s, 77) == SIZE_MAX);
        p = q;
        n = s;
    }
    void *q = a_realloc(p, 1);
    REQUIRE(q != nullptr);
    REQUIRE(check(q, 1, 77) == SIZE_MAX);
    a_free(q);
    REQUIRE(check(guard, 5000, 9) == SIZE_MAX);
    a_free(guard);
}

TEST_CASE("realloc to the same/smaller size in place and many small reallocs", "[api][realloc]") {
    Rng rng(5);
    std::vector<Live> live(500);
    for (auto &l : live) {
        l.req = rng.below(300);
        l.p = a_malloc(l.req);
        l.seed = rng.next();
        fill(l.p, l.req, l.seed);
    }
    for (int it = 0; it < 20000; it++) {
        Live &l = live[rng.below(live.size())];
        size_t nn = rng.below(8) == 0 ? rng.below(700000) : rng.below(3000);
        void *q = a_realloc(l.p, nn);
        if (nn == 0) {
            // realloc(p, 0) frees (glibc); start over with a fresh object
            REQUIRE(q == nullptr);
            l.p = a_malloc(0);
            l.req = 0;
            continue;
        }
        REQUIRE(q != nullptr);
        INFO("realloc " << l.req << " -> " << nn);
        REQUIRE(check(q, std::min(l.req, nn), l.seed) == SIZE_MAX);
        l.p = q;
        l.req = nn;
        l.seed = rng.next();
        fill(q, nn, l.seed);
    }
    for (auto &l : live) {
        REQUIRE(check(l.p, l.req, l.seed) == SIZE_MAX);
        a_free(l.p);
    }
}

// Appending in small steps moves the object at most every ~25% of growth, not at every
// size class (7% apart): about 25 moves from 64 B to 16 KB instead of about 80, and 14
// from 20 KB to 400 KB instead of 44. Contents survive every move.
TEST_CASE("realloc growing by small steps moves the object rarely", "[api][realloc]") {
    struct Range { size_t from, to, step; unsigned max_moves; };
    for (Range range : {Range{64, 16384, 16, 32}, Range{20000, 400000, 512, 20}}) {
        INFO("growing " << range.from << " -> " << range.to << " by " << range.step);
        unsigned char *p = static_cast<unsigned char *>(a_malloc(range.from));
        REQUIRE(p != nullptr);
        for (size_t i = 0; i < range.from; i++) p[i] = (unsigned char)(i * 7);
        unsigned moves = 0;
        for (size_t n = range.from + range.step; n <= range.to; n += range.step) {
            unsigned char *q = static_cast<unsigned char *>(a_realloc(p, n));
            REQUIRE(q != nullptr);
            if (q != p) {
                moves++;
                for (size_t i = 0; i < n - range.step; i++)
                    if (q[i] != (unsigned char)(i * 7)) FAIL("byte " << i << " changed by a move");
            }
            for (size_t i = n - range.step; i < n; i++) q[i] = (unsigned char)(i * 7);
            p = q;
        }
        a_free(p);
#ifndef API_ALLOW_FOREIGN
        if (!checked_mode()) CHECK(moves <= range.max_moves); // checked realloc always moves
#endif
        CHECK(moves > 0);
    }
}

// A stale pointer to the object realloc moved away from must not alias the next object of its
// size: the old slot is not the next one handed out, whether the thread's recent frees of the
// size (its front cache) are waiting or not.
TEST_CASE("realloc's old slot is not the next object of its size", "[api][realloc][front]") {
    for (size_t size : {16, 100, 1000, 4000, 16000}) {
        for (int freed_before : {0, 1, 40}) {
            INFO(size << " B, " << freed_before << " freed just before");
            std::vector<void *> others;
            for (int i = 0; i < freed_before; i++) others.push_back(a_malloc(size));
            void *p = a_malloc(size);
            REQUIRE(p != nullptr);
            memset(p, 0x33, size);
            for (void *o : others) a_free(o);
            void *q = a_realloc(p, size * 3 + 20000); // another size class: it moves
            REQUIRE(q != nullptr);
            void *next = a_malloc(size);
            CHECK(next != p);
            a_free(next);
            a_free(q);
        }
    }
}

TEST_CASE("sizes up to PTRDIFF_MAX between aligned allocations keep malloc's countdown in range", "[api][enomem]") {
    // Each malloc counts its size down to the profiler's next sample. An aligned allocation
    // whose fast path the countdown stopped used to leave it below zero, and the next
    // malloc(PTRDIFF_MAX) overflowed it: undefined behaviour, which the UBSan build
    // (hardening_asan) aborts on. Found by the fuzzer (hardening_fuzz).
    for (int round = 0; round < 4; round++) {
        errno = 0;
        REQUIRE(a_malloc(size_t(PTRDIFF_MAX)) == nullptr);
        REQUIRE(errno == ENOMEM);
        void *p = a_aligned_alloc(64, 6226);
        REQUIRE(p != nullptr);
        REQUIRE((uintptr_t)p % 64 == 0);
        errno = 0;
        REQUIRE(a_malloc(size_t(PTRDIFF_MAX)) == nullptr);
        REQUIRE(errno == ENOMEM);
        a_free(p);
    }
    void *q = a_malloc(100);
    REQUIRE(q != nullptr);
    a_free(q);
}

TEST_CASE("impossible sizes give NULL and ENOMEM", "[api][enomem]") {
    const size_t huge[] = {SIZE_MAX, SIZE_MAX - 1, SIZE_MAX - 4096, SIZE_MAX / 2,
                           size_t(PTRDIFF_MAX) + 1, size_t(PTRDIFF_MAX), size_t(1) << 50};
    void *keep = a_malloc(1000);
    fill(keep, 1000, 3);
    for (size_t n : huge) {
        INFO("size " << n);
        errno = 0;
        REQUIRE(a_malloc(n) == nullptr);
        REQUIRE(errno == ENOMEM);
        errno = 0;
        REQUIRE(a_calloc(1, n) == nullptr);
        REQUIRE(errno == ENOMEM);
        errno = 0;
        REQUIRE(a_calloc(n, 1) == nullptr);
        REQUIRE(errno == ENOMEM);
        errno = 0;
        REQUIRE(a_realloc(nullptr, n) == nullptr);
        REQUIRE(errno == ENOMEM);
        // a failed realloc leaves the old block alone
        errno = 0;
        REQUIRE(a_realloc(keep, n) == nullptr);
        REQUIRE(errno == ENOMEM);
        REQUIRE(check(keep, 1000, 3) == SIZE_MAX);
        errno = 0;
        REQUIRE(a_reallocarray(keep, 1, n) == nullptr);
        REQUIRE(errno == ENOMEM);
        REQUIRE(check(keep, 1000, 3) == SIZE_MAX);
        errno = 0;
        REQUIRE(a_aligned_alloc(64, n) == nullptr);
        REQUIRE(errno == ENOMEM);
        errno = 0;
        REQUIRE(a_memalign(4096, n) == nullptr);
        REQUIRE(errno == ENOMEM);
        errno = 0;
        REQUIRE(a_valloc(n) == nullptr);
        REQUIRE(errno == ENOMEM);
        errno = 0;
        REQUIRE(a_pvalloc(n) == nullptr);
        REQUIRE(errno == ENOMEM);
        void *out = reinterpret_cast<void *>(uintptr_t(0x5a5a5a5a));
        int rc = a_posix_memalign(&out, 64, n);
        REQUIRE(rc == ENOMEM);
    }
    a_free(keep);
}

TEST_CASE("sizes the kernel will not commit give NULL and ENOMEM (like glibc)", "[api][enomem]") {
    // glibc maps large objects with a plain private mapping, so under the default heuristic
    // overcommit (vm.overcommit_memory=0) a request far beyond RAM+swap fails with ENOMEM.
    // An allocator that maps with MAP_NORESERVE "succeeds" instead and the program dies on
    // first touch. The kernel is asked first: only when it refuses the plain mapping must
    // the allocator refuse too.
    const size_t sizes[] = {size_t(1) << 42, size_t(1) << 45};   // 4 TB, 32 TB
    void *keep = a_malloc(3000);
    fill(keep, 3000, 8);
    for (size_t n : sizes) {
        void *m = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m != MAP_FAILED) {
            munmap(m, n);
            WARN("the kernel commits " << (n >> 40) << " TB (vm.overcommit_memory=1?): check skipped");
            continue;
        }
        INFO("size " << (n >> 40) << " TB, which the kernel refuses to commit");
        errno = 0;
        void *p = a_malloc(n);
        CHECK(p == nullptr);
        CHECK(errno == ENOMEM);
        if (p) a_free(p);
        errno = 0;
        p = a_calloc(n / 8, 8);
        CHECK(p == nullptr);
        CHECK(errno == ENOMEM);
        if (p) a_free(p);
        errno = 0;
        p = a_aligned_alloc(4096, n);
        CHECK(p == nullptr);
        CHECK(errno == ENOMEM);
        if (p) a_free(p);
        p = nullptr;
        CHECK(a_posix_memalign(&p, 64, n) == ENOMEM);
        if (p) a_free(p);
        errno = 0;
        void *q = a_realloc(keep, n);
        CHECK(q == nullptr);
        CHECK(errno == ENOMEM);
        if (q) keep = q;
        REQUIRE(check(keep, 3000, 8) == SIZE_MAX);
    }
    a_free(keep);
}

TEST_CASE("calloc and reallocarray overflow give NULL and ENOMEM", "[api][enomem]") {
    const std::pair<size_t, size_t> bad[] = {
        {SIZE_MAX, SIZE_MAX}, {SIZE_MAX / 2 + 1, 2}, {2, SIZE_MAX / 2 + 1},
        {size_t(1) << 32, size_t(1) << 32}, {(SIZE_MAX / 16) + 1, 16}, {3, SIZE_MAX / 3 + 1}};
    void *keep = a_malloc(40);
    fill(keep, 40, 11);
    for (auto pr : bad) {
        INFO("count " << pr.first << " size " << pr.second);
        errno = 0;
        REQUIRE(a_calloc(pr.first, pr.second) == nullptr);
        REQUIRE(errno == ENOMEM);
        errno = 0;
        REQUIRE(a_reallocarray(nullptr, pr.first, pr.second) == nullptr);
        REQUIRE(errno == ENOMEM);
        errno = 0;
        REQUIRE(a_reallocarray(keep, pr.first, pr.second) == nullptr);
        REQUIRE(errno == ENOMEM);
        REQUIRE(check(keep, 40, 11) == SIZE_MAX);
    }
    // non-overflowing reallocarray works like realloc
    void *q = a_reallocarray(keep, 1000, 8);
    REQUIRE(q != nullptr);
    REQUIRE(a_usable(q) >= 8000);
    REQUIRE(check(q, 40, 11) == SIZE_MAX);
    fill(q, 8000, 12);
    q = a_reallocarray(q, 3, 5);
    REQUIRE(q != nullptr);
    REQUIRE(check(q, 15, 12) == SIZE_MAX);
    a_free(q);
    // calloc(0, n) / calloc(n, 0) return a freeable pointer
    void *z1 = a_calloc(0, 100), *z2 = a_calloc(100, 0);
    REQUIRE(z1 != nullptr);
    REQUIRE(z2 != nullptr);
    REQUIRE(z1 != z2);
    a_free(z1);
    a_free(z2);
}

TEST_CASE("calloc zeroes reused memory (small, medium, large)", "[api][calloc]") {
    const size_t sizes[] = {8, 24, 64, 200, 1000, 4000, 16000, kSmallMax,
                            20000, 100000, 300000, kMediumMax,
                            kMediumMax + 1, 600000, 2 * MB, 9 * MB};
    for (size_t s : sizes) {
        INFO("size " << s);
        int rounds = s > kMediumMax ? 30 : 60;
        for (int r = 0; r < rounds; r++) {
            void *p = a_malloc(s);
            REQUIRE(p != nullptr);
            memset(p, 0xAB, a_usable(p));
            a_free(p);
            void *q = (r & 1) ? a_calloc(1, s) : a_calloc(s >= 8 ? s / 8 : 1, s >= 8 ? 8 : s);
            REQUIRE(q != nullptr);
            size_t bytes = (r & 1) ? s : (s >= 8 ? s / 8 * 8 : s);
            INFO("round " << r << " reused " << (q == p));
            REQUIRE(first_nonzero(q, bytes) == SIZE_MAX);
            a_free(q);
        }
        // batch: many dirty frees, then many callocs of the same size
        int batch = s > kMediumMax ? 4 : (s > kSmallMax ? 16 : 200);
        std::vector<void *> v;
        for (int i = 0; i < batch; i++) {
            void *p = a_malloc(s);
            memset(p, 0xAB, a_usable(p));
            v.push_back(p);
        }
        for (void *p : v) a_free(p);
        v.clear();
        for (int i = 0; i < batch; i++) {
            void *q = a_calloc(s, 1);
            REQUIRE(q != nullptr);
            REQUIRE(first_nonzero(q, s) == SIZE_MAX);
            memset(q, 0xCD, s);
            v.push_back(q);
        }
        for (void *p : v) a_free(p);
    }
}

TEST_CASE("calloc zeroes memory freed by realloc shrink/grow", "[api][calloc]") {
    for (int r = 0; r < 50; r++) {
        void *p = a_malloc(3000);
        memset(p, 0xAB, a_usable(p));
        p = a_realloc(p, 60000);
        memset(p, 0xAB, a_usable(p));
        p = a_realloc(p, 700000);
        memset(p, 0xAB, a_usable(p));
        a_free(p);
        for (size_t s : {size_t(3000), size_t(60000), size_t(700000)}) {
            void *q = a_calloc(1, s);
            INFO("size " << s << " round " << r);
            REQUIRE(first_nonzero(q, s) == SIZE_MAX);
            a_free(q);
        }
    }
}

TEST_CASE("malloc_usable_size is at least the request and writable", "[api][usable]") {
    Rng rng(77);
    std::vector<Live> v;
    for (int i = 0; i < 3000; i++) {
        size_t s = rng.below(4) == 0 ? rng.below(2 * MB) : rng.below(20000);
        void *p = a_malloc(s);
        size_t u = a_usable(p);
        REQUIRE(u >= s);
        uint64_t sd = rng.next();
        fill(p, u, sd);  // write the whole usable size
        v.push_back({p, s, u, sd});
        if (v.size() > 200) {
            size_t k = rng.below(v.size());
            REQUIRE(check(v[k].p, v[k].usable, v[k].seed) == SIZE_MAX);
            a_free(v[k].p);
            v[k] = v.back();
            v.pop_back();
        }
    }
    check_no_overlap(v);
    for (auto &l : v) {
        REQUIRE(check(l.p, l.usable, l.seed) == SIZE_MAX);
        a_free(l.p);
    }
}

TEST_CASE("free_sized and free_aligned_sized", "[api][free_sized]") {
#ifndef API_PREFIXED
    if (!foreign_allowed()) {
        REQUIRE(free_sized_ptr() != nullptr);          // libbobox.so must export free_sized
        REQUIRE(free_aligned_sized_ptr() != nullptr);  // and free_aligned_sized
    }
#endif
    const size_t sizes[] = {0, 1, 16, 100, 1000, kSmallMax, kSmallMax + 1, 100000,
                            kMediumMax, kMediumMax + 1, 3 * MB};
    for (int rep = 0; rep < 3; rep++) {
        for (size_t s : sizes) {
            INFO("size " << s);
            void *p = a_malloc(s);
            fill(p, s, s);
            errno = 4242;
            a_free_sized(p, s);
            REQUIRE(errno == 4242);
            if (!foreign_allowed()) REQUIRE(a_owns(p) == 0);
            void *c = a_calloc(s ? s : 1, 1);
            a_free_sized(c, s ? s : 1);
            void *r = a_realloc(a_malloc(10), s + 5);
            a_free_sized(r, s + 5);
            for (size_t al : {size_t(16), size_t(64), size_t(4096), size_t(65536), size_t(1) << 21}) {
                INFO("alignment " << al);
                void *q = a_aligned_alloc(al, s);
                REQUIRE(q != nullptr);
                REQUIRE(aligned_to(q, al));
                fill(q, s, al);
                a_free_aligned_sized(q, al, s);
                if (!foreign_allowed()) REQUIRE(a_owns(q) == 0);
            }
        }
    }
    // NULL is allowed
    a_free_sized(nullptr, 0);
    a_free_sized(nullptr, 100);
    a_free_aligned_sized(nullptr, 64, 100);
}

TEST_CASE("malloc_trim returns and memory still works", "[api][trim]") {
    void *keep_small = a_malloc(100), *keep_med = a_malloc(200000), *keep_large = a_malloc(3 * MB);
    fill(keep_small, 100, 1);
    fill(keep_med, 200000, 2);
    fill(keep_large, 3 * MB, 3);
    std::vector<void *> v;
    for (int i = 0; i < 3000; i++) v.push_back(a_malloc(i % 3 == 0 ? 100000 : 3000));
    for (void *p : v) { memset(p, 0xAB, 100); a_free(p); }
    v.clear();
    int r = a_malloc_trim(0);
    // 100 MB of medium objects were just freed: some of it goes back (glibc says 1 too).
    REQUIRE(r == 1);
    REQUIRE(check(keep_small, 100, 1) == SIZE_MAX);
    REQUIRE(check(keep_med, 200000, 2) == SIZE_MAX);
    REQUIRE(check(keep_large, 3 * MB, 3) == SIZE_MAX);
    r = a_malloc_trim(1 << 20);
    REQUIRE((r == 0 || r == 1));
    for (int i = 0; i < 3000; i++) {
        size_t s = i % 3 == 0 ? 100000 : 3000;
        void *p = a_calloc(1, s);
        REQUIRE(p != nullptr);
        REQUIRE(first_nonzero(p, s) == SIZE_MAX);
        fill(p, s, i);
        v.push_back(p);
    }
    for (size_t i = 0; i < v.size(); i++) {
        REQUIRE(check(v[i], i % 3 == 0 ? 100000 : 3000, i) == SIZE_MAX);
        a_free(v[i]);
    }
    a_free(keep_small);
    a_free(keep_med);
    a_free(keep_large);
}

// glibc's contract: 1 when memory went back to the OS, 0 when there was none to give back;
// ours releases every cache, so RSS and the mapped bytes must fall by what was freed.
TEST_CASE("malloc_trim gives freed memory back to the OS and says so", "[api][trim]") {
    if (foreign_allowed()) return; // counts bobox's own mapped bytes
    get_stats_fn stats = get_stats_ptr();
    REQUIRE(stats != nullptr);
    a_malloc_trim(0); // start with empty caches
    // 64 MB of large objects, 32 MB of medium and 16 MB of small ones, all touched.
    std::vector<void *> large, rest;
    for (int i = 0; i < 16; i++) large.push_back(a_malloc(4 * MB));
    for (int i = 0; i < 320; i++) rest.push_back(a_malloc(100000));
    for (int i = 0; i < 16 * 1024; i++) rest.push_back(a_malloc(1000));
    for (void *p : large) memset(p, 1, 4 * MB);
    for (size_t i = 0; i < 320; i++) memset(rest[i], 2, 100000);
    for (size_t i = 320; i < rest.size(); i++) memset(rest[i], 3, 1000);
    size_t mapped_peak = mapped_bytes(), rss_peak = rss_bytes();
    auto start = std::chrono::steady_clock::now();
    // Large ones first: checked mode's quarantine keeps the last 32 MB freed.
    for (void *p : large) a_free(p);
    for (void *p : rest) a_free(p);
    size_t mapped_before = mapped_bytes(), rss_before = rss_bytes();
    int r = a_malloc_trim(0);
    size_t mapped_after = mapped_bytes(), rss_after = rss_bytes();
    auto took = std::chrono::steady_clock::now() - start;
    INFO("mapped " << mapped_peak / 1024 << " KB live, " << mapped_before / 1024 << " KB freed, " << mapped_after / 1024
                   << " KB trimmed; RSS " << rss_peak / 1024 << ", " << rss_before / 1024 << ", " << rss_after / 1024
                   << " KB");
    REQUIRE(r == 1);
    REQUIRE(mapped_after + 64 * MB <= mapped_peak);
    REQUIRE(rss_after + 64 * MB <= rss_peak);
    // Unless a stall let the decay (1 s) give it back first, the trim itself did.
    if (took < std::chrono::milliseconds(500)) {
        REQUIRE(mapped_after + 64 * MB <= mapped_before);
        REQUIRE(rss_after + 64 * MB <= rss_before);
    }
    // The checks above allocated and freed (their messages): a trim gives those pages back
    // too, since a block freed into a superblock in use leaves it without them. Then nothing.
    a_malloc_trim(0);
    REQUIRE(a_malloc_trim(0) == 0); // nothing left to give back
}

// mallinfo2 is not in bobox.h; libbobox.a may or may not define bobox_mallinfo2.
#ifdef API_PREFIXED
extern "C" struct mallinfo2 bobox_mallinfo2(void) __attribute__((weak));
#endif

TEST_CASE("mallinfo2 is plausible: uordblks grows after allocation", "[api][mallinfo]") {
#ifdef API_PREFIXED
    if (&bobox_mallinfo2 == nullptr) {
        WARN("libbobox.a has no bobox_mallinfo2; mallinfo2 is tested in preload_api only");
        return;
    }
    auto info = [] { return bobox_mallinfo2(); };
#else
    auto info = [] { return mallinfo2(); };
#endif
    struct mallinfo2 before = info();
    std::vector<void *> v;
    const size_t n = 4000, sz = 1000;   // 4 MB of small objects
    for (size_t i = 0; i < n; i++) { v.push_back(a_malloc(sz)); memset(v.back(), 1, sz); }
    for (size_t i = 0; i < 20; i++) { v.push_back(a_malloc(100000)); memset(v.back(), 1, 100000); }
    struct mallinfo2 after = info();
    INFO("uordblks before " << before.uordblks << " after " << after.uordblks
         << " arena " << after.arena << " hblkhd " << after.hblkhd);
    REQUIRE(after.uordblks > before.uordblks);
    REQUIRE(after.uordblks - before.uordblks >= (n * sz) / 2);
    REQUIRE(after.arena + after.hblkhd >= after.uordblks / 2);
    for (void *p : v) a_free(p);
    // legacy mallinfo must at least not crash in the preload build
#ifndef API_PREFIXED
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    struct mallinfo old = mallinfo();
#pragma GCC diagnostic pop
    (void)old;
#endif
}

// The number in the first `<tag ... type="TYPE" ...KEY="N"` of the process totals (after
// </heap>), or -1.
static long long xml_number(const std::string &xml, const std::string &element, const std::string &key) {
    size_t from = xml.rfind("</heap>");
    size_t at = xml.find(element, from == std::string::npos ? 0 : from);
    if (at == std::string::npos) return -1;
    size_t k = xml.find(key + "=\"", at);
    if (k == std::string::npos || k > xml.find("/>", at)) return -1;
    return std::stoll(xml.substr(k + key.size() + 2));
}

TEST_CASE("malloc_info writes glibc's XML: live large objects and mapped memory", "[api][mallinfo]") {
    const size_t big_size = size_t(3) << 20;
    char *big = static_cast<char *>(a_malloc(big_size));
    REQUIRE(big != nullptr);
    memset(big, 1, big_size);
    std::vector<void *> small;
    for (int i = 0; i < 1000; i++) small.push_back(a_malloc(100));
    FILE *f = tmpfile();
    REQUIRE(f != nullptr);
    REQUIRE(API(malloc_info)(0, f) == 0);
    std::string xml(size_t(ftell(f)), '\0');
    rewind(f);
    REQUIRE(fread(&xml[0], 1, xml.size(), f) == xml.size());
    INFO(xml);
    REQUIRE(xml.rfind("<malloc version=\"1\">\n", 0) == 0);
    REQUIRE(xml.size() > 10);
    REQUIRE(xml.compare(xml.size() - 10, 10, "</malloc>\n") == 0);
    REQUIRE(xml_number(xml, "<total type=\"mmap\"", "count") >= 1);
    REQUIRE(xml_number(xml, "<total type=\"mmap\"", "size") >= (long long)big_size);
    // Ours counts everything mapped; glibc's leaves its mmap'ed chunks out.
    REQUIRE(xml_number(xml, "<system type=\"current\"", "size") >= 100 * 1000);
    if (!foreign_allowed()) REQUIRE(xml_number(xml, "<system type=\"current\"", "size") >= (long long)big_size);
    REQUIRE(xml_number(xml, "<system type=\"max\"", "size") >= xml_number(xml, "<system type=\"current\"", "size"));
    // glibc returns EINVAL itself (its manual page says -1 and errno): the same here.
    REQUIRE(API(malloc_info)(1, f) == EINVAL);
    fclose(f);
    for (void *p : small) a_free(p);
    a_free(big);
}

TEST_CASE("mallopt and malloc_stats return without harm", "[api][mallopt]") {
    void *keep = a_malloc(5000);
    fill(keep, 5000, 5);
    const std::pair<int, int> opts[] = {{M_MMAP_THRESHOLD, 1 << 20}, {M_TRIM_THRESHOLD, 8 << 20},
                                        {M_TOP_PAD, 1 << 20}, {M_MXFAST, 64}, {M_ARENA_MAX, 8},
                                        {12345, 1}, {-99, 0}};
    for (auto o : opts) {
        int r = a_mallopt(o.first, o.second);
        INFO("mallopt(" << o.first << ", " << o.second << ") = " << r);
        REQUIRE((r == 0 || r == 1));
    }
    fflush(stderr);
    a_malloc_stats();
    fflush(stderr);
    REQUIRE(check(keep, 5000, 5) == SIZE_MAX);
    for (size_t s : {size_t(10), size_t(30000), size_t(2 * MB)}) {
        void *p = a_malloc(s);
        REQUIRE(p != nullptr);
        fill(p, s, s);
        REQUIRE(check(p, s, s) == SIZE_MAX);
        a_free(p);
    }
    a_free(keep);
}

TEST_CASE("bobox_get_stats counts allocations; bobox_print_stats writes a report", "[api][stats]") {
    if (foreign_allowed()) { WARN("scratch glibc build: bobox stats unavailable"); return; }
    REQUIRE(get_stats_ptr() != nullptr);
    REQUIRE(print_stats_ptr() != nullptr);
    struct bobox_stats a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    get_stats_ptr()(&a);
    std::vector<void *> v;
    for (int i = 0; i < 100; i++) v.push_back(a_malloc(100));
    for (int i = 0; i < 10; i++) v.push_back(a_malloc(100000));
    for (int i = 0; i < 3; i++) v.push_back(a_malloc(2 * MB));
    for (void *p : v) memset(p, 1, 100);
    get_stats_ptr()(&b);
    INFO("small " << a.small_allocs << "->" << b.small_allocs << " medium " << a.medium_allocs << "->"
         << b.medium_allocs << " large " << a.large_allocs << "->" << b.large_allocs
         << " mapped " << b.mapped_bytes << " peak " << b.peak_mapped_bytes);
    CHECK(b.small_allocs >= a.small_allocs + 100);
    CHECK(b.medium_allocs >= a.medium_allocs + 10);
    CHECK(b.large_allocs >= a.large_allocs + 3);
    CHECK(b.mapped_bytes >= 6 * MB);
    CHECK(b.peak_mapped_bytes >= b.mapped_bytes);
    CHECK(b.heaps_live >= 1);
    for (void *p : v) a_free(p);

    int fds[2];
    REQUIRE(pipe(fds) == 0);
    print_stats_ptr()(fds[1]);
    close(fds[1]);
    char buf[4096];
    ssize_t got = read(fds[0], buf, sizeof buf);
    close(fds[0]);
    REQUIRE(got > 0);
}
