// Shared helpers for the pinning unit tests: load a fixture tree, plan N threads.
#pragma once
#include <catch2/catch.hpp>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "plan.h"
#include "topology.h"

#ifndef BOBOX_FIXTURES
#define BOBOX_FIXTURES "test/fixtures/topo"
#endif

// BOBOX_ROOT (set by scripts/test/run-tests.sh) wins over the tree the binary was built in.
inline std::string fixture(const std::string &name)
{
    const char *root = getenv("BOBOX_ROOT");
    return (root && *root ? std::string(root) + "/test/fixtures/topo" : std::string(BOBOX_FIXTURES)) + "/" + name;
}

inline std::unique_ptr<bt_topology> load(const std::string &name)
{
    auto t = std::make_unique<bt_topology>();
    char err[600] = "";
    int rc = bt_read(t.get(), fixture(name).c_str(), err, sizeof err);
    INFO(name << ": " << err);
    REQUIRE(rc == 0);
    return t;
}

inline cpu_set_t cpus(const char *list)
{
    cpu_set_t s;
    REQUIRE(bt_parse_cpulist(list, &s) == 0);
    return s;
}

// The CPUs of threads 0..nthreads-1; -1 for a skipped thread.
inline std::vector<int> plan(const bt_topology &t, const char *policy, int nthreads, const char *allowed = nullptr,
                             const char *skipmask = nullptr)
{
    static bp_spec spec;
    static short order[BP_MAX_ORDER];
    bp_skip skip;
    char err[600], warn[600];
    REQUIRE(bp_parse_policy(policy, &spec, err, sizeof err) == 0);
    REQUIRE(bp_parse_skip(skipmask, &skip, err, sizeof err) == 0);
    cpu_set_t set;
    if (allowed)
        set = cpus(allowed);
    int n = bp_order(&t, allowed ? &set : nullptr, &spec, order, BP_MAX_ORDER, warn, sizeof warn);
    std::vector<int> out;
    for (int k = 0; k < nthreads; k++)
        out.push_back(bp_thread_cpu(order, n, &skip, (unsigned)k));
    return out;
}

// The first n entries of `order` repeated as threads wrap around.
inline std::vector<int> cycle(const std::vector<int> &order, int n)
{
    std::vector<int> out;
    for (int k = 0; k < n; k++)
        out.push_back(order[(size_t)k % order.size()]);
    return out;
}

inline std::vector<int> range(int a, int b) // [a, b]
{
    std::vector<int> v;
    for (int i = a; i <= b; i++)
        v.push_back(i);
    return v;
}

inline std::vector<int> cat(std::vector<int> a, const std::vector<int> &b)
{
    a.insert(a.end(), b.begin(), b.end());
    return a;
}
