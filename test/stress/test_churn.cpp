// Thread churn: generations of short-lived threads. Each thread allocates objects (every size
// range, aligned ones too), fills them, and exits leaving them behind; threads of the next
// generation - whose heaps may be adopted from the exited ones - check them and free, realloc
// or hand them on. The test thread frees the last survivors long after their owners exited.
#include <catch2/catch.hpp>

#include <thread>
#include <vector>

#include "stress.h"

using namespace stress;

namespace {

struct Obj {
    void *p;
    size_t n;
    uint64_t seed;
    size_t al; // 0: malloc family; else the alignment it was asked for
};

void check_obj(Errors &err, const Obj &o, const char *where) {
    size_t bad = scheck(o.p, o.n, o.seed);
    if (bad != SIZE_MAX) err.report("%s: object %p (%zu B, seed %llu) corrupt at byte %zu", where, o.p, o.n,
                                    (unsigned long long)o.seed, bad);
    if (a_owns(o.p) != 1) err.report("%s: bobox_owns(%p) != 1 for a live object", where, o.p);
    if (o.al && !aligned_to(o.p, o.al)) err.report("%s: %p lost its alignment %zu", where, o.p, o.al);
}

// One short-lived thread: works through what the previous generation left in `in`, then
// leaves its survivors and new objects in `out`.
void churn_thread(Errors &err, std::vector<Obj> &in, std::vector<Obj> &out, uint64_t seed, int new_objs) {
    Rng r(seed);
    out.clear();
    for (Obj &o : in) {
        check_obj(err, o, "inherited");
        switch (r.below(4)) {
        case 0:
        case 1: // free an object whose owner exited
            if (r.below(2)) a_free(o.p); else a_free_sized(o.p, o.n);
            break;
        case 2: { // realloc it (never for aligned ones: realloc does not keep alignment)
            if (o.al) {
                out.push_back(o);
                break;
            }
            size_t n = mixed_size(r, 2);
            void *q = a_realloc(o.p, n);
            if (!q) {
                err.report("realloc(%p, %zu) failed", o.p, n);
                a_free(o.p);
                break;
            }
            size_t keep = n < o.n ? n : o.n;
            size_t bad = scheck(q, keep, o.seed);
            if (bad != SIZE_MAX) err.report("realloc %zu -> %zu lost byte %zu", o.n, n, bad);
            Obj u{q, n, r.next(), 0};
            sfill(q, n, u.seed);
            out.push_back(u);
            break;
        }
        default: // hand it on to the next generation
            out.push_back(o);
        }
    }
    for (int i = 0; i < new_objs; i++) {
        size_t n = mixed_size(r, 3);
        Obj o{nullptr, n, r.next(), 0};
        switch (r.below(6)) {
        case 0:
            o.p = a_calloc(1, n);
            if (o.p && first_nonzero(o.p, n) != SIZE_MAX) err.report("calloc(%zu) not zeroed", n);
            break;
        case 1:
            o.al = size_t{16} << r.below(14); // 16 B .. 128 KB
            if (a_posix_memalign(&o.p, o.al, n) != 0) o.p = nullptr;
            break;
        case 2:
            o.al = size_t{32} << r.below(8);
            o.p = a_aligned_alloc(o.al, n);
            break;
        default:
            o.p = a_malloc(n);
        }
        if (!o.p) {
            err.report("allocation of %zu B (align %zu) failed", n, o.al);
            continue;
        }
        if (o.al && !aligned_to(o.p, o.al)) err.report("%p not aligned to %zu", o.p, o.al);
        if (a_usable(o.p) < n) err.report("usable size %zu < %zu", a_usable(o.p), n);
        sfill(o.p, n, o.seed);
        // Some die young in their own thread, the rest outlive it.
        if (r.below(4) == 0) {
            check_obj(err, o, "own");
            a_free(o.p);
        } else {
            out.push_back(o);
        }
    }
    int ok = check_heap();
    if (ok != 1) err.report("bobox_check_heap() == %d at the end of a churn thread", ok);
}

} // namespace

TEST_CASE("thread churn: objects freed by later threads after their owners exited", "[stress][churn]") {
    const int kThreads = 6;
    const int kGenerations = 120 / kScale;
    const int kNew = 150;
    Errors err;
    std::vector<std::vector<Obj>> a(kThreads), b(kThreads);
    auto t0 = std::chrono::steady_clock::now();
    size_t max_heaps = 0;
    for (int g = 0; g < kGenerations && err.count == 0; g++) {
        std::vector<std::thread> ts;
        for (int i = 0; i < kThreads; i++) {
            // Thread i of this generation inherits thread (i+g+1)'s objects of the last one,
            // so objects always change thread.
            std::vector<Obj> &in = a[(i + g + 1) % kThreads];
            ts.emplace_back(churn_thread, std::ref(err), std::ref(in), std::ref(b[i]), uint64_t(g) * 977 + i, kNew);
        }
        for (auto &t : ts) t.join();
        std::swap(a, b);
        struct bobox_stats s;
        get_stats(&s);
        if (s.heaps_live + s.heaps_abandoned > max_heaps) max_heaps = s.heaps_live + s.heaps_abandoned;
    }
    INFO(err.summary());
    REQUIRE(err.count == 0);
    // The test thread frees whatever is left (a different thread from every owner).
    size_t left = 0;
    for (auto &v : a)
        for (Obj &o : v) {
            check_obj(err, o, "final");
            a_free(o.p);
            left++;
        }
    INFO(err.summary());
    REQUIRE(err.count == 0);
    REQUIRE(check_heap() == 1);
    // Exited threads' heaps are adopted by the next ones: their number stays bounded by the
    // peak of threads alive at once (plus the test thread and Catch2's), not by the
    // 1000+ threads that ran.
    INFO("heaps (live + abandoned) at most " << max_heaps << "; survivors freed at the end: " << left);
    CHECK(max_heaps <= 4 * kThreads + 8);
    WARN("thread churn: " << kGenerations * kThreads << " threads in " << seconds_since(t0) << " s");
}
