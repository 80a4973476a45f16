// The races of the hardening review, each as a storm that would hang or corrupt before its fix:
//  - threads allocating after their own teardown (the orphan heap, from pthread-key
//    destructors) while another thread forks: the orphan heap used to be created under its
//    lock, which then took the registry lock, while fork's handler takes them the other way;
//  - large objects grown (moved) by one thread while another maps and fills memory of its
//    own: a move used to be undone with MREMAP_FIXED onto the old address, which may by then
//    be another thread's mapping; each side checks that its bytes survive.
#include <catch2/catch.hpp>

#include <pthread.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <thread>
#include <vector>

#include "stress.h"

using namespace stress;

namespace {

pthread_key_t late_key;

// Runs after the allocator's own per-thread teardown (its key is created first).
void late_destructor(void *arg) {
    size_t n = reinterpret_cast<uintptr_t>(arg);
    for (int i = 0; i < 20; i++) {
        void *p = a_malloc(n + i);
        if (!p) abort();
        memset(p, i, n + i);
        a_free(p);
    }
}

void *late_thread(void *arg) {
    a_free(a_malloc(32)); // the allocator's key exists and this thread has a heap
    pthread_setspecific(late_key, arg);
    return nullptr;
}

} // namespace

TEST_CASE("threads allocate after their teardown while another thread forks", "[stress][races]") {
    REQUIRE(pthread_key_create(&late_key, late_destructor) == 0);
    std::atomic<bool> stop{false};
    std::atomic<int> bad_children{0};
    std::thread forker([&] {
        while (!stop.load()) {
            pid_t pid = fork();
            if (pid == 0) {
                void *p = a_malloc(100);
                a_free(p);
                _exit(p ? 0 : 1);
            }
            int status = 0;
            if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status)) bad_children++;
        }
    });
    for (int round = 0; round < (STRESS_SANITIZED ? 50 : 300); round++) {
        pthread_t t[4];
        for (int i = 0; i < 4; i++)
            REQUIRE(pthread_create(&t[i], nullptr, late_thread, reinterpret_cast<void *>(uintptr_t(16 + 200 * i))) == 0);
        for (auto &th : t) pthread_join(th, nullptr);
    }
    stop = true;
    forker.join();
    pthread_key_delete(late_key);
    REQUIRE(bad_children.load() == 0);
}

TEST_CASE("large objects grow while another thread maps memory of its own", "[stress][races]") {
    std::atomic<bool> stop{false};
    Errors errors;
    std::thread mapper([&] {
        Rng r(7);
        while (!stop.load()) {
            size_t n = (1 + r.next() % 64) * 4096;
            auto *m = static_cast<unsigned char *>(mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
            if (m == MAP_FAILED) continue;
            memset(m, 0xa5, n);
            sched_yield();
            for (size_t i = 0; i < n; i += 512)
                if (m[i] != 0xa5) errors.report("the mapper's memory changed under it");
            munmap(m, n);
        }
    });
    Rng r(11);
    for (int round = 0; round < (kScale == 1 ? 200 : 20); round++) {
        size_t n = 600 * 1024;
        auto *p = static_cast<unsigned char *>(a_malloc(n));
        REQUIRE(p != nullptr);
        sfill(p, n, round);
        for (int step = 0; step < 8; step++) {
            size_t grown = n + (1 + r.next() % 8) * 256 * 1024;
            auto *q = static_cast<unsigned char *>(a_realloc(p, grown));
            REQUIRE(q != nullptr);
            REQUIRE(scheck(q, n, round) == SIZE_MAX);
            sfill(q, grown, round);
            p = q;
            n = grown;
        }
        a_free(p);
    }
    stop = true;
    mapper.join();
    INFO(errors.summary());
    REQUIRE(errors.count.load() == 0);
}
