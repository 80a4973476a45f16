// Aligned allocation: posix_memalign, aligned_alloc, memalign, valloc, pvalloc.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <vector>

#include "api.h"

using namespace api;

namespace {

enum Fn { F_POSIX, F_ALIGNED, F_MEMALIGN, F_COUNT };
const char *fn_name(int f) {
    static const char *n[] = {"posix_memalign", "aligned_alloc", "memalign"};
    return n[f];
}

void *aligned_call(int f, size_t al, size_t n) {
    switch (f) {
    case F_POSIX: {
        void *p = reinterpret_cast<void *>(uintptr_t(0xdead0));
        int r = a_posix_memalign(&p, al, n);
        return r == 0 ? p : nullptr;
    }
    case F_ALIGNED: return a_aligned_alloc(al, n);
    default: return a_memalign(al, n);
    }
}

struct Obj {
    void *p;
    size_t req, usable;
    uint64_t seed;
    int fn;
    size_t al;
};

} // namespace

TEST_CASE("aligned calls: alignments 16 B .. 4 MB, sizes 1/small/medium/large", "[api][align]") {
    // 1, small, a small-range edge, medium, the medium edge, large, larger than some alignments
    const size_t sizes[] = {1, 100, 5000, kSmallMax, 100000, kMediumMax, 600000, 3 * MB};
    uint64_t seed = 1;
    for (size_t al = 16; al <= 4 * MB; al *= 2) {
        std::vector<Obj> live;
        for (size_t s : sizes) {
            for (int f = 0; f < F_COUNT; f++) {
                INFO(fn_name(f) << "(alignment " << al << ", size " << s << ")");
                void *p = aligned_call(f, al, s);
                REQUIRE(p != nullptr);
                REQUIRE(aligned_to(p, al));
                size_t u = a_usable(p);
                REQUIRE(u >= s);
                fill(p, u, seed);   // writable over the whole usable size
                if (!foreign_allowed()) REQUIRE(a_owns(p) == 1);
                live.push_back({p, s, u, seed++, f, al});
            }
        }
        // all live at once: contents intact, no overlap
        std::vector<Obj> sorted = live;
        std::sort(sorted.begin(), sorted.end(), [](const Obj &a, const Obj &b) { return a.p < b.p; });
        for (size_t i = 1; i < sorted.size(); i++) {
            INFO("alignment " << al << ": " << sorted[i - 1].p << "+" << sorted[i - 1].usable
                 << " vs " << sorted[i].p);
            REQUIRE(static_cast<char *>(sorted[i - 1].p) + sorted[i - 1].usable <= static_cast<char *>(sorted[i].p));
        }
        for (const Obj &o : live) {
            INFO(fn_name(o.fn) << "(alignment " << o.al << ", size " << o.req << ") = " << o.p);
            REQUIRE(check(o.p, o.usable, o.seed) == SIZE_MAX);
            if (o.fn == F_ALIGNED && (o.req % 3) == 0) a_free_aligned_sized(o.p, o.al, o.req);
            else a_free(o.p);
            if (!foreign_allowed()) REQUIRE(a_owns(o.p) == 0);
        }
    }
}

TEST_CASE("aligned objects can be realloc'ed (contents kept, result 16-aligned)", "[api][align]") {
    for (size_t al : {size_t(64), size_t(4096), size_t(65536), size_t(1) << 20}) {
        for (size_t s : {size_t(10), size_t(3000), size_t(100000), size_t(700000)}) {
            for (size_t t : {size_t(5), size_t(20000), size_t(2 * MB)}) {
                INFO("alignment " << al << " size " << s << " -> " << t);
                void *p = a_aligned_alloc(al, s);
                REQUIRE(p != nullptr);
                fill(p, s, al + s);
                void *q = a_realloc(p, t);
                REQUIRE(q != nullptr);
                REQUIRE(aligned_to(q, 16));
                REQUIRE(check(q, std::min(s, t), al + s) == SIZE_MAX);
                REQUIRE(a_usable(q) >= t);
                a_free(q);
            }
        }
    }
}

// A block freed by one size and formatted for another keeps the old free objects' records
// (mangled link, free key) in its memory. An aligned object hands out an address inside its
// slot, which can sit on such a record; realloc copies from that address, and a copy of a
// record made the new object look freed: free() aborted with "double free" (found by the fuzz
// harness, hardening_fuzz).
TEST_CASE("realloc of an aligned object never written: the new object is live", "[api][align]") {
    owns_fn owns = owns_ptr();
    std::vector<void *> objs(3000);
    for (int round = 0; round < 10; round++) {
        for (size_t size : {size_t(16), size_t(48), size_t(64), size_t(256), size_t(1024)}) {
            for (size_t al : {size_t(64), size_t(512), size_t(4096)}) {
                INFO("round " << round << ": blocks of " << size << " B objects, alignment " << al);
                for (void *&o : objs) REQUIRE((o = a_malloc(size)) != nullptr);
                for (void *o : objs) a_free(o);
                void *p = a_aligned_alloc(al, 16);
                REQUIRE(p != nullptr);
                void *q = a_realloc(p, 211);
                REQUIRE(q != nullptr);
                if (owns) REQUIRE(owns(q) == 1);
                REQUIRE(a_usable(q) >= 211);
                a_free(q);
            }
        }
    }
}

// A program may copy bytes it never wrote (uninitialised padding, say) from inside one object
// to the start of another. Where a block's last format left a free object's record, the copy
// must not make the new object look freed: free() would abort with "double free".
TEST_CASE("bytes copied from never-written memory do not make an object look freed", "[api][align]") {
    std::vector<void *> objs(3000);
    for (int round = 0; round < 4; round++) {
        for (size_t old_size : {size_t(16), size_t(48), size_t(256)}) {
            for (size_t new_size : {size_t(1024), size_t(208)}) {
                INFO("round " << round << ": blocks of " << old_size << " B, then " << new_size << " B objects");
                for (void *&o : objs) REQUIRE((o = a_malloc(old_size)) != nullptr);
                for (void *o : objs) a_free(o);
                std::vector<char *> never_written(100);
                for (char *&x : never_written) REQUIRE((x = static_cast<char *>(a_malloc(new_size))) != nullptr);
                for (char *x : never_written) {
                    for (size_t at = 0; at + 16 <= new_size; at += 16) {
                        // Into an object of the old format's size too: another block of it.
                        for (size_t copy_size : {old_size, new_size}) {
                            char *y = static_cast<char *>(a_malloc(copy_size));
                            REQUIRE(y != nullptr);
                            std::memcpy(y, opaque(x + at), 16);
                            if (a_owns(y) != -1) REQUIRE(a_owns(y) == 1);
                            REQUIRE(a_usable(y) >= copy_size);
                            a_free(y);
                        }
                    }
                }
                for (char *x : never_written) a_free(x);
            }
        }
    }
}

TEST_CASE("many live aligned objects mixed with malloc", "[api][align]") {
    Rng rng(9);
    std::vector<Obj> live;
    for (int i = 0; i < 4000; i++) {
        size_t al = size_t(16) << rng.below(9);          // 16 .. 4096
        if (rng.below(50) == 0) al = size_t(1) << (13 + rng.below(9));  // up to 2 MB
        size_t s = rng.below(10) == 0 ? rng.below(300000) : rng.below(2000);
        int f = static_cast<int>(rng.below(F_COUNT + 1));
        void *p = f == F_COUNT ? a_malloc(s) : aligned_call(f, al, s);
        REQUIRE(p != nullptr);
        REQUIRE(aligned_to(p, f == F_COUNT ? 16 : al));
        size_t u = a_usable(p);
        REQUIRE(u >= s);
        uint64_t sd = rng.next();
        fill(p, u, sd);
        live.push_back({p, s, u, sd, f, al});
        if (live.size() > 1000) {
            size_t k = rng.below(live.size());
            REQUIRE(check(live[k].p, live[k].usable, live[k].seed) == SIZE_MAX);
            a_free(live[k].p);
            live[k] = live.back();
            live.pop_back();
        }
    }
    for (auto &o : live) {
        REQUIRE(check(o.p, o.usable, o.seed) == SIZE_MAX);
        a_free(o.p);
    }
}

TEST_CASE("valloc and pvalloc are page aligned; pvalloc rounds up to a page", "[api][align]") {
    const size_t pg = page_size();
    const size_t sizes[] = {1, 100, pg - 1, pg, pg + 1, 5000, kSmallMax, 20000, 100000,
                            kMediumMax, kMediumMax + 1, 600000, 3 * MB + 5};
    std::vector<Obj> live;
    for (size_t s : sizes) {
        INFO("size " << s);
        void *v = a_valloc(s);
        REQUIRE(v != nullptr);
        REQUIRE(aligned_to(v, pg));
        size_t uv = a_usable(v);
        REQUIRE(uv >= s);
        fill(v, uv, s);
        live.push_back({v, s, uv, s, 0, pg});
        void *p = a_pvalloc(s);
        REQUIRE(p != nullptr);
        REQUIRE(aligned_to(p, pg));
        size_t up = a_usable(p);
        size_t rounded = (s + pg - 1) / pg * pg;
        REQUIRE(up >= rounded);
        fill(p, up, s + 1);
        live.push_back({p, s, up, s + 1, 1, pg});
    }
    void *v0 = a_valloc(0), *p0 = a_pvalloc(0);
    REQUIRE(v0 != nullptr);
    REQUIRE(p0 != nullptr);
    REQUIRE(aligned_to(v0, pg));
    REQUIRE(aligned_to(p0, pg));
    for (auto &o : live) {
        REQUIRE(check(o.p, o.usable, o.seed) == SIZE_MAX);
        a_free(o.p);
    }
    a_free(v0);
    a_free(p0);
}

TEST_CASE("posix_memalign: EINVAL for bad alignments, *out untouched", "[api][align][einval]") {
    const size_t bad[] = {0, 1, 2, 3, 4, 6, 12, 24, 48, 100, 4097, 65537, 3 * 4096,
                          (SIZE_MAX / 2) + 3, SIZE_MAX};
    for (size_t al : bad) {
        for (size_t s : {size_t(0), size_t(16), size_t(100000), size_t(MB)}) {
            INFO("posix_memalign(alignment " << al << ", size " << s << ")");
            void *sentinel = reinterpret_cast<void *>(uintptr_t(0x1234560));
            void *out = sentinel;
            errno = 0;
            int r = a_posix_memalign(&out, al, s);
            REQUIRE(r == EINVAL);
            REQUIRE(out == sentinel);
        }
    }
    // the smallest valid alignment is sizeof(void *)
    void *out = nullptr;
    REQUIRE(a_posix_memalign(&out, sizeof(void *), 10) == 0);
    REQUIRE(out != nullptr);
    a_free(out);
    // ENOMEM (as the return value) for impossible sizes, *out untouched
    for (size_t s : {SIZE_MAX, SIZE_MAX - 100, size_t(PTRDIFF_MAX) + 1}) {
        void *sentinel = reinterpret_cast<void *>(uintptr_t(0x7654320));
        out = sentinel;
        INFO("size " << s);
        REQUIRE(a_posix_memalign(&out, 4096, s) == ENOMEM);
        REQUIRE(out == sentinel);
    }
}

TEST_CASE("aligned_alloc: non-power-of-two alignment gives NULL and EINVAL", "[api][align][einval]") {
#ifdef API_ALLOW_FOREIGN
    // glibc before 2.38 (Debian 12 has 2.36) accepts any alignment here, like memalign.
    if (foreign_allowed()) { WARN("scratch glibc build: aligned_alloc EINVAL needs glibc >= 2.38"); return; }
#endif
    const size_t bad[] = {0, 3, 6, 24, 48, 100, 4097, 65537, 3 * 4096, (SIZE_MAX / 2) + 3};
    for (size_t al : bad) {
        for (size_t s : {size_t(1), size_t(48), size_t(100000)}) {
            INFO("aligned_alloc(" << al << ", " << s << ")");
            errno = 0;
            REQUIRE(a_aligned_alloc(al, s) == nullptr);
            REQUIRE(errno == EINVAL);
        }
    }
    // alignments smaller than 16 that are powers of two are fine
    for (size_t al : {size_t(1), size_t(2), size_t(4), size_t(8)}) {
        void *p = a_aligned_alloc(al, 40);
        REQUIRE(p != nullptr);
        REQUIRE(a_usable(p) >= 40);
        a_free(p);
    }
}

TEST_CASE("memalign with small power-of-two alignments", "[api][align]") {
    // Only powers of two are tested: glibc rounds other alignments up (not part of the contract).
    for (size_t al : {size_t(1), size_t(2), size_t(4), size_t(8), size_t(16), size_t(32)}) {
        for (size_t s : {size_t(0), size_t(1), size_t(33), size_t(20000)}) {
            void *p = a_memalign(al, s);
            INFO("memalign(" << al << ", " << s << ")");
            REQUIRE(p != nullptr);
            REQUIRE(aligned_to(p, al));
            REQUIRE(a_usable(p) >= s);
            fill(p, a_usable(p), al);
            a_free(p);
        }
    }
}
