// stackwalk.c: the stacks it reads from its rule table are libgcc's, frame for frame, for
// ordinary frames, frames addressed through rbp (alloca), large frames, frames too large for
// the table, a signal handler's stack, and a new thread's; and again when the rules come from
// the table.
#include <catch2/catch.hpp>

#include <alloca.h>
#include <csignal>
#include <cstring>
#include <pthread.h>
#include <vector>

extern "C" {
#include "tools/stackwalk.h"
}

namespace {

constexpr int kMax = 64;
struct Pair {
    std::vector<uintptr_t> ours, libgcc;
};
volatile int sink;

// Both walks from the same frame, ours twice: the second reads the rules from the table. The
// first address of each is its own call's return into this function, so the rest is compared.
__attribute__((noinline)) Pair walk_both(int max = kMax, uintptr_t lo = 0, uintptr_t hi = 0) {
    uintptr_t a[kMax], b[kMax], c[kMax];
    int na = bx_stackwalk(a, max, lo, hi);
    int nc = bx_stackwalk(c, max, lo, hi);
    int nb = bx_stackwalk_libgcc(b, max, lo, hi);
    REQUIRE(na == nc);
    REQUIRE(na > 0);
    REQUIRE(std::memcmp(a + 1, c + 1, sizeof(uintptr_t) * (size_t)(na - 1)) == 0);
    sink = sink + 1; // no tail call: this frame stays
    return {std::vector<uintptr_t>(a + 1, a + na), std::vector<uintptr_t>(b + (nb > 0), b + nb)};
}

__attribute__((noinline)) int walk_into(uintptr_t *out, uintptr_t lo, uintptr_t hi) {
    int n = bx_stackwalk(out, kMax, lo, hi);
    sink = sink + 1;
    return n;
}

__attribute__((noinline)) Pair plain(int depth) {
    if (depth == 0) return walk_both();
    Pair p = plain(depth - 1);
    sink = sink + depth;
    return p;
}

__attribute__((noinline)) Pair with_alloca(int depth) {
    volatile char *room = static_cast<volatile char *>(alloca(16 + (size_t)depth * 40));
    room[0] = 1;
    Pair p = depth == 0 ? walk_both() : with_alloca(depth - 1);
    sink = sink + room[0];
    return p;
}

// 9 KB frames (an 8 KB buffer on the stack is common) the table keeps; 40 KB ones it leaves
// to libgcc.
template <size_t Bytes> __attribute__((noinline)) Pair big_frame(int depth) {
    volatile char room[Bytes];
    room[depth] = 1;
    Pair p = depth == 0 ? walk_both() : big_frame<Bytes>(depth - 1);
    sink = sink + room[depth];
    return p;
}

Pair in_handler;
void on_signal(int) { in_handler = walk_both(); }

__attribute__((noinline)) void raise_at(int depth) {
    if (depth == 0) raise(SIGUSR1);
    else raise_at(depth - 1);
    sink = sink + depth;
}

void *thread_body(void *out) {
    *static_cast<Pair *>(out) = plain(3);
    return nullptr;
}

void same(const Pair &p, size_t at_least) {
    INFO("ours " << p.ours.size() << " frames, libgcc's " << p.libgcc.size());
    REQUIRE(p.ours.size() >= at_least);
    REQUIRE(p.ours == p.libgcc);
}

} // namespace

TEST_CASE("stackwalk: the table's stacks are libgcc's", "[stackwalk]") {
    REQUIRE(bx_stackwalk_init());
    SECTION("ordinary frames, depths 0 to 30") {
        for (int d = 0; d <= 30; d++) same(plain(d), (size_t)d + 2);
    }
    SECTION("frames addressed through rbp") {
        for (int d = 0; d <= 12; d++) same(with_alloca(d), (size_t)d + 2);
    }
    SECTION("large frames, and frames too large for the table") {
        same(big_frame<9000>(4), 6);
        same(big_frame<40000>(4), 6);
    }
    SECTION("a signal handler's stack, through the kernel's trampoline") {
        struct sigaction sa {}, old{};
        sa.sa_handler = on_signal;
        REQUIRE(sigaction(SIGUSR1, &sa, &old) == 0);
        raise_at(5);
        sigaction(SIGUSR1, &old, nullptr);
        same(in_handler, 8);
    }
    SECTION("a new thread's stack ends where libgcc's does") {
        Pair p;
        pthread_t t;
        REQUIRE(pthread_create(&t, nullptr, thread_body, &p) == 0);
        pthread_join(t, nullptr);
        same(p, 5);
    }
    SECTION("at most max frames, the innermost") {
        Pair all = plain(10);
        Pair cut = [] { return walk_both(3); }();
        REQUIRE(cut.ours.size() == 2);
        REQUIRE(cut.ours == cut.libgcc);
        same(all, 12);
    }
    SECTION("frames in the skipped range are left out at the top only") {
        uintptr_t a[kMax], b[kMax];
        int na = walk_into(a, 0, 0);
        REQUIRE(na >= 4);
        int nb = walk_into(b, a[0], a[0] + 1); // walk_into's own return address, skipped
        REQUIRE(nb == na - 1);
        // b[0] returns into this function from the second call, a[1] from the first
        REQUIRE(std::memcmp(b + 1, a + 2, sizeof(uintptr_t) * (size_t)(nb - 1)) == 0);
    }
}
