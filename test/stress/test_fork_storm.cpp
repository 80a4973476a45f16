// Fork storm: two threads fork over and over while three others allocate and free (small,
// medium, large, and cross-thread frees). Every child checks and frees an object its parent
// thread made, allocates and frees in every size range, starts a thread that does the same,
// checks its heap and exits - within a deadline, or the test reports a deadlock.
#include <catch2/catch.hpp>

#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <thread>
#include <vector>

#include "stress.h"

using namespace stress;

namespace {

constexpr int kChildDeadlineMs = 10000;

// The child's work. Returns its exit code: 0 ok, 2.. which check failed.
void *child_thread_body(void *arg) {
    Rng r(reinterpret_cast<uintptr_t>(arg));
    for (int i = 0; i < 200; i++) {
        size_t n = mixed_size(r, 10);
        void *p = a_malloc(n);
        if (!p) return reinterpret_cast<void *>(uintptr_t{1});
        sfill(p, n, i);
        if (scheck(p, n, i) != SIZE_MAX) return reinterpret_cast<void *>(uintptr_t{1});
        a_free(p);
    }
    return check_heap() == 1 ? nullptr : reinterpret_cast<void *>(uintptr_t{1});
}

int child_main(void *inherited, size_t n, uint64_t seed, bool with_thread) {
    if (scheck(inherited, n, seed) != SIZE_MAX) return 2;
    if (a_owns(inherited) != 1) return 3;
    a_free(inherited);
    Rng r(seed);
    // A plain array, not a vector: in the sanitizer builds a vector's memory comes from the
    // sanitizer's allocator, whose locks another parent thread may have held at the fork.
    enum { kChildObjects = 300 };
    void *kept[kChildObjects];
    size_t nkept = 0;
    for (int i = 0; i < kChildObjects; i++) {
        size_t m = mixed_size(r, 10);
        void *p = i % 7 == 0 ? a_calloc(1, m) : a_malloc(m);
        if (!p) return 4;
        sfill(p, m, i);
        if (scheck(p, m, i) != SIZE_MAX) return 5;
        if (r.below(2)) a_free(p); else kept[nkept++] = p;
    }
    void *q = a_realloc(a_malloc(100), 3 * MB); // a large realloc in the child
    if (!q) return 6;
    a_free(q);
    if (with_thread) {
        // Threads in a child of a multi-threaded parent: its heaps of the parent's other
        // threads are lost, the new thread must still get (or adopt) one.
        pthread_t t;
        if (pthread_create(&t, nullptr, child_thread_body, reinterpret_cast<void *>(seed)) != 0) return 7;
        void *res;
        pthread_join(t, &res);
        if (res) return 8;
    }
    for (size_t i = 0; i < nkept; i++) a_free(kept[i]);
    if (check_heap() != 1) return 9;
    return 0;
}

// Waits for the child, at most kChildDeadlineMs; kills it and returns -1 on timeout.
int wait_child(pid_t pid) {
    for (int waited = 0; waited < kChildDeadlineMs; waited++) {
        int status;
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        if (w < 0) return -2;
        usleep(1000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    return -1;
}

} // namespace

TEST_CASE("fork storm while other threads allocate: every child mallocs, frees and exits", "[stress][fork]") {
    const int kForksPerThread = 50 / kScale;
    Errors err;
    std::atomic<bool> stop{false};
    std::atomic<long> ops{0};
    // A shared exchange so that allocator threads free each other's objects.
    constexpr int kSlots = 256;
    std::atomic<void *> slots[kSlots];
    for (auto &s : slots) s = nullptr;

    auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> workers;
    for (int w = 0; w < 3; w++)
        workers.emplace_back([&, w] {
            Rng r(w + 11);
            std::vector<std::pair<void *, size_t>> mine;
            while (!stop.load(std::memory_order_relaxed)) {
                size_t n = mixed_size(r, 4);
                auto *p = static_cast<unsigned char *>(a_malloc(n));
                if (!p) { err.report("worker malloc(%zu) failed", n); break; }
                p[0] = 0x5A;
                p[n - 1] = 0xA5;
                void *old = slots[r.below(kSlots)].exchange(p);
                if (old) a_free(old);
                if (r.below(3) == 0) {
                    void *q = a_malloc(r.below(512) + 1);
                    mine.emplace_back(q, 0);
                }
                if (mine.size() > 500) {
                    for (auto &m : mine) a_free(m.first);
                    mine.clear();
                }
                ops.fetch_add(1, std::memory_order_relaxed);
            }
            for (auto &m : mine) a_free(m.first);
            int ok = check_heap();
            if (ok != 1) err.report("bobox_check_heap() == %d in an allocator thread", ok);
        });

    std::atomic<int> children{0}, timeouts{0};
    std::vector<std::thread> forkers;
    for (int f = 0; f < 2; f++)
        forkers.emplace_back([&, f] {
            Rng r(f + 101);
            for (int i = 0; i < kForksPerThread && err.count == 0; i++) {
                size_t n = mixed_size(r, 20);
                uint64_t seed = r.next();
                void *obj = a_malloc(n);
                if (!obj) { err.report("forker malloc(%zu) failed", n); break; }
                sfill(obj, n, seed);
                // No thread in the child under a sanitizer: TSan refuses (die_after_fork), and
                // clang 14's ASan does not take its allocator's locks around fork, so a child
                // thread's start (pthread_getattr_np -> free) can wait forever on a lock another
                // parent thread held at the fork.
                bool with_thread = !STRESS_SANITIZED && i % 4 == 0;
                pid_t pid = fork();
                if (pid == 0) _exit(child_main(obj, n, seed, with_thread));
                if (pid < 0) { err.report("fork failed: %s", strerror(errno)); a_free(obj); break; }
                int rc = wait_child(pid);
                children++;
                if (rc == -1) {
                    timeouts++;
                    err.report("child %d (fork %d of thread %d) did not exit within %d ms: deadlock", pid, i, f,
                               kChildDeadlineMs);
                } else if (rc != 0) {
                    err.report("child of fork %d (thread %d) failed with code %d", i, f, rc);
                }
                if (scheck(obj, n, seed) != SIZE_MAX) err.report("parent's object changed across fork");
                a_free(obj);
            }
            int ok = check_heap();
            if (ok != 1) err.report("bobox_check_heap() == %d in a forking thread", ok);
        });
    for (auto &t : forkers) t.join();
    stop = true;
    for (auto &t : workers) t.join();
    for (auto &s : slots)
        if (void *p = s.load()) a_free(p);
    INFO(err.summary());
    REQUIRE(err.count == 0);
    REQUIRE(children == 2 * kForksPerThread);
    REQUIRE(timeouts == 0);
    REQUIRE(check_heap() == 1);
    WARN("fork storm: " << children << " children, " << ops << " allocations alongside, in " << seconds_since(t0)
                        << " s");
}
