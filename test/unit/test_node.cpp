// Node-local superblocks: the policy the kernel holds for our memory, node selection from an
// injected CPU-to-node map (this machine has one node), and frees returning to their node.
#include <catch2/catch.hpp>
#include <pthread.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>
#include <thread>
#include <vector>
#include "bobox.h"
#include "internals.h"
extern "C" {
#include "os/os.h"
}
#ifndef MPOL_PREFERRED
#define MPOL_PREFERRED 1
#endif

TEST_CASE("node: small, medium and large objects live in memory preferring the heap's node", "[node]") {
    bobox_free(bobox_malloc(1)); // start-up
    int expected_node = bx_node_current();
    for (size_t size : {size_t(24), size_t(3000), size_t(100000), size_t(3) << 20}) {
        char *p = static_cast<char *>(bobox_malloc(size));
        REQUIRE(p != nullptr);
        p[0] = 1;
        int mode = -1;
        INFO("size " << size);
        int policy_node = bx_os_policy_node(p, &mode);
        if (bx_node_count() == 1) {
            REQUIRE(mode == 0); // MPOL_DEFAULT: on one node no mbind is made (a sandbox may refuse it)
        } else {
            REQUIRE(policy_node == expected_node);
            REQUIRE(mode == MPOL_PREFERRED);
        }
        bobox_free(p);
    }
}

namespace {
// Runs fn on a thread pinned to `cpu`.
template <class F> void on_cpu(int cpu, F fn) {
    std::thread t([&] {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        REQUIRE(pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0);
        sched_yield();
        fn();
    });
    t.join();
}
} // namespace

TEST_CASE("node: a thread's heap takes superblocks from its CPU's node (simulated two nodes)", "[node]") {
    if (std::thread::hardware_concurrency() < 2) {
        WARN("needs two CPUs");
        return;
    }
    bobox_free(bobox_malloc(1));
    const int map[2] = {0, 1}; // cpu 0 -> node 0, cpu 1 -> node 1
    bx_node_set_map(map, 2, 2);
    REQUIRE(bx_node_count() == 2);
    size_t node1_before = bx_node_superblocks_in_use_on(1);
    std::vector<void *> objs;
    on_cpu(1, [&] {
        REQUIRE(bx_node_current() == 1);
        for (int i = 0; i < 2000; i++) objs.push_back(bobox_malloc(i % 2 ? 200 : 40000));
    });
    // The thread on CPU 1 drew its superblocks from node 1.
    REQUIRE(bx_node_superblocks_in_use_on(1) > node1_before);
    size_t node1_cached_before = bx_node_superblocks_cached_on(1);
    // Freed from this thread (node 0's CPU), after the owner exited: back to node 1.
    for (void *p : objs) bobox_free(p);
    bobox_malloc_trim(0); // drain the abandoned heap now rather than at the next threshold
    REQUIRE(bx_node_superblocks_in_use_on(1) == node1_before);
    (void)node1_cached_before;
    bx_node_init(); // back to the real map
    REQUIRE(bx_node_count() >= 1);
}

TEST_CASE("node: a forked child moved to another node's CPU takes superblocks from that node", "[node]") {
    if (std::thread::hardware_concurrency() < 2) {
        WARN("needs two CPUs");
        return;
    }
    bobox_free(bobox_malloc(1)); // this thread's heap exists, on node 0 (one real node)
    const int map[2] = {0, 1};   // cpu 0 -> node 0, cpu 1 -> node 1
    bx_node_set_map(map, 2, 2);
    fflush(nullptr);
    pid_t pid = fork();
    if (pid == 0) {
        // The child, as the pinning shim would place it: on CPU 1, node 1.
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(1, &set);
        if (sched_setaffinity(0, sizeof set, &set) != 0) _exit(3);
        sched_yield();
        size_t before = bx_node_superblocks_in_use_on(1);
        std::vector<void *> objs;
        for (int i = 0; i < 2000; i++) objs.push_back(bobox_malloc(i % 2 ? 200 : 40000));
        bool moved = bx_node_superblocks_in_use_on(1) > before;
        for (void *p : objs) bobox_free(p);
        _exit(moved ? 0 : 1);
    }
    REQUIRE(pid > 0);
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    bx_node_init(); // back to the real map
    REQUIRE(WIFEXITED(status));
    INFO("exit status 1: the child's superblocks still came from its parent's node");
    REQUIRE(WEXITSTATUS(status) == 0);
}
