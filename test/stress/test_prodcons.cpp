// Producer/consumer rings: a three-stage pipeline over bounded single-producer rings.
// Producers allocate (malloc, calloc, aligned) and fill; middle stages check, then realloc to a
// new size and refill, or pass the object on; consumers check and free (free or free_sized).
// Each object is made, resized and freed by three different threads, so nearly every free is
// a remote one, and reallocs move objects between heaps.
#include <catch2/catch.hpp>

#include <thread>
#include <vector>

#include "stress.h"

using namespace stress;

namespace {

struct Msg {
    void *p;
    size_t n;
    uint64_t seed;
    size_t al;
};

// Single-producer single-consumer bounded ring.
class Ring {
public:
    bool push(const Msg &m) {
        size_t h = head_.load(std::memory_order_relaxed);
        if (h - tail_.load(std::memory_order_acquire) == kSize) return false;
        buf_[h % kSize] = m;
        head_.store(h + 1, std::memory_order_release);
        return true;
    }
    bool pop(Msg &m) {
        size_t t = tail_.load(std::memory_order_relaxed);
        if (t == head_.load(std::memory_order_acquire)) return false;
        m = buf_[t % kSize];
        tail_.store(t + 1, std::memory_order_release);
        return true;
    }

private:
    static constexpr size_t kSize = 256;
    Msg buf_[kSize];
    alignas(64) std::atomic<size_t> head_{0};
    alignas(64) std::atomic<size_t> tail_{0};
};

void push_wait(Ring &r, const Msg &m) {
    while (!r.push(m)) std::this_thread::yield();
}

bool check_msg(Errors &err, const Msg &m, const char *stage) {
    size_t bad = scheck(m.p, m.n, m.seed);
    if (bad != SIZE_MAX) {
        err.report("%s: %p (%zu B) corrupt at byte %zu", stage, m.p, m.n, bad);
        return false;
    }
    if (m.al && !aligned_to(m.p, m.al)) err.report("%s: %p lost alignment %zu", stage, m.p, m.al);
    return true;
}

const Msg kEnd{nullptr, 0, 0, 0};

} // namespace

TEST_CASE("producer/consumer rings: allocate, resize and free in three different threads", "[stress][prodcons]") {
    const int kLanes = 2;
    const long kPerProducer = 150000 / kScale;
    Errors err;
    Ring first[kLanes], second[kLanes];
    std::atomic<long> consumed{0}, resized{0};
    auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> ts;
    for (int lane = 0; lane < kLanes; lane++) {
        ts.emplace_back([&, lane] { // producer -> first[lane]
            Rng r(lane + 1);
            for (long i = 0; i < kPerProducer && err.count == 0; i++) {
                Msg m{nullptr, r.below(8) ? 1 + r.below(600) : mixed_size(r, 8), r.next(), 0};
                switch (r.below(8)) {
                case 0:
                    m.p = a_calloc(m.n, 1);
                    if (m.p && first_nonzero(m.p, m.n) != SIZE_MAX) err.report("calloc(%zu) not zeroed", m.n);
                    break;
                case 1:
                    m.al = size_t{32} << r.below(10);
                    m.p = a_aligned_alloc(m.al, m.n);
                    break;
                default:
                    m.p = a_malloc(m.n);
                }
                if (!m.p) { err.report("producer: allocation of %zu B failed", m.n); break; }
                sfill(m.p, m.n, m.seed);
                push_wait(first[lane], m);
            }
            push_wait(first[lane], kEnd);
            int ok = check_heap();
            if (ok != 1) err.report("bobox_check_heap() == %d in a producer", ok);
        });
        ts.emplace_back([&, lane] { // first[lane] -> second[other lane]
            Rng r(lane + 100);
            Ring &out = second[(lane + 1) % kLanes];
            Msg m;
            for (;;) {
                if (!first[lane].pop(m)) { std::this_thread::yield(); continue; }
                if (!m.p) break;
                check_msg(err, m, "middle");
                if (m.al == 0 && r.below(2)) {
                    size_t n = r.below(4) ? 1 + r.below(2000) : mixed_size(r, 8);
                    void *q = a_realloc(m.p, n);
                    if (!q) { err.report("realloc(%zu) failed", n); a_free(m.p); continue; }
                    size_t keep = n < m.n ? n : m.n;
                    size_t bad = scheck(q, keep, m.seed);
                    if (bad != SIZE_MAX) err.report("realloc %zu -> %zu lost byte %zu", m.n, n, bad);
                    m = Msg{q, n, r.next(), 0};
                    sfill(q, n, m.seed);
                    resized++;
                }
                // Allocate a little of our own, so this heap is busy too.
                void *tmp = a_malloc(1 + r.below(300));
                if (tmp) a_free(tmp);
                push_wait(out, m);
            }
            push_wait(out, kEnd);
            int ok = check_heap();
            if (ok != 1) err.report("bobox_check_heap() == %d in a middle stage", ok);
        });
        ts.emplace_back([&, lane] { // consumer of second[lane]
            Msg m;
            long n = 0;
            for (;;) {
                if (!second[lane].pop(m)) { std::this_thread::yield(); continue; }
                if (!m.p) break;
                check_msg(err, m, "consumer");
                if (a_usable(m.p) < m.n) err.report("usable size %zu < %zu", a_usable(m.p), m.n);
                if (n++ % 2) a_free(m.p); else a_free_sized(m.p, m.n);
            }
            consumed += n;
            int ok = check_heap();
            if (ok != 1) err.report("bobox_check_heap() == %d in a consumer", ok);
        });
    }
    for (auto &t : ts) t.join();
    INFO(err.summary());
    REQUIRE(err.count == 0);
    REQUIRE(consumed == kLanes * kPerProducer);
    REQUIRE(check_heap() == 1);
    WARN("producer/consumer: " << consumed << " objects (" << resized << " resized) in " << seconds_since(t0)
                               << " s");
}
