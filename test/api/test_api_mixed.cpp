// Mixed blocks (issue 47, allocator/mem/mixed.h): once a size goes idle with its blocks
// mostly free, larger sizes are cut from the gaps between its survivors. Each test runs in a
// child, which builds that shape itself: 16 MB of 64 B objects, 7 in 8 of them freed at random, then 1-4 KB
// objects until the heap grows.
// A child's exit code names the check that failed (need()).
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

#include "api.h"
#include "child.h"

using namespace api;

namespace {

size_t ctl_size(const char *name) {
    size_t v = 0, len = sizeof v;
    if (bobox_ctl_ptr()(name, &v, &len, nullptr, 0) != 0) return SIZE_MAX;
    return v;
}

struct Piece {
    unsigned char *p;
    size_t n;
    unsigned char tag;
};

void fill(Piece &o) { memset(o.p, o.tag, o.n); }
bool intact(const Piece &o) {
    for (size_t i = 0; i < o.n; i++)
        if (o.p[i] != o.tag) return false;
    return true;
}

// The shape: survivors of the 64 B fill, the 64 KB blocks they lie in, and the larger
// objects allocated after the frees.
struct Shape {
    std::vector<Piece> survivors, grown;
    std::set<uintptr_t> small_blocks;
};

// Exits the child with `code` when `ok` is false (the parent reports which).
void need(bool ok, int code) {
    if (!ok) _exit(code);
}

// 1 in 8 at random (splitmix64's finish): gaps of any length.
bool kept_at_random(uint64_t i) {
    i = (i ^ (i >> 30)) * 0xbf58476d1ce4e5b9u;
    i = (i ^ (i >> 27)) * 0x94d049bb133111ebu;
    return ((i ^ (i >> 31)) & 7) == 0;
}

// grow_bytes of larger objects at least, and on until `want` of them lie in the small
// objects' blocks: a process that freed much before reuses its free blocks first (at most
// 256 MB).
Shape build_shape(size_t grow_bytes, size_t want = 200) {
    Shape s;
    a_own_heap();
    const size_t n = (16u << 20) / 64;
    std::vector<Piece> all(n);
    for (size_t i = 0; i < n; i++) {
        all[i] = {static_cast<unsigned char *>(a_malloc(64)), 64, static_cast<unsigned char>(i)};
        need(all[i].p != nullptr, 10);
        fill(all[i]);
        s.small_blocks.insert(reinterpret_cast<uintptr_t>(all[i].p) & ~uintptr_t{0xffff});
    }
    for (size_t i = 0; i < n; i++) {
        if (kept_at_random(i))
            s.survivors.push_back(all[i]);
        else
            a_free(all[i].p);
    }
    size_t grown = 0, in = 0;
    for (unsigned i = 0; grown < grow_bytes || (in < want && grown < (256u << 20)); i++) {
        size_t size = 1024 + (i * 2654435761u) % 3073;
        Piece o{static_cast<unsigned char *>(a_malloc(size)), size, static_cast<unsigned char>(i * 7 + 1)};
        need(o.p != nullptr, 11);
        fill(o);
        s.grown.push_back(o);
        grown += size;
        in += s.small_blocks.count(reinterpret_cast<uintptr_t>(o.p) & ~uintptr_t{0xffff});
    }
    return s;
}

size_t in_small_blocks(const Shape &s) {
    size_t in = 0;
    for (const Piece &o : s.grown) in += s.small_blocks.count(reinterpret_cast<uintptr_t>(o.p) & ~uintptr_t{0xffff});
    return in;
}

bool skip() { return foreign_allowed() || checked_mode() || !bobox_ctl_ptr(); }

// `count` objects of size_of(i) bytes into `out`, the first `touch` bytes of each written with
// `tag`, and a sleep of pause_ms(i) ms after each (0: none); exits with `code` if one fails.
template <class SizeOf, class PauseMs>
void allocate_into(std::vector<void *> &out, unsigned count, SizeOf size_of, size_t touch, int tag, PauseMs pause_ms,
                   int code) {
    for (unsigned i = 0; i < count; i++) {
        void *p = a_malloc(size_of(i));
        need(p != nullptr, code);
        memset(p, tag, touch);
        out.push_back(p);
        if (unsigned ms = pause_ms(i)) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    }
}

} // namespace

TEST_CASE("larger sizes fill the gaps of a size gone idle; every object keeps its bytes", "[api][mixed]") {
    if (skip()) return;
    auto [sig, err] = in_child([] {
        size_t blocks_before = ctl_size("bobox.stats.mixed_blocks");
        need(blocks_before != SIZE_MAX, 2);
        {
        Shape s = build_shape(12u << 20);
        // Larger objects lie in the blocks the 64 B objects were cut from (most of them in a
        // fresh process; one that freed much before uses its free blocks first).
        need(ctl_size("bobox.stats.mixed_blocks") > blocks_before + 100, 3);
        need(in_small_blocks(s) >= 200, 4);
        need(ctl_size("bobox.stats.mixed_bytes") >= 1u << 20, 5);
        // No two live objects share a byte; each holds what was written; sizes hold.
        std::vector<std::pair<uintptr_t, size_t>> spans;
        for (const Piece &o : s.survivors) spans.push_back({reinterpret_cast<uintptr_t>(o.p), o.n});
        for (const Piece &o : s.grown) {
            need(a_usable(o.p) >= o.n, 6);
            spans.push_back({reinterpret_cast<uintptr_t>(o.p), o.n});
        }
        std::sort(spans.begin(), spans.end());
        for (size_t i = 1; i < spans.size(); i++) need(spans[i - 1].first + spans[i - 1].second <= spans[i].first, 7);
        for (const Piece &o : s.survivors) need(intact(o), 8);
        for (const Piece &o : s.grown) need(intact(o), 9);
        // realloc keeps the bytes, growing and shrinking.
        for (size_t i = 0; i < s.grown.size(); i += 7) {
            Piece &o = s.grown[i];
            size_t to = i % 2 ? 100 : o.n + 5000;
            auto *q = static_cast<unsigned char *>(a_realloc(o.p, to));
            need(q != nullptr, 12);
            o.p = q;
            o.n = std::min(o.n, to);
            need(intact(o), 13);
        }
        // Half freed by another thread, the rest here: then the blocks go back.
        std::thread([&] {
            for (size_t i = 0; i < s.grown.size(); i += 2) a_free(s.grown[i].p);
            for (size_t i = 0; i < s.survivors.size(); i += 2) a_free(s.survivors[i].p);
        }).join();
        for (size_t i = 1; i < s.grown.size(); i += 2) a_free(s.grown[i].p);
        for (size_t i = 1; i < s.survivors.size(); i += 2) a_free(s.survivors[i].p);
        } // and the shape's own vectors, which a preloaded build may have cut from mixed blocks
        a_malloc_trim(0);
        // Every mixed block went back. Preloaded, the runner's own objects of the size (the
        // parent's, before the fork: 22 KB in 10 blocks here) keep their blocks mixed.
        size_t left = ctl_size("bobox.stats.mixed_blocks"), bytes = ctl_size("bobox.stats.mixed_bytes");
        fprintf(stderr, "after the frees and a trim: %zu mixed blocks, %zu bytes in them\n", left, bytes);
#ifdef API_PREFIXED
        need(left <= blocks_before, 14);
#else
        need(left <= blocks_before + 32 && bytes <= (128u << 10), 14);
#endif
        _exit(0);
    });
    INFO(err);
    REQUIRE(sig == 0);
}

TEST_CASE("growth in sizes under 512 B mixes no block: they could not use the gaps", "[api][mixed]") {
    if (skip()) return;
    auto [sig, err] = in_child([] {
        size_t blocks_before = ctl_size("bobox.stats.mixed_blocks");
        need(blocks_before != SIZE_MAX, 2);
        Shape s = build_shape(0, 0);
        // 24 MB of 128-496 B objects, with pauses past the 20 ms after which an idle size
        // mixes, and past a decay tick.
        std::vector<void *> grown;
        grown.reserve(24 * 4096 + 8192); // one mapping, not a vector grown through the sizes
        allocate_into(
            grown, 24 * 4096, [](unsigned i) { return 128 + (i * 2654435761u) % 369; }, 128, 1,
            [](unsigned i) { return i % 8192 ? 0u : i % 32768 ? 30u : 300u; }, 3);
        need(ctl_size("bobox.stats.mixed_blocks") == blocks_before, 4);
        // Then a size that can use them: blocks mix.
        allocate_into(
            grown, 8192, [](unsigned i) { return 1024 + i % 3073; }, 1024, 2,
            [](unsigned i) { return i % 2048 ? 0u : 30u; }, 5);
        need(ctl_size("bobox.stats.mixed_blocks") > blocks_before, 6);
        for (void *p : grown) a_free(p);
        for (const Piece &o : s.survivors) a_free(o.p);
        _exit(0);
    });
    INFO(err);
    REQUIRE(sig == 0);
}

TEST_CASE("with bobox.mixed off, larger sizes take blocks of their own", "[api][mixed]") {
    if (skip()) return;
    auto [sig, err] = in_child([] {
        bool off = false;
        need(bobox_ctl_ptr()("bobox.mixed", nullptr, nullptr, &off, sizeof off) == 0, 2);
        size_t blocks_before = ctl_size("bobox.stats.mixed_blocks");
        Shape s = build_shape(4u << 20, 0);
        need(ctl_size("bobox.stats.mixed_blocks") == blocks_before, 3);
        need(in_small_blocks(s) < s.grown.size() / 10, 4);
        _exit(0);
    });
    INFO(err);
    REQUIRE(sig == 0);
}

TEST_CASE("a mixed block's objects: a double free, a pointer inside one and a freed one abort", "[api][mixed][invalid]") {
    if (skip()) return;
    struct Case { const char *what, *message; int which; };
    for (Case c : {Case{"a survivor freed twice", "free(): double free", 0},
                   Case{"16 bytes into a larger object", "free(): invalid pointer", 1},
                   Case{"a larger object freed twice", "free(): double free", 2},
                   Case{"realloc of a freed larger object", "realloc(): double free", 3}}) {
        INFO(c.what);
        auto [sig, err] = in_child([&] {
            Shape s = build_shape(4u << 20);
            // A larger object that lies in one of the small blocks: a mixed block's.
            Piece *mixed = nullptr;
            for (Piece &o : s.grown)
                if (s.small_blocks.count(reinterpret_cast<uintptr_t>(o.p) & ~uintptr_t{0xffff})) mixed = &o;
            need(mixed != nullptr, 2);
            unsigned char *survivor = s.survivors[s.survivors.size() / 2].p;
            switch (c.which) {
            case 0:
                a_free(survivor);
                a_free(survivor);
                break;
            case 1: a_free(mixed->p + 16); break;
            case 2:
                a_free(mixed->p);
                a_free(mixed->p);
                break;
            case 3:
                a_free(mixed->p);
                a_realloc(mixed->p, 100);
                break;
            }
            _exit(0);
        });
        INFO(err);
        REQUIRE(sig == SIGABRT);
        REQUIRE(err.find(c.message) != std::string::npos);
    }
}

TEST_CASE("aligned objects cut from a mixed block keep their alignment and free cleanly", "[api][mixed]") {
    if (skip()) return;
    auto [sig, err] = in_child([] {
        Shape s = build_shape(4u << 20);
        std::vector<void *> aligned;
        size_t in = 0;
        for (size_t al = 32; al <= 2048; al *= 2)
            for (int i = 0; i < 200; i++) {
                void *p = a_aligned_alloc(al, 1024);
                need(p && reinterpret_cast<uintptr_t>(p) % al == 0, 2);
                need(a_usable(p) >= 1024, 3);
                memset(p, 0x5a, 1024);
                in += s.small_blocks.count(reinterpret_cast<uintptr_t>(p) & ~uintptr_t{0xffff});
                aligned.push_back(p);
            }
        need(in > 0, 4);
        for (const Piece &o : s.grown) need(intact(o), 5);
        for (void *p : aligned) a_free(p);
        int ok = 0;
        size_t len = sizeof ok;
        need(bobox_ctl_ptr()("bobox.check_heap", &ok, &len, nullptr, 0) == 0 && ok == 1, 6);
        _exit(0);
    });
    INFO(err);
    REQUIRE(sig == 0);
}
