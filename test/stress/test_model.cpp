// Random operation sequences in four threads, checked against a reference model: a std::map
// from address to {requested size, usable size, pattern seed, alignment} of every live object.
// A thread takes an object out of the model (so no other thread touches it), checks it against
// its entry, operates on it, and puts the result back. On every insertion the model checks
// that the object's [address, address + usable size) overlaps no other live object. Objects
// made in one thread are checked, resized and freed in others.
#include <catch2/catch.hpp>

#include <map>
#include <thread>
#include <vector>

#include "stress.h"

using namespace stress;

namespace {

struct Entry {
    size_t n, usable;
    uint64_t seed;
    size_t al;
};

class Model {
public:
    explicit Model(Errors &err) : err_(err) {}

    // Adds a live object; reports any overlap with another live object.
    void insert(void *p, const Entry &e) {
        std::lock_guard<std::mutex> g(mu_);
        auto a = reinterpret_cast<uintptr_t>(p);
        auto it = live_.lower_bound(p);
        if (it != live_.end() && reinterpret_cast<uintptr_t>(it->first) < a + e.usable)
            err_.report("new object %p+%zu overlaps live %p+%zu", p, e.usable, it->first, it->second.usable);
        if (it != live_.begin()) {
            auto prev = std::prev(it);
            if (reinterpret_cast<uintptr_t>(prev->first) + prev->second.usable > a)
                err_.report("new object %p overlaps live %p+%zu", p, prev->first, prev->second.usable);
        }
        live_[p] = e;
        pool_.push_back(p);
    }
    // Takes a random live object out of the model (false if there is none).
    bool take(Rng &r, void *&p, Entry &e) {
        std::lock_guard<std::mutex> g(mu_);
        if (pool_.empty()) return false;
        size_t i = r.below(pool_.size());
        p = pool_[i];
        pool_[i] = pool_.back();
        pool_.pop_back();
        auto it = live_.find(p);
        if (it == live_.end()) {
            err_.report("model: %p in the pool but not in the map", p);
            return false;
        }
        e = it->second;
        live_.erase(it);
        return true;
    }
    size_t size() {
        std::lock_guard<std::mutex> g(mu_);
        return live_.size();
    }
    std::map<void *, Entry> drain() {
        std::lock_guard<std::mutex> g(mu_);
        pool_.clear();
        return std::move(live_);
    }

private:
    Errors &err_;
    std::mutex mu_;
    std::map<void *, Entry> live_;
    std::vector<void *> pool_;
};

void verify(Errors &err, void *p, const Entry &e, const char *what) {
    size_t bad = scheck(p, e.n, e.seed);
    if (bad != SIZE_MAX) err.report("%s: %p (%zu B) differs from the model at byte %zu", what, p, e.n, bad);
    if (e.al && !aligned_to(p, e.al)) err.report("%s: %p not aligned to %zu", what, p, e.al);
    size_t u = a_usable(p);
    if (u != e.usable) err.report("%s: usable size of %p changed %zu -> %zu", what, p, e.usable, u);
    if (a_owns(p) != 1) err.report("%s: bobox_owns(%p) != 1", what, p);
}

// Allocates with a random call; fills and enters the object into the model.
void do_alloc(Errors &err, Model &m, Rng &r) {
    size_t n = r.below(20) == 0 ? r.below(17) : mixed_size(r, 3);
    Entry e{n, 0, r.next(), 0};
    void *p = nullptr;
    switch (r.below(10)) {
    case 0:
        p = a_calloc(1 + r.below(4), n / 4 + 1);
        e.n = (n / 4 + 1); // checked zero below, then filled over this prefix
        if (p && first_nonzero(p, e.n) != SIZE_MAX) err.report("calloc memory not zero");
        break;
    case 1:
        e.al = size_t{16} << r.below(16); // up to 512 KB
        if (a_posix_memalign(&p, e.al, n) != 0) p = nullptr;
        break;
    case 2:
        e.al = size_t{16} << r.below(10);
        p = a_memalign(e.al, n);
        break;
    case 3:
        e.al = size_t{64} << r.below(6);
        p = a_aligned_alloc(e.al, (n + e.al - 1) / e.al * e.al);
        break;
    case 4:
        p = a_realloc(nullptr, n);
        break;
    default:
        p = a_malloc(n);
    }
    if (!p) {
        err.report("allocation of %zu B (alignment %zu) failed", n, e.al);
        return;
    }
    if (e.al && !aligned_to(p, e.al)) err.report("%p not aligned to %zu", p, e.al);
    if (!aligned_to(p, 16)) err.report("%p not 16-byte aligned", p);
    e.usable = a_usable(p);
    if (e.usable < e.n) err.report("usable %zu < requested %zu", e.usable, e.n);
    // The whole usable size is the caller's: write the pattern over all of it.
    e.n = e.usable > 4 * MB ? e.n : e.usable;
    sfill(p, e.n, e.seed);
    m.insert(p, e);
}

void model_thread(Errors &err, Model &m, int id, long ops) {
    Rng r(id * 7919 + 3);
    for (long i = 0; i < ops && err.count == 0; i++) {
        unsigned op = static_cast<unsigned>(r.below(100));
        if (op < 40 || m.size() < 50) {
            do_alloc(err, m, r);
            continue;
        }
        void *p;
        Entry e;
        if (!m.take(r, p, e)) continue;
        verify(err, p, e, "take");
        if (op < 75) { // free
            if (r.below(3)) a_free(p); else a_free_sized(p, e.n);
        } else if (op < 90 && e.al == 0) { // realloc
            size_t n = r.below(3) ? 1 + r.below(e.n * 2 + 16) : mixed_size(r, 5);
            void *q = a_realloc(p, n);
            if (!q) {
                err.report("realloc(%p, %zu) failed", p, n);
                m.insert(p, e);
                continue;
            }
            size_t keep = n < e.n ? n : e.n;
            size_t bad = scheck(q, keep, e.seed);
            if (bad != SIZE_MAX) err.report("realloc %zu -> %zu: byte %zu lost", e.n, n, bad);
            Entry u{n, a_usable(q), r.next(), 0};
            if (u.usable < n) err.report("usable %zu < requested %zu after realloc", u.usable, n);
            sfill(q, n, u.seed);
            m.insert(q, u);
        } else { // checked above; back it goes, possibly refilled
            if (r.below(2)) {
                e.seed = r.next();
                sfill(p, e.n, e.seed);
            }
            m.insert(p, e);
        }
    }
    int ok = check_heap();
    if (ok != 1) err.report("bobox_check_heap() == %d at the end of model thread %d", ok, id);
}

} // namespace

TEST_CASE("random operations in four threads match a reference model of live objects", "[stress][model]") {
    const int kThreads = 4;
    const long kOps = 80000 / kScale;
    Errors err;
    Model m(err);
    auto t0 = std::chrono::steady_clock::now();
    for (int round = 0; round < 2; round++) { // the second round's threads adopt the first's heaps
        std::vector<std::thread> ts;
        for (int i = 0; i < kThreads; i++)
            ts.emplace_back(model_thread, std::ref(err), std::ref(m), round * kThreads + i, kOps / 2);
        for (auto &t : ts) t.join();
        INFO(err.summary());
        REQUIRE(err.count == 0);
    }
    size_t left = 0;
    for (auto &kv : m.drain()) {
        verify(err, kv.first, kv.second, "final");
        a_free(kv.first);
        left++;
    }
    INFO(err.summary());
    REQUIRE(err.count == 0);
    REQUIRE(check_heap() == 1);
    WARN("model: " << kThreads * kOps << " operations, " << left << " objects live at the end, "
                   << seconds_since(t0) << " s");
}
