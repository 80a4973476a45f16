// Thread tests: cross-thread frees, thousands of short-lived threads (bounded RSS), fork while
// other threads allocate, and malloc/free from pthread-key destructors, C++ thread_local
// destructors and atexit handlers.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <set>
#include <cstdarg>
#include <cstdio>
#include <deque>
#include <iostream>
#include <memory>
#include <mutex>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <vector>

#include "api.h"

using namespace api;

namespace {


struct Item {
    void *p;
    size_t n;
    uint64_t seed;
    size_t al = 0;   // mixed stress: 0 malloc/calloc/realloc, 1 posix_memalign, else aligned_alloc's alignment
};

size_t mixed_size(Rng &r) {
    size_t k = r.below(1000);
    if (k < 780) return r.below(1025);                    // small
    if (k < 950) return 1024 + r.below(kSmallMax);         // small, larger classes
    if (k < 995) return kSmallMax + r.below(200000);       // medium
    return kMediumMax + 1 + r.below(MB);                   // large
}

} // namespace

// ---------------------------------------------------------------------------------------------
TEST_CASE("cross-thread frees: A allocates and fills, B verifies and frees", "[api][threads]") {
    constexpr int T = 4, ROUNDS = 150, BATCH = 64;
    struct Inbox {
        std::mutex mu;
        std::condition_variable cv;
        std::deque<std::vector<Item>> q;
    };
    Inbox inbox[T];
    Errors err;
    std::atomic<long> freed{0}, reallocs{0};

    auto worker = [&](int id) {
        Rng rng(1000 + id);
        Inbox &out = inbox[(id + 1) % T];
        Inbox &in = inbox[id];
        int received = 0;
        auto consume = [&](std::vector<Item> &batch) {
            for (Item &it : batch) {
                size_t bad = check(it.p, it.n, it.seed);
                if (bad != SIZE_MAX)
                    err.report("thread %d: received object %p size %zu corrupt at byte %zu", id, it.p, it.n, bad);
                if (rng.below(8) == 0) {   // realloc an object owned by another thread's heap
                    size_t nn = mixed_size(rng);
                    void *q = a_realloc(it.p, nn);
                    if (nn != 0 && !q) { err.report("realloc(%zu) of a remote object failed", nn); continue; }
                    if (nn == 0) { reallocs++; continue; }   // realloc(p, 0) freed it
                    bad = check(q, nn < it.n ? nn : it.n, it.seed);
                    if (bad != SIZE_MAX)
                        err.report("thread %d: remote realloc %zu -> %zu lost byte %zu", id, it.n, nn, bad);
                    a_free(q);
                    reallocs++;
                } else {
                    a_free(it.p);
                }
                freed++;
            }
        };
        // objects the thread keeps and frees itself, so its blocks change lists while other
        // threads free into them
        Item mine[64] = {};
        for (int r = 0; r < ROUNDS; r++) {
            std::vector<Item> batch;
            batch.reserve(BATCH);
            for (int i = 0; i < BATCH; i++) {
                for (int l = 0; l < 2; l++) {
                    Item &m = mine[rng.below(64)];
                    if (m.p && check(m.p, m.n, m.seed) != SIZE_MAX) err.report("thread %d: own object corrupt", id);
                    a_free(m.p);
                    m.n = rng.below(300);
                    m.p = a_malloc(m.n);
                    m.seed = rng.next();
                    fill(m.p, m.n, m.seed);
                }
                size_t n = mixed_size(rng);
                void *p = a_malloc(n);
                if (!p) { err.report("malloc(%zu) failed", n); continue; }
                uint64_t sd = (uint64_t(id) << 40) ^ (uint64_t(r) << 20) ^ uint64_t(i);
                fill(p, n, sd);
                batch.push_back({p, n, sd});
            }
            {
                std::lock_guard<std::mutex> g(out.mu);
                out.q.push_back(std::move(batch));
            }
            out.cv.notify_one();
            // drain whatever has arrived
            for (;;) {
                std::vector<Item> got;
                {
                    std::lock_guard<std::mutex> g(in.mu);
                    if (in.q.empty()) break;
                    got = std::move(in.q.front());
                    in.q.pop_front();
                }
                consume(got);
                received++;
            }
        }
        for (Item &m : mine) a_free(m.p);
        while (received < ROUNDS) {
            std::vector<Item> got;
            {
                std::unique_lock<std::mutex> g(in.mu);
                in.cv.wait(g, [&] { return !in.q.empty(); });
                got = std::move(in.q.front());
                in.q.pop_front();
            }
            consume(got);
            received++;
        }
    };
    std::vector<std::thread> th;
    for (int i = 0; i < T; i++) th.emplace_back(worker, i);
    for (auto &t : th) t.join();
    INFO("first error: " << err.first);
    REQUIRE(err.count.load() == 0);
    REQUIRE(freed.load() + 0 >= long(T) * ROUNDS * BATCH - reallocs.load());
    for (auto &b : inbox) REQUIRE(b.q.empty());
}

// ---------------------------------------------------------------------------------------------
TEST_CASE("remote frees race with the owner's own malloc/free", "[api][threads]") {
    // Producers allocate objects as fast as they can, free half of them themselves (so their
    // blocks keep changing lists), and hand the other half one by one to consumers that free
    // them: remote frees land in blocks the owner is working on.
    // Section "small": tiny objects; section "medium": 16 KB .. 136 KB.
    bool medium = false;
    SECTION("small") { medium = false; }
    SECTION("medium") { medium = true; }
    constexpr int PRODUCERS = 3, CONSUMERS = 3;
    // Checked mode fills and verifies each medium object at free (76 KB on average): a tenth
    // of them still races, and the case took 90 s of the checked suite's 170.
    const int PER_PRODUCER = medium ? (checked_mode() ? 20000 : 200000) : 2000000;
    const size_t lo = medium ? kSmallMax : 16, span = medium ? 120000 : 200;
    constexpr unsigned QN = 4096;
    struct Ring {
        std::mutex mu;
        std::condition_variable cv;
        void *q[QN];
        unsigned head = 0, tail = 0;
        bool done = false;
    } ring;
    Errors err;
    auto producer = [&](int id) {
        Rng rng(id + 300);
        void *mine[64] = {};
        for (int i = 0; i < PER_PRODUCER; i++) {
            size_t n = lo + rng.below(span);
            uint64_t *p = static_cast<uint64_t *>(a_malloc(n));
            if (!p) { err.report("malloc(%zu) failed", n); return; }
            p[0] = reinterpret_cast<uintptr_t>(p) ^ 0x5a5a5a5a5a5a5a5aull;   // tag checked by the consumer
            p[1] = n;
            if (i & 1) {
                int k = static_cast<int>(rng.below(64));
                a_free(mine[k]);
                mine[k] = p;
                continue;
            }
            std::unique_lock<std::mutex> g(ring.mu);
            ring.cv.wait(g, [&] { return ring.head - ring.tail < QN; });
            ring.q[ring.head++ % QN] = p;
            g.unlock();
            ring.cv.notify_all();
        }
        for (void *m : mine) a_free(m);
    };
    auto consumer = [&] {
        for (;;) {
            std::unique_lock<std::mutex> g(ring.mu);
            ring.cv.wait(g, [&] { return ring.head != ring.tail || ring.done; });
            if (ring.head == ring.tail) return;
            uint64_t *p = static_cast<uint64_t *>(ring.q[ring.tail++ % QN]);
            g.unlock();
            ring.cv.notify_all();
            if (p[0] != (reinterpret_cast<uintptr_t>(p) ^ 0x5a5a5a5a5a5a5a5aull) || p[1] < lo || p[1] >= lo + span)
                err.report("object %p handed over with a corrupt header", static_cast<void *>(p));
            a_free(p);
        }
    };
    for (int rep = 0; rep < 3; rep++) {   // a narrow window: give it a few chances
        ring.done = false;
        std::vector<std::thread> prod, cons;
        for (int i = 0; i < PRODUCERS; i++) prod.emplace_back(producer, i + rep * PRODUCERS);
        for (int i = 0; i < CONSUMERS; i++) cons.emplace_back(consumer);
        for (auto &t : prod) t.join();
        {
            std::lock_guard<std::mutex> g(ring.mu);
            ring.done = true;
        }
        ring.cv.notify_all();
        for (auto &t : cons) t.join();
        INFO("round " << rep << ", first error: " << err.first);
        REQUIRE(err.count.load() == 0);
    }
}

// ---------------------------------------------------------------------------------------------
TEST_CASE("mixed API stress: objects migrate between threads through shared slots", "[api][threads]") {
    // Every operation takes a random slot's object (whoever allocated it), verifies it, and
    // frees it, reallocs it or hands it back; then allocates with a random API call.
    constexpr int T = 4, OPS = 20000, SLOTS = 512;
    struct Slot {
        std::atomic<Item *> item{nullptr};
    };
    static Slot slots[SLOTS];
    Errors err;
    auto worker = [&](int id) {
        Rng rng(id * 7 + 3);
        for (int op = 0; op < OPS; op++) {
            Slot &sl = slots[rng.below(SLOTS)];
            Item *it = sl.item.exchange(nullptr);
            if (it) {
                size_t bad = check(it->p, it->n, it->seed);
                if (bad != SIZE_MAX) err.report("slot object %p size %zu corrupt at %zu", it->p, it->n, bad);
                if (rng.below(4) == 0) {          // realloc (possibly another thread's object)
                    size_t nn = 1 + mixed_size(rng) / (rng.below(2) ? 1 : 16);
                    void *q = a_realloc(it->p, nn);
                    if (!q) { err.report("realloc to %zu failed", nn); a_free(it->p); a_free(it); continue; }
                    bad = check(q, std::min(nn, it->n), it->seed);
                    if (bad != SIZE_MAX) err.report("realloc %zu -> %zu lost byte %zu", it->n, nn, bad);
                    it->p = q;
                    it->n = nn;
                    it->al = 0;
                    it->seed = rng.next();
                    fill(q, nn, it->seed);
                    Item *prev = sl.item.exchange(it);
                    if (prev) { a_free(prev->p); a_free(prev); }
                    continue;
                }
                if (rng.below(3) != 0) a_free(it->p);
                else if (it->al == 0) a_free_sized(it->p, it->n);
                else if (it->al == 1) a_free(it->p);
                else a_free_aligned_sized(it->p, it->al, it->n);
                a_free(it);
            }
            size_t n = mixed_size(rng);
            void *p = nullptr;
            size_t al = 0;
            switch (rng.below(6)) {
            case 0: p = a_calloc(1, n);
                if (p && first_nonzero(p, n) != SIZE_MAX) err.report("calloc(%zu) not zeroed", n);
                break;
            case 1: al = size_t(16) << rng.below(12); p = a_aligned_alloc(al, n); break;
            case 2: al = 1; if (a_posix_memalign(&p, size_t(8) << rng.below(10), n) != 0) p = nullptr; break;
            default: p = a_malloc(n); break;
            }
            if (!p) { err.report("allocation of %zu failed", n); continue; }
            Item *ni = static_cast<Item *>(a_malloc(sizeof(Item)));
            *ni = {p, n, rng.next(), al};
            fill(p, n, ni->seed);
            Item *prev = sl.item.exchange(ni);
            if (prev) {   // someone filled the slot meanwhile: free theirs
                if (check(prev->p, prev->n, prev->seed) != SIZE_MAX) err.report("displaced object corrupt");
                a_free(prev->p);
                a_free(prev);
            }
        }
    };
    std::vector<std::thread> th;
    for (int i = 0; i < T; i++) th.emplace_back(worker, i);
    for (auto &t : th) t.join();
    for (auto &sl : slots) {
        Item *it = sl.item.exchange(nullptr);
        if (!it) continue;
        if (check(it->p, it->n, it->seed) != SIZE_MAX) err.report("final object corrupt");
        a_free(it->p);
        a_free(it);
    }
    INFO("first error: " << err.first);
    REQUIRE(err.count.load() == 0);
}

// ---------------------------------------------------------------------------------------------
TEST_CASE("calloc zeroes memory dirtied and freed by another thread", "[api][threads][calloc]") {
    const size_t sizes[] = {16, 100, 1000, 8000, kSmallMax, 30000, 200000, kMediumMax, 700000};
    Errors err;
    for (int round = 0; round < 20; round++) {
        // this thread allocates, another dirties and frees (remote frees into our heap)
        std::vector<Item> v;
        for (size_t s : sizes)
            for (int k = 0; k < (s > kSmallMax ? 2 : 20); k++) v.push_back({a_malloc(s), s, 0});
        std::thread([&] {
            for (Item &it : v) {
                memset(it.p, 0xAB, a_usable(it.p));
                a_free(it.p);
            }
        }).join();
        // now calloc the same sizes here, several times over
        for (int rep = 0; rep < 3; rep++) {
            std::vector<void *> got;
            for (const Item &it : v) {
                void *q = rep & 1 ? a_calloc(it.n, 1) : a_calloc(1, it.n);
                if (!q) { err.report("calloc(%zu) failed", it.n); continue; }
                size_t bad = first_nonzero(q, it.n);
                if (bad != SIZE_MAX) err.report("calloc(%zu) round %d: byte %zu not zero", it.n, round, bad);
                got.push_back(q);
            }
            for (void *q : got) { memset(q, 0xCD, 16); a_free(q); }
        }
    }
    INFO("first error: " << err.first);
    REQUIRE(err.count.load() == 0);
}

// ---------------------------------------------------------------------------------------------
TEST_CASE("2000 short-lived threads; objects freed after their thread exited; RSS bounded", "[api][threads]") {
    constexpr int WAVES = 250, PER_WAVE = 8, OBJS = 40;
    Errors err;
    // objs[w % 2][t]: objects of the previous wave, freed half by the next wave's threads
    // (remote frees into the heap of an exited thread) and half by the main thread.
    std::vector<std::vector<Item>> slots[2];
    for (auto &s : slots) s.assign(PER_WAVE, {});
    size_t rss_200 = 0, rss_end = 0;

    auto body = [&](int wave, int t) {
        Rng rng(wave * 64 + t + 1);
        std::vector<Item> &mine = slots[wave & 1][t];
        std::vector<Item> &prev = slots[(wave + 1) & 1][t];
        // free the even-indexed objects of the previous wave's thread t
        for (size_t i = 0; i < prev.size(); i += 2) {
            size_t bad = check(prev[i].p, prev[i].n, prev[i].seed);
            if (bad != SIZE_MAX) err.report("wave %d: object of exited thread corrupt at %zu", wave, bad);
            a_free(prev[i].p);
            prev[i].p = nullptr;
        }
        // churn: the thread's heap gets blocks of several classes
        for (int i = 0; i < 100; i++) {
            size_t n = rng.below(3000);
            void *p = a_malloc(n);
            fill(p, n, i);
            a_free(p);
        }
        for (int i = 0; i < OBJS; i++) {
            size_t n = (i == 0) ? 100000 + rng.below(300000) : (i == 1 && wave % 4 == 0) ? 600000 : rng.below(4000);
            void *p = a_malloc(n);
            if (!p) { err.report("malloc(%zu) failed in wave %d", n, wave); continue; }
            uint64_t sd = rng.next();
            fill(p, n, sd);
            mine[i] = {p, n, sd};
        }
    };

    for (int w = 0; w < WAVES; w++) {
        for (auto &v : slots[w & 1]) v.assign(OBJS, {nullptr, 0, 0});
        std::vector<std::thread> th;
        for (int t = 0; t < PER_WAVE; t++) th.emplace_back(body, w, t);
        for (auto &t : th) t.join();
        // main thread frees the odd-indexed objects of the previous wave (owner thread is gone)
        for (auto &v : slots[(w + 1) & 1]) {
            for (size_t i = 1; i < v.size(); i += 2) {
                if (!v[i].p) continue;
                size_t bad = check(v[i].p, v[i].n, v[i].seed);
                if (bad != SIZE_MAX) err.report("wave %d: object corrupt at %zu (main)", w, bad);
                a_free(v[i].p);
                v[i].p = nullptr;
            }
            v.clear();
        }
        if (w == 24) rss_200 = rss_bytes();            // after the first 200 threads
        if (w == WAVES - 1) rss_end = rss_bytes();     // same point of the cycle, 2000 threads
    }
    for (auto &s : slots)
        for (auto &v : s)
            for (auto &it : v)
                if (it.p) a_free(it.p);
    INFO("first error: " << err.first);
    REQUIRE(err.count.load() == 0);
    const size_t margin = 32 * MB;
    INFO("RSS after 200 threads " << rss_200 / 1024 << " KB, after 2000 threads " << rss_end / 1024 << " KB");
    REQUIRE(rss_200 > 0);
    REQUIRE(rss_end < rss_200 + margin);
    if (!foreign_allowed() && get_stats_ptr()) {
        struct bobox_stats st;
        memset(&st, 0, sizeof st);
        get_stats_ptr()(&st);
        INFO("heaps_live " << st.heaps_live << " heaps_abandoned " << st.heaps_abandoned
             << " mapped " << st.mapped_bytes << " superblocks_in_use " << st.superblocks_in_use);
        // heaps of exited threads must be reused or released, not pile up per thread
        CHECK(st.heaps_live + st.heaps_abandoned < 1000);
    }
}

// ---------------------------------------------------------------------------------------------
TEST_CASE("300 threads alive at once; their objects outlive them", "[api][threads]") {
    constexpr int N = 300, OBJS = 30;
    std::vector<std::vector<Item>> objs(N, std::vector<Item>(OBJS, Item{nullptr, 0, 0}));
    Errors err;
    std::mutex mu;
    std::condition_variable cv;
    int arrived = 0;
    auto body = [&](int id) {
        Rng rng(id + 9000);
        for (int i = 0; i < OBJS; i++) {
            size_t n = i == 0 ? kSmallMax + rng.below(100000) : rng.below(2000);
            void *p = a_malloc(n);
            if (!p) { err.report("malloc(%zu) failed", n); continue; }
            uint64_t sd = rng.next();
            fill(p, n, sd);
            objs[id][i] = {p, n, sd};
        }
        // everyone alive at the same time
        std::unique_lock<std::mutex> g(mu);
        if (++arrived == N) cv.notify_all();
        cv.wait(g, [&] { return arrived == N; });
        g.unlock();
        // free the neighbour's even objects (remote frees while the owner is alive)
        auto &nb = objs[(id + 1) % N];
        for (int i = 0; i < OBJS; i += 2) {
            if (!nb[i].p) continue;
            if (check(nb[i].p, nb[i].n, nb[i].seed) != SIZE_MAX) err.report("thread %d: neighbour object corrupt", id);
            a_free(nb[i].p);
            nb[i].p = nullptr;
        }
    };
    std::vector<std::thread> th;
    th.reserve(N);
    for (int i = 0; i < N; i++) th.emplace_back(body, i);
    for (auto &t : th) t.join();
    // the odd objects outlived their threads
    for (auto &v : objs)
        for (auto &it : v) {
            if (!it.p) continue;
            if (check(it.p, it.n, it.seed) != SIZE_MAX) err.report("object of an exited thread corrupt");
            a_free(it.p);
        }
    INFO("first error: " << err.first);
    REQUIRE(err.count.load() == 0);
}

// ---------------------------------------------------------------------------------------------
namespace {
constexpr int kSlots = 64;
std::atomic<void *> g_slot[kSlots];
std::atomic<size_t> g_slot_size[kSlots];

// Child side of the fork test; returns an exit code (0 = fine).
int fork_child(void *parent_obj, size_t parent_n, uint64_t parent_seed) {
    alarm(10);   // a deadlock shows up as SIGALRM
    if (check(parent_obj, parent_n, parent_seed) != SIZE_MAX) return 10;
    a_free(parent_obj);
    // objects allocated by the (now non-existent) background threads
    for (int i = 0; i < kSlots; i++) {
        void *p = g_slot[i].load();
        size_t n = g_slot_size[i].load();
        if (p && check(p, n, uint64_t(i) + 5000) == SIZE_MAX) a_free(p);
    }
    Rng rng(getpid());
    std::vector<Item> v;
    v.reserve(400);
    for (int i = 0; i < 400; i++) {
        size_t n = mixed_size(rng);
        void *p = (i % 5 == 0) ? a_calloc(1, n) : a_malloc(n);
        if (!p) return 11;
        if (i % 5 == 0 && first_nonzero(p, n) != SIZE_MAX) return 12;
        fill(p, n, i);
        v.push_back({p, n, uint64_t(i)});
    }
    for (auto &it : v) {
        if (check(it.p, it.n, it.seed) != SIZE_MAX) return 13;
        a_free(it.p);
    }
    // a new thread in the child allocates too
    pthread_t th;
    std::atomic<int> ok{0};
    auto fn = [](void *arg) -> void * {
        for (int i = 0; i < 200; i++) {
            void *p = a_malloc(size_t(i) * 97 % 40000);
            memset(p, 1, size_t(i) * 97 % 40000);
            a_free(p);
        }
        static_cast<std::atomic<int> *>(arg)->store(1);
        return nullptr;
    };
    if (pthread_create(&th, nullptr, fn, &ok) != 0) return 14;
    pthread_join(th, nullptr);
    if (ok.load() != 1) return 15;
    return 0;
}
} // namespace

TEST_CASE("fork while other threads allocate: children can malloc/free and exit", "[api][threads][fork]") {
    constexpr int FORKS = 40;
    std::atomic<bool> stop{false};
    for (auto &s : g_slot) s.store(nullptr);
    auto churn = [&](int id) {
        Rng rng(id + 77);
        while (!stop.load(std::memory_order_relaxed)) {
            int k = static_cast<int>(rng.below(kSlots));
            void *old = g_slot[k].exchange(nullptr);
            if (old) a_free(old);
            size_t n = mixed_size(rng);
            void *p = a_malloc(n);
            fill(p, n, uint64_t(k) + 5000);
            g_slot_size[k].store(n);
            void *prev = g_slot[k].exchange(p);
            if (prev) a_free(prev);
            // plus short-lived objects
            void *t = a_malloc(rng.below(600));
            a_free(t);
            if (rng.below(64) == 0) { void *l = a_malloc(2 * MB); memset(l, 3, 4096); a_free(l); }
        }
    };
    std::vector<std::thread> th;
    for (int i = 0; i < 3; i++) th.emplace_back(churn, i);
    std::vector<std::string> failures;
    std::cout.flush();
    fflush(nullptr);
    for (int f = 0; f < FORKS; f++) {
        size_t n = 1000 + size_t(f) * 7919;
        void *obj = a_malloc(n);
        fill(obj, n, f);
        std::this_thread::sleep_for(std::chrono::microseconds(500 + f * 50));
        pid_t pid = fork();
        if (pid == 0) _exit(fork_child(obj, n, f));
        if (pid < 0) { failures.push_back("fork failed"); a_free(obj); break; }
        a_free(obj);
        int status = 0;
        pid_t r = 0;
        auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        while ((r = waitpid(pid, &status, WNOHANG)) == 0 && std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        if (r == 0) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            failures.push_back("fork " + std::to_string(f) + ": child hung (killed after 30 s)");
        } else if (WIFSIGNALED(status)) {
            failures.push_back("fork " + std::to_string(f) + ": child killed by signal " +
                               std::to_string(WTERMSIG(status)) +
                               (WTERMSIG(status) == SIGALRM ? " (SIGALRM: deadlock in the child)" : ""));
        } else if (WEXITSTATUS(status) != 0) {
            failures.push_back("fork " + std::to_string(f) + ": child exit code " + std::to_string(WEXITSTATUS(status)));
        }
    }
    stop = true;
    for (auto &t : th) t.join();
    for (auto &s : g_slot) { void *p = s.exchange(nullptr); if (p) a_free(p); }
    for (auto &m : failures) UNSCOPED_INFO(m);
    REQUIRE(failures.empty());
}

// ---------------------------------------------------------------------------------------------
namespace {
std::atomic<int> g_key_calls{0}, g_key_errors{0};
pthread_key_t g_key;

void key_destructor(void *v) {
    Item *it = static_cast<Item *>(v);
    if (check(it->p, it->n, it->seed) != SIZE_MAX) g_key_errors++;
    a_free(it->p);
    bool again = it->seed < 1000;   // first round: allocate again and re-arm the key
    a_free(it);
    // malloc/free of all ranges from inside the destructor
    for (size_t n : {size_t(10), size_t(5000), size_t(100000), size_t(700000)}) {
        void *p = a_malloc(n);
        if (!p) { g_key_errors++; continue; }
        fill(p, n, n);
        if (check(p, n, n) != SIZE_MAX) g_key_errors++;
        a_free(p);
    }
    if (again) {
        Item *nx = static_cast<Item *>(a_malloc(sizeof(Item)));
        nx->n = 3000;
        nx->p = a_malloc(nx->n);
        nx->seed = 5000;
        fill(nx->p, nx->n, nx->seed);
        pthread_setspecific(g_key, nx);   // destructor runs again in the next iteration
    }
    g_key_calls++;
}

std::atomic<int> g_tls_dtors{0}, g_tls_errors{0};
struct TlsHolder {
    Item bufs[6];
    TlsHolder() {
        for (int i = 0; i < 6; i++) {
            size_t n = size_t(1) << (3 * i + 2);   // 4 B .. 128 KB
            bufs[i] = {a_malloc(n), n, uint64_t(i) + 31};
            fill(bufs[i].p, n, bufs[i].seed);
        }
    }
    ~TlsHolder() {
        for (auto &b : bufs) {
            if (check(b.p, b.n, b.seed) != SIZE_MAX) g_tls_errors++;
            a_free(b.p);
        }
        for (size_t n : {size_t(64), size_t(20000), size_t(600000)}) {
            void *p = a_calloc(1, n);
            if (!p || first_nonzero(p, n) != SIZE_MAX) g_tls_errors++;
            a_free(p);
        }
        g_tls_dtors++;
    }
};
thread_local TlsHolder *tls_touch_dummy = nullptr;
TlsHolder &tls_holder() {
    thread_local TlsHolder h;
    return h;
}
} // namespace

TEST_CASE("malloc/free from pthread-key destructors", "[api][threads][dtor]") {
    REQUIRE(pthread_key_create(&g_key, key_destructor) == 0);
    g_key_calls = 0;
    g_key_errors = 0;
    constexpr int N = 48;
    for (int round = 0; round < N / 8; round++) {
        std::vector<std::thread> th;
        for (int i = 0; i < 8; i++)
            th.emplace_back([] {
                // allocations before, so the thread has a heap of its own
                void *warm = a_malloc(200);
                Item *it = static_cast<Item *>(a_malloc(sizeof(Item)));
                it->n = 700;
                it->p = a_malloc(it->n);
                it->seed = 7;
                fill(it->p, it->n, it->seed);
                pthread_setspecific(g_key, it);
                a_free(warm);
            });
        for (auto &t : th) t.join();
    }
    pthread_key_delete(g_key);
    REQUIRE(g_key_errors.load() == 0);
    REQUIRE(g_key_calls.load() == 2 * N);   // each thread: first call + re-armed second call
}

TEST_CASE("malloc/free from C++ thread_local destructors", "[api][threads][dtor]") {
    g_tls_dtors = 0;
    g_tls_errors = 0;
    constexpr int N = 48;
    for (int round = 0; round < N / 8; round++) {
        std::vector<std::thread> th;
        for (int i = 0; i < 8; i++)
            th.emplace_back([] {
                TlsHolder &h = tls_holder();
                tls_touch_dummy = &h;
                void *p = a_malloc(1234);
                a_free(p);
            });
        for (auto &t : th) t.join();
    }
    REQUIRE(g_tls_errors.load() == 0);
    REQUIRE(g_tls_dtors.load() == N);
}

namespace {
int g_exit_pipe = -1;
Item g_exit_obj;
void exit_handler() {
    char ok = 'A';
    if (check(g_exit_obj.p, g_exit_obj.n, g_exit_obj.seed) != SIZE_MAX) ok = 'c';
    a_free(g_exit_obj.p);
    for (size_t n : {size_t(1), size_t(3000), size_t(100000), size_t(2 * MB)}) {
        void *p = a_malloc(n);
        if (!p) { ok = 'm'; continue; }
        fill(p, n, n);
        void *q = a_realloc(p, n * 2 + 1);
        if (!q || check(q, n, n) != SIZE_MAX) ok = 'r';
        a_free(q);
    }
    if (write(g_exit_pipe, &ok, 1) != 1) _exit(3);
}
struct ExitTls {
    void *p = nullptr;
    ~ExitTls() {
        char ok = 'T';
        if (!p || check(p, 50000, 99) != SIZE_MAX) ok = 't';
        a_free(p);
        void *q = a_malloc(777);
        a_free(q);
        if (write(g_exit_pipe, &ok, 1) != 1) _exit(4);
    }
};
} // namespace

TEST_CASE("malloc/free from atexit handlers and main-thread TLS destructors at exit()", "[api][threads][dtor]") {
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    std::cout.flush();
    fflush(nullptr);
    pid_t pid = fork();
    if (pid == 0) {
        alarm(10);
        close(fds[0]);
        g_exit_pipe = fds[1];
        g_exit_obj = {a_malloc(40000), 40000, 1234};
        fill(g_exit_obj.p, g_exit_obj.n, g_exit_obj.seed);
        atexit(exit_handler);
        static thread_local ExitTls tls;
        tls.p = a_malloc(50000);
        fill(tls.p, 50000, 99);
        // a thread that finished before exit, with objects still live in the main thread
        void *from_thread = nullptr;
        std::thread([&] { from_thread = a_malloc(12345); fill(from_thread, 12345, 5); }).join();
        if (check(from_thread, 12345, 5) != SIZE_MAX) _exit(5);
        a_free(from_thread);
        exit(0);   // runs TLS destructors, then atexit handlers
    }
    REQUIRE(pid > 0);
    close(fds[1]);
    std::string got;
    char c;
    while (read(fds[0], &c, 1) == 1) got += c;
    close(fds[0]);
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    INFO("child status " << status << ", pipe \"" << got << "\" (expected TLS 'T' and atexit 'A')");
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);
    REQUIRE(got.find('T') != std::string::npos);
    REQUIRE(got.find('A') != std::string::npos);
    REQUIRE(got.size() == 2);
}

// Numbered phases that the threads of a test wait for and advance.
struct Phases {
    std::mutex mu;
    std::condition_variable cv;
    int phase = 0;
    void wait_for(int p) {
        std::unique_lock<std::mutex> g(mu);
        cv.wait(g, [&] { return phase >= p; });
    }
    void advance(int p) {
        std::lock_guard<std::mutex> g(mu);
        phase = p;
        cv.notify_all();
    }
};

// ---------------------------------------------------------------------------------------------
TEST_CASE("remote frees past the owner's inbox while it sleeps: every object comes back", "[api][threads][remote]") {
    // Another thread frees all of them while their owner waits: more batches than the
    // owner's inbox holds, so they also take the list. Once awake, the owner's mallocs of
    // the same sizes must reuse that memory, not map more.
    constexpr int N = 60000;
    std::vector<void *> objs(N);
    std::vector<size_t> sizes(N);
    std::mutex mu;
    std::condition_variable cv;
    int phase = 0;
    std::atomic<long> bad{0};
    size_t mapped_before = 0, mapped_after = 0;
    get_stats_fn stats = get_stats_ptr();
    if (!stats && !foreign_allowed()) FAIL("bobox_get_stats missing");
    std::thread owner([&] { a_own_heap();
        Rng rng(77);
        for (int i = 0; i < N; i++) {
            size_t n = i % 300 == 0 ? kSmallMax + rng.below(100000) : 16 + rng.below(2000);
            auto *p = static_cast<unsigned char *>(a_malloc(n));
            if (!p) { bad++; continue; }
            memset(p, i & 0xff, n < 64 ? n : 64);
            objs[i] = p;
            sizes[i] = n;
        }
        {
            std::unique_lock<std::mutex> g(mu);
            phase = 1;
            cv.notify_all();
            cv.wait(g, [&] { return phase == 2; });
        }
        struct bobox_stats s {};
        if (stats) stats(&s);
        mapped_before = s.mapped_bytes;
        for (int i = 0; i < N; i++) {
            objs[i] = a_malloc(sizes[i]);
            if (!objs[i]) bad++;
            else memset(objs[i], 1, sizes[i] < 64 ? sizes[i] : 64);
        }
        if (stats) stats(&s);
        mapped_after = s.mapped_bytes;
        for (void *p : objs) a_free(p);
    });
    {
        std::unique_lock<std::mutex> g(mu);
        cv.wait(g, [&] { return phase == 1; });
    }
    for (int i = 0; i < N; i++) {
        auto *p = static_cast<unsigned char *>(objs[i]);
        if (!p) continue;
        if (p[0] != (i & 0xff) || p[sizes[i] < 64 ? sizes[i] - 1 : 63] != (i & 0xff)) bad++;
        a_free(p);
    }
    {
        std::lock_guard<std::mutex> g(mu);
        phase = 2;
    }
    cv.notify_all();
    owner.join();
    REQUIRE(bad.load() == 0);
    INFO("mapped before the second round " << mapped_before << ", after " << mapped_after);
    if (stats) REQUIRE(mapped_after <= mapped_before + 16 * 1024 * 1024);
}

// An open-addressing set of addresses of a fixed capacity, written whole when made.
class AddressSet {
    static constexpr uintptr_t kGone = 1; // a deleted entry: probes go on past it
    std::vector<uintptr_t> slots_;
    size_t size_ = 0;
    size_t first(const void *p) const { return (uintptr_t(p) >> 4) * 0x9e3779b97f4a7c15ull >> 20 & (slots_.size() - 1); }

  public:
    explicit AddressSet(size_t capacity) : slots_(capacity, 0) {}
    size_t size() const { return size_; }
    bool insert(const void *p) { // false if present
        size_t i = first(p);
        while (slots_[i] && slots_[i] != uintptr_t(p)) i = (i + 1) & (slots_.size() - 1);
        if (slots_[i]) return false;
        slots_[i] = uintptr_t(p);
        size_++;
        return true;
    }
    void erase(const void *p) {
        for (size_t i = first(p); slots_[i]; i = (i + 1) & (slots_.size() - 1))
            if (slots_[i] == uintptr_t(p)) {
                slots_[i] = kGone;
                size_--;
                return;
            }
    }
};

// ---------------------------------------------------------------------------------------------
TEST_CASE("producer -> consumer in bulk: contents survive, no object twice, memory returns", "[api][threads][remote]") {
    // Lever and Boreham's shape (bench/bulkpc.c): two threads allocate batches of 4,096
    // objects of 64 B and fill them; two others free them in allocation order, so whole
    // runs of a block go home together (remote.h). Every object must reach its consumer as
    // written, no address may be handed out while it is still in flight, and once the
    // threads are gone the memory must go back.
    constexpr int BATCH = 4096, STACK_MAX = 100, PRODUCERS = 2, CONSUMERS = 2;
    const int batches = 60;
    struct Batch { uint64_t tag; void *obj[BATCH]; };
    std::mutex mu, live_mu;
    std::condition_variable not_empty, not_full;
    std::vector<Batch *> stack;
    // Addresses in flight, in a table made and written before RSS is first read: a node-based
    // set would allocate from the test's own allocator (glibc, or ASan's with its quarantine),
    // whose memory would count as if bobox had kept it.
    AddressSet live(size_t(1) << 21);
    int producers_left = PRODUCERS;
    std::atomic<long> bad{0}, twice{0}, freed{0};
    a_malloc_trim(0);
    size_t rss_start = rss_bytes();
    std::atomic<size_t> rss_peak{0};
    std::vector<std::thread> ts;
    for (int p = 0; p < PRODUCERS; p++)
        ts.emplace_back([&, p] { a_own_heap();
            for (int b = 0; b < batches; b++) {
                auto *bt = static_cast<Batch *>(a_malloc(sizeof(Batch)));
                if (!bt) { bad++; break; }
                bt->tag = (uint64_t)p << 32 | (uint64_t)b << 12;
                for (int j = 0; j < BATCH; j++) {
                    auto *o = static_cast<uint64_t *>(a_malloc(64));
                    if (!o) { bad++; o = nullptr; }
                    else for (int k = 0; k < 8; k++) o[k] = (bt->tag + (uint64_t)j) * 8 + (uint64_t)k;
                    bt->obj[j] = o;
                }
                {
                    std::lock_guard<std::mutex> g(live_mu);
                    for (void *o : bt->obj) if (o && !live.insert(o)) twice++;
                }
                std::unique_lock<std::mutex> g(mu);
                not_full.wait(g, [&] { return stack.size() < STACK_MAX; });
                stack.push_back(bt);
                if (b % 8 == 0) rss_peak = std::max(rss_peak.load(), rss_bytes());
                not_empty.notify_one();
            }
            std::lock_guard<std::mutex> g(mu);
            if (--producers_left == 0) not_empty.notify_all();
        });
    for (int c = 0; c < CONSUMERS; c++)
        ts.emplace_back([&] { a_own_heap();
            for (;;) {
                Batch *bt;
                {
                    std::unique_lock<std::mutex> g(mu);
                    not_empty.wait(g, [&] { return !stack.empty() || producers_left == 0; });
                    if (stack.empty()) break;
                    bt = stack.back();
                    stack.pop_back();
                    not_full.notify_one();
                }
                {
                    std::lock_guard<std::mutex> g(live_mu);
                    for (void *o : bt->obj) if (o) live.erase(o);
                }
                for (int j = 0; j < BATCH; j++) {
                    auto *o = static_cast<uint64_t *>(bt->obj[j]);
                    if (!o) continue;
                    for (int k = 0; k < 8; k++)
                        if (o[k] != (bt->tag + (uint64_t)j) * 8 + (uint64_t)k) { bad++; break; }
                    a_free(o);
                    freed++;
                }
                a_free(bt);
            }
        });
    for (auto &t : ts) t.join();
    REQUIRE(bad.load() == 0);
    REQUIRE(twice.load() == 0);
    REQUIRE(freed.load() == (long)PRODUCERS * batches * BATCH);
    REQUIRE(live.size() == 0);
    a_malloc_trim(0);
    size_t rss_end = rss_bytes();
    INFO("RSS at the start " << rss_start / 1024 << " KB, at most " << rss_peak / 1024
                             << " KB, after the run and malloc_trim " << rss_end / 1024 << " KB");
    // 31 MB of objects went through: a run that never reached its owner keeps its block.
    if (get_stats_ptr()) REQUIRE(rss_end <= rss_start + 8 * MB);
}

// ---------------------------------------------------------------------------------------------
TEST_CASE("a thread keeps at most 2 MB of other heaps' objects: the rest go home at once", "[api][threads][remote]") {
    // The keeper allocates every size from 512 B to 2 KB, then frees about 10 MB of the owner's
    // objects of those sizes; the limits of their 23 size classes add up to 6 MB. Its next
    // mallocs of the sizes hand out what it kept (before new memory, and the owner, idle,
    // drains nothing meanwhile): the owner's addresses among them add up to what it kept.
    constexpr int N = 8000;
    constexpr size_t kBound = 2 * 1024 * 1024;
    std::vector<void *> objs(N);
    std::vector<size_t> sizes(N);
    Phases phases; // 1: owner allocated, 2: keeper done
    size_t kept = 0, largest = 0;
    std::thread owner([&] { a_own_heap();
        Rng rng(5);
        for (int i = 0; i < N; i++) {
            sizes[i] = 512 + rng.below(1537);
            memset(objs[i] = a_malloc(sizes[i]), 3, 16);
        }
        phases.advance(1);
        phases.wait_for(2); // alive and idle while the keeper counts
    });
    std::thread keeper([&] { a_own_heap();
        for (size_t n = 512; n <= 2048; n += 16) a_free(a_malloc(n));
        phases.wait_for(1);
        std::set<void *> owners(objs.begin(), objs.end());
        for (void *p : objs) a_free(p);
        std::vector<void *> mine;
        for (int i = 0; i < N; i++) {
            void *p = a_malloc(sizes[i]);
            mine.push_back(p);
            if (owners.count(p)) {
                kept += a_usable(p);
                largest = std::max(largest, a_usable(p));
            }
        }
        for (void *p : mine) a_free(p);
        phases.advance(2);
    });
    owner.join();
    keeper.join();
    INFO("the keeper handed out " << kept << " bytes of the owner's objects");
    if (foreign_allowed() || checked_mode()) return;
    REQUIRE(kept >= kBound / 2);
    REQUIRE(kept < kBound + largest);
}

// How many of `old` come back among `n` mallocs of `size` (all freed again).
static size_t objects_back(const std::vector<void *> &old, size_t size, int n) {
    std::set<void *> olds(old.begin(), old.end());
    std::vector<void *> again;
    size_t back = 0;
    for (int i = 0; i < n; i++) {
        again.push_back(a_malloc(size));
        back += olds.count(again.back());
    }
    for (void *p : again) a_free(p);
    return back;
}

// ---------------------------------------------------------------------------------------------
TEST_CASE("kept objects of a size the freeing thread stopped allocating go back to their owner", "[api][threads][remote]") {
    // The keeper allocates the size once, frees the owner's objects (it keeps them) and then
    // allocates only other sizes. After a decay delay (1 s by default) with no malloc of the
    // size, its next slow path sends them home, so the owner's mallocs reuse them while the
    // keeper still lives (thread exit would send them home anyway).
    constexpr int N = 400;
    constexpr size_t kSize = 100;
    std::vector<void *> objs(N);
    Phases phases; // 1: owner allocated, 2: keeper done, 3: owner checked
    auto pause = [] { std::this_thread::sleep_for(std::chrono::milliseconds(1100)); };
    auto slow_path = [] { a_free(a_malloc(kSmallMax + 1000)); }; // a medium malloc ticks
    size_t reused = 0;
    std::thread owner([&] { a_own_heap();
        for (auto &p : objs) memset(p = a_malloc(kSize), 3, kSize);
        phases.advance(1);
        phases.wait_for(2);
        reused = objects_back(objs, kSize, 4 * N);
        phases.advance(3);
    });
    std::thread keeper([&] { a_own_heap();
        a_free(a_malloc(kSize)); // a size this thread allocates: it keeps other heaps' objects
        slow_path();
        pause();
        slow_path(); // the size was allocated since the last tick: not idle yet
        phases.wait_for(1);
        for (void *p : objs) a_free(p);
        pause();
        slow_path(); // idle for a whole delay: the kept objects go home
        phases.advance(2);
        phases.wait_for(3);
    });
    owner.join();
    keeper.join();
    INFO("objects the owner got back: " << reused << " of " << N);
    if (!foreign_allowed() && !checked_mode()) REQUIRE(reused >= N / 2);
}

// ---------------------------------------------------------------------------------------------
TEST_CASE("a thread keeps at most 1024 objects of one small size: the rest go home", "[api][threads][remote]") {
    // 3000 of the owner's 100 B objects (300 KB, past the 256 KB per size) freed by a thread
    // that allocates the size: its next mallocs hand out what it kept, at most 1024.
    constexpr int N = 3000;
    constexpr size_t kSize = 100;
    std::vector<void *> objs(N);
    Phases phases; // 1: owner allocated, 2: keeper done
    size_t kept = 0;
    std::thread owner([&] { a_own_heap();
        for (auto &p : objs) memset(p = a_malloc(kSize), 3, kSize);
        phases.advance(1);
        phases.wait_for(2);
    });
    std::thread keeper([&] { a_own_heap();
        a_free(a_malloc(kSize));
        phases.wait_for(1);
        std::set<void *> owners(objs.begin(), objs.end());
        for (void *p : objs) a_free(p);
        std::vector<void *> mine;
        for (int i = 0; i < N; i++) {
            mine.push_back(a_malloc(kSize));
            kept += owners.count(mine.back());
        }
        for (void *p : mine) a_free(p);
        phases.advance(2);
    });
    owner.join();
    keeper.join();
    INFO("the keeper handed out " << kept << " of the owner's objects");
    if (foreign_allowed() || checked_mode()) return;
    REQUIRE(kept >= 512);
    REQUIRE(kept <= 1024);
}

// ---------------------------------------------------------------------------------------------
TEST_CASE("a thread keeps no objects of a size it never allocated: they go home while it lives", "[api][threads][remote]") {
    // The freeing thread has a heap (it allocates another size) but never the owner's size,
    // so it keeps none of the owner's objects: its outbox sends them home in batches of 32,
    // and the owner's mallocs reuse them while the freeing thread still lives. Its heap is
    // most likely the one a thread that did allocate the size just left (heaps of exited
    // threads are adopted, newest first): what that thread allocated does not count.
    constexpr int N = 400; // under one bin's keep bound (256 KB of 100 B)
    constexpr size_t kSize = 100, kOther = 1000;
    std::thread([] { a_own_heap(); a_free(a_malloc(kSize)); }).join();
    std::vector<void *> objs(N);
    Phases phases; // 1: freer has its heap, 2: owner allocated, 3: freer done, 4: owner checked
    size_t reused = 0;
    std::thread freer([&] { a_own_heap();
        void *other = a_malloc(kOther);
        phases.advance(1);
        phases.wait_for(2);
        for (void *p : objs) a_free(p);
        phases.advance(3);
        phases.wait_for(4); // alive: nothing it held went home at its exit
        a_free(other);
    });
    std::thread owner([&] { a_own_heap();
        phases.wait_for(1);
        for (auto &p : objs) memset(p = a_malloc(kSize), 3, kSize);
        phases.advance(2);
        phases.wait_for(3);
        reused = objects_back(objs, kSize, 4 * N);
        phases.advance(4);
    });
    owner.join();
    freer.join();
    INFO("objects the owner got back: " << reused << " of " << N);
    if (!foreign_allowed() && !checked_mode()) REQUIRE(reused >= N * 3 / 4);
}

// bobox's statistics for a test of which heap a thread gets, or nullptr where it does not
// apply: another allocator that the run allows, or checked mode (every thread has a heap of
// its own from its first call).
static get_stats_fn heap_stats_or_skip() {
    get_stats_fn stats = get_stats_ptr();
    if (!stats && !foreign_allowed()) FAIL("bobox_get_stats missing");
    return stats && !checked_mode() ? stats : nullptr;
}

// ---------------------------------------------------------------------------------------------
TEST_CASE("a thread's first objects, from its CPU's shared heap, are foreign once, not forever", "[api][threads][remote]") {
    // A thread allocates from its CPU's shared heap until it proves busy (1,024 calls), then
    // from its own. The objects it had before are the shared heap's: freed, they go home. Kept
    // for its own mallocs instead, they were handed out and freed as foreign again and again:
    // in a queue of 4,096 objects, a quarter of all frees, for as long as the thread ran.
    get_stats_fn stats = heap_stats_or_skip();
    if (!stats) return;
    constexpr size_t kSize = 4096;
    constexpr int kLive = 4096, kOps = 100000;
    struct bobox_stats before {}, after {};
    uint64_t bad = 0;
    std::thread([&] {
        std::vector<unsigned char *> ring(kLive);
        for (int i = 0; i < kLive; i++) {
            ring[i] = static_cast<unsigned char *>(a_malloc(kSize));
            ring[i][0] = ring[i][kSize - 1] = (unsigned char)i;
        }
        stats(&before);
        for (int i = 0; i < kOps; i++) { // a queue: the oldest object goes, a new one comes
            unsigned char *&slot = ring[i % kLive];
            bad += slot[0] != (unsigned char)i || slot[kSize - 1] != (unsigned char)i;
            a_free(slot);
            slot = static_cast<unsigned char *>(a_malloc(kSize));
            slot[0] = slot[kSize - 1] = (unsigned char)(i + kLive);
        }
        stats(&after);
        for (unsigned char *p : ring) a_free(p);
    }).join();
    REQUIRE(bad == 0);
    size_t foreign = after.remote_frees - before.remote_frees;
    INFO("frees of another heap's objects in " << kOps << " frees: " << foreign);
    REQUIRE(foreign <= 2 * 1024);
}

// ---------------------------------------------------------------------------------------------
TEST_CASE("a thread that proves busy takes its CPU's shared heap: the objects it had are its own", "[api][threads][remote]") {
    // Before it proves busy a thread allocates from its CPU's shared heap. Busy, it takes that
    // heap for its own (a new one serves the others), so its first objects and their blocks
    // are its own: freed, they are not another heap's, and no second block of each size
    // stands beside the shared heap's. The thread stays on one CPU: one shared heap.
    get_stats_fn stats = heap_stats_or_skip();
    if (!stats) return;
    constexpr size_t kSize = 1000;
    constexpr int kFirst = 200, kBusyOps = 4000;
    struct bobox_stats before {}, after {};
    uint64_t bad = 0;
    std::thread([&] {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(sched_getcpu(), &one);
        REQUIRE(sched_setaffinity(0, sizeof one, &one) == 0);
        std::vector<unsigned char *> first(kFirst);
        for (int i = 0; i < kFirst; i++) memset(first[i] = static_cast<unsigned char *>(a_malloc(kSize)), i & 0xff, kSize);
        for (int i = 0; i < kBusyOps; i++) a_free(a_malloc(48)); // proves busy (1,024 calls in 100 ms)
        stats(&before);
        for (int i = 0; i < kFirst; i++) {
            bad += first[i][0] != (i & 0xff) || first[i][kSize - 1] != (i & 0xff);
            a_free(first[i]);
        }
        stats(&after);
    }).join();
    REQUIRE(bad == 0);
    INFO("frees of another heap's objects among the thread's first " << kFirst << ": "
                                                                      << after.remote_frees - before.remote_frees);
    REQUIRE(after.remote_frees == before.remote_frees);
}

// ---------------------------------------------------------------------------------------------
TEST_CASE("a thread that proves busy freeing an exited thread's objects takes that thread's heap", "[api][threads][remote]") {
    // A main thread that frees its workers' results once they have ended: its frees are its
    // own once it is busy, not a stream of remote frees to a heap nobody drains but them.
    get_stats_fn stats = heap_stats_or_skip();
    if (!stats) return;
    constexpr int N = 8000;
    constexpr size_t kSize = 100;
    std::vector<unsigned char *> objs(N);
    struct bobox_stats before {}, after {};
    uint64_t bad = 0;
    // The freer must start without a heap. A thread's first call adopts a heap an earlier
    // test left with live objects: such threads hold theirs, parked, until the end.
    struct role {
        std::atomic<int> started{0}, is{0}; // is: 1 holder, 2 freer
    };
    std::atomic<bool> worker_done{false}, release{false};
    std::vector<std::unique_ptr<role>> roles;
    std::vector<std::thread> threads;
    bool have_freer = false;
    for (int tries = 0; tries < 64 && !have_freer; tries++) {
        struct bobox_stats s0 {}, s1 {};
        stats(&s0);
        roles.emplace_back(new role);
        role *r = roles.back().get();
        threads.emplace_back([&, r] {
            a_free(a_malloc(1)); // its first call
            r->started = 1;
            while (!r->is) std::this_thread::yield();
            if (r->is == 1) {
                while (!release) std::this_thread::yield();
                return;
            }
            while (!worker_done) std::this_thread::yield();
            a_free(a_malloc(1)); // its CPU has a shared heap it could take instead
            for (int i = 0; i < N / 2; i++) { // proves busy on these
                bad += objs[i][0] != (i & 0xff) || objs[i][kSize - 1] != (i & 0xff);
                a_free(objs[i]);
            }
            stats(&before);
            for (int i = N / 2; i < N; i++) {
                bad += objs[i][0] != (i & 0xff) || objs[i][kSize - 1] != (i & 0xff);
                a_free(objs[i]);
            }
            stats(&after);
        });
        while (!r->started) std::this_thread::yield();
        stats(&s1);
        have_freer = s1.heaps_live == s0.heaps_live;
        r->is = have_freer ? 2 : 1;
    }
    REQUIRE(have_freer);
    std::thread([&] { a_own_heap();
        for (int i = 0; i < N; i++) memset(objs[i] = static_cast<unsigned char *>(a_malloc(kSize)), i & 0xff, kSize);
    }).join();
    worker_done = true;
    threads.back().join();
    release = true;
    for (size_t i = 0; i + 1 < threads.size(); i++) threads[i].join();
    REQUIRE(bad == 0);
    INFO("frees of another heap's objects among the last " << N / 2 << ": " << after.remote_frees - before.remote_frees);
    REQUIRE(after.remote_frees == before.remote_frees);
}

// ---------------------------------------------------------------------------------------------
TEST_CASE("a thread takes over, at its first call, the heap an exited thread left with live objects", "[api][threads][remote]") {
    // A successor that works on its predecessor's objects (server thread replacement) adopts
    // the predecessor's heap before its first free, so those frees are its own and its next
    // malloc of the size hands the last of them out again. Started on its CPU's shared heap
    // instead, it sent its first 1,024 frees to the exited thread's heap as another's.
    if (checked_mode() || foreign_allowed()) return; // checked mode: every thread has a heap at once
    constexpr int N = 1000; // fewer calls than make a thread busy
    constexpr size_t kSize = 100;
    std::vector<unsigned char *> objs(N);
    std::thread([&] { a_own_heap();
        for (int i = 0; i < N; i++) memset(objs[i] = static_cast<unsigned char *>(a_malloc(kSize)), i & 0xff, kSize);
    }).join();
    uint64_t bad = 0;
    void *next = nullptr;
    std::thread([&] {
        for (int i = 0; i < N; i++) {
            bad += objs[i][0] != (i & 0xff) || objs[i][kSize - 1] != (i & 0xff);
            a_free(objs[i]);
        }
        next = a_malloc(kSize);
        a_free(next);
    }).join();
    REQUIRE(bad == 0);
    REQUIRE(next == objs[N - 1]);
}

// ---------------------------------------------------------------------------------------------
TEST_CASE("a thread whose first call frees an exited thread's object takes that thread's heap, not the newest", "[api][threads][remote]") {
    // Two lineages of threads that hand their work on (server thread replacement): a
    // successor whose predecessor ended before another lineage's thread did took that one's
    // heap (the newest with live objects), and every free of its own work was another
    // heap's (`handoff`: 3.4 M of 15 M frees).
    get_stats_fn stats = heap_stats_or_skip();
    if (!stats) return;
    constexpr int N = 1000; // fewer calls than make a thread busy
    constexpr size_t kSize = 100;
    std::vector<unsigned char *> mine(N), others(N);
    struct bobox_stats before {}, after {};
    // Both alive at once (each a heap of its own), then ended in turn: the other's is the
    // newest abandoned heap with live objects.
    std::atomic<int> filled{0}, may_end{0};
    auto fill = [&](std::vector<unsigned char *> *objs, int order) {
        return std::thread([&, objs, order] { a_own_heap();
            for (int i = 0; i < N; i++) memset((*objs)[i] = static_cast<unsigned char *>(a_malloc(kSize)), i & 0xff, kSize);
            filled++;
            while (may_end < order) std::this_thread::yield();
        });
    };
    std::thread first = fill(&mine, 1), second = fill(&others, 2);
    while (filled < 2) std::this_thread::yield();
    may_end = 1;
    first.join();
    may_end = 2;
    second.join();
    struct successor {
        std::vector<unsigned char *> *objs;
        uint64_t bad;
        static void *run(void *arg) { // a pthread: std::thread's first call frees its state
            auto *s = static_cast<successor *>(arg);
            for (int i = 0; i < N; i++) {
                s->bad += (*s->objs)[i][0] != (i & 0xff) || (*s->objs)[i][kSize - 1] != (i & 0xff);
                a_free((*s->objs)[i]);
            }
            return nullptr;
        }
    } succ{&mine, 0};
    stats(&before);
    pthread_t t;
    REQUIRE(pthread_create(&t, nullptr, successor::run, &succ) == 0);
    pthread_join(t, nullptr);
    stats(&after);
    std::thread([&] { // the other lineage's successor
        for (int i = 0; i < N; i++) a_free(others[i]);
    }).join();
    REQUIRE(succ.bad == 0);
    INFO("frees of another heap's objects among the successor's " << N << ": " << after.remote_frees - before.remote_frees);
    REQUIRE(after.remote_frees == before.remote_frees);
}

// ---------------------------------------------------------------------------------------------
TEST_CASE("an object freed by another thread comes back to that thread's mallocs before new memory", "[api][threads][remote]") {
    // The freeing thread keeps other heaps' objects of sizes it allocates itself (they are
    // in its cache) and hands them out once the objects its bin had on hand run out: within
    // one 64 KB block's worth of mallocs of the size (fewer than 600 of 100 B).
    void *p = nullptr;
    bool back = false;
    std::thread([&] { a_own_heap();
        std::vector<void *> mine{a_malloc(100)}; // this thread allocates objects of the size
        std::thread([&] { a_own_heap(); p = a_malloc(100); }).join();
        if (!p) return;
        memset(p, 0x5a, 100);
        a_free(p);
        for (int i = 0; i < 1200 && !back; i++) {
            void *q = a_malloc(100);
            if (!q) break;
            memset(q, 1, 100);
            mine.push_back(q);
            back = q == p;
        }
        for (void *q : mine) a_free(q);
    }).join();
    REQUIRE(p);
    // Checked mode keeps nothing: every free there goes through the checks of the slow path.
    if (!foreign_allowed() && !checked_mode()) REQUIRE(back);
}

TEST_CASE("an object another thread freed comes back before fresh slots of a block are cut", "[api][threads][remote]") {
    // The bin's block still has fresh slots (one object of the size so far): what the thread
    // keeps of other threads' frees comes first, so no new page is written while it has
    // them. Only the slots already cut onto the front cache's page come before it: at most
    // a page's worth of 100 B objects (the old order: a whole 64 KB block, about 600).
    if (checked_mode() || foreign_allowed()) return; // checked mode keeps nothing
    void *p = nullptr;
    int got_back_at = -1;
    std::thread([&] { a_own_heap();
        std::vector<void *> mine{a_malloc(100)};
        std::thread([&] { a_own_heap(); p = a_malloc(100); }).join();
        if (!p) return;
        memset(p, 0x5a, 100);
        a_free(p);
        for (int i = 0; i < 200 && got_back_at < 0; i++) {
            void *q = a_malloc(100);
            if (!q) break;
            memset(q, 1, 100);
            mine.push_back(q);
            if (q == p) got_back_at = i;
        }
        for (void *q : mine) a_free(q);
    }).join();
    REQUIRE(p);
    INFO("mallocs of the size before the freed object came back: " << got_back_at);
    REQUIRE(got_back_at >= 0);
    REQUIRE(got_back_at < 4096 / 100 + 1);
}

TEST_CASE("another thread frees objects cut from a block since its chain last ran out", "[api][threads][remote]") {
    // Other threads test the slot limit the owner published when one of the block's chains
    // last ran out, then the owner's own: a slot cut since then is still a valid object.
    constexpr size_t SIZE = 3000;
    constexpr int N = 8; // fewer than a block holds: its first chain has not run out
    std::vector<char *> objs(N, nullptr);
    int missing = 0, damaged = 0;
    std::thread owner([&] { a_own_heap();
        std::vector<char *> kept;
        for (auto &o : objs) {
            o = static_cast<char *>(a_malloc(SIZE));
            kept.push_back(static_cast<char *>(a_malloc(SIZE)));
            if (o) memset(o, 7, SIZE);
            if (kept.back()) memset(kept.back(), 9, SIZE);
        }
        std::thread([&] { a_own_heap();
            for (char *o : objs)
                if (o) a_free(o); // an invalid-pointer abort here fails the whole run
        }).join();
        for (char *k : kept) {
            if (!k) {
                missing++;
                continue;
            }
            if (k[0] != 9 || k[SIZE - 1] != 9) damaged++;
            a_free(k);
        }
    });
    owner.join();
    for (char *o : objs) REQUIRE(o);
    REQUIRE(missing == 0);
    REQUIRE(damaged == 0);
}

TEST_CASE("malloc_trim reaches the caches of a live thread that went idle, at its next malloc", "[api][threads][trim]") {
    if (foreign_allowed() || checked_mode()) return; // counts bobox's own mapped bytes
    get_stats_fn stats = get_stats_ptr();
    REQUIRE(stats != nullptr);
    // No decay tick during the test: a tick in the worker (1 s by default) would give its
    // blocks back before the trim, leaving the trim less to show (seen in a fresh clone's CI).
    bobox_ctl_fn ctl = bobox_ctl_ptr();
    REQUIRE(ctl != nullptr);
    uint64_t decay_before = 0, hour = 3600 * 1000;
    size_t len = sizeof decay_before;
    REQUIRE(ctl("bobox.decay_ms", &decay_before, &len, &hour, sizeof hour) == 0);
    // Nothing cached anywhere to lend: the worker's blocks are cut from its own superblocks
    // and go back to its own cache (an emptied block goes home to the cache that cut it).
    a_malloc_trim(0);
    std::mutex m;
    std::condition_variable cv;
    int phase = 0; // 1: the worker freed everything and waits; 2: main trimmed; 3: worker called malloc
    std::thread worker([&] { a_own_heap();
        // 24 MB of 1 KB objects, all freed: their emptied blocks wait in this thread's block
        // cache, which only this thread touches.
        std::vector<void *> objs(24 * 1024);
        for (void *&p : objs) {
            p = a_malloc(1024);
            memset(p, 1, 1024);
        }
        for (void *p : objs) a_free(p);
        std::unique_lock<std::mutex> lock(m);
        phase = 1;
        cv.notify_all();
        cv.wait(lock, [&] { return phase == 2; });
        a_free(a_malloc(64)); // its next call: the fast path would do, but a release was asked
        phase = 3;
        cv.notify_all();
        cv.wait(lock, [&] { return phase == 4; });
    });
    std::unique_lock<std::mutex> lock(m);
    cv.wait(lock, [&] { return phase == 1; });
    a_malloc_trim(0);
    size_t after_trim = mapped_bytes();
    phase = 2;
    cv.notify_all();
    cv.wait(lock, [&] { return phase == 3; });
    size_t after_call = mapped_bytes();
    phase = 4;
    cv.notify_all();
    lock.unlock();
    worker.join();
    REQUIRE(ctl("bobox.decay_ms", nullptr, nullptr, &decay_before, sizeof decay_before) == 0);
    INFO("mapped after malloc_trim " << after_trim / 1024 << " KB, after the idle thread's malloc " << after_call / 1024 << " KB");
    REQUIRE(after_call + 16 * 1024 * 1024 <= after_trim);
}
