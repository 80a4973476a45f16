// Reading sysfs-like trees: cores by sibling set, packages, nodes, caches, hybrid kinds, offline
// CPUs, hex-mask-only kernels.
#include "pin_helpers.hpp"

#include <set>

static std::set<int> members(const bt_core &k)
{
    return std::set<int>(k.sib, k.sib + k.nsib);
}

TEST_CASE("cpulist and cpumask parsing", "[pin][topology]")
{
    cpu_set_t s;
    REQUIRE(bt_parse_cpulist("0-3,8,10-11\n", &s) == 0);
    CHECK(CPU_COUNT(&s) == 7);
    CHECK(CPU_ISSET(8, &s));
    CHECK_FALSE(CPU_ISSET(9, &s));
    REQUIRE(bt_parse_cpulist("0-10:5", &s) == 0);
    CHECK(CPU_COUNT(&s) == 3);
    CHECK(CPU_ISSET(10, &s));
    REQUIRE(bt_parse_cpulist("\n", &s) == 0);
    CHECK(CPU_COUNT(&s) == 0);
    CHECK(bt_parse_cpulist("3-1", &s) != 0);
    CHECK(bt_parse_cpulist("1,,2", &s) != 0);
    CHECK(bt_parse_cpulist("a", &s) != 0);
    CHECK(bt_parse_cpulist("5000", &s) != 0);

    REQUIRE(bt_parse_cpumask("00000001,00000003\n", &s) == 0);
    CHECK(CPU_COUNT(&s) == 3);
    CHECK(CPU_ISSET(0, &s));
    CHECK(CPU_ISSET(1, &s));
    CHECK(CPU_ISSET(32, &s));
    REQUIRE(bt_parse_cpumask("f0", &s) == 0);
    CHECK(CPU_COUNT(&s) == 4);
    CHECK(CPU_ISSET(4, &s));
    CHECK(bt_parse_cpumask("xyz", &s) != 0);

    char buf[64];
    s = cpus("0-3,8,10-11");
    bt_format_cpulist(&s, buf, sizeof buf);
    CHECK(std::string(buf) == "0-3,8,10-11");
    bt_format_cpulist(&s, buf, 8);
    CHECK(std::string(buf) == "0-3...");
}

TEST_CASE("siblings numbered apart form one core", "[pin][topology]")
{
    auto t = load("ht4-apart");
    CHECK(t->nonline == 8);
    CHECK(t->ncores == 4);
    CHECK(t->npackages == 1);
    CHECK(t->nnodes == 1);
    for (int c = 0; c < 4; c++) {
        const bt_core &k = t->core[t->cpu[c].core];
        CHECK(members(k) == std::set<int>{ c, c + 4 });
        CHECK(t->cpu[c + 4].core == t->cpu[c].core);
        CHECK(k.core_id == c);
    }
    CHECK(t->cpu[5].l2 == 1); // L2 is the core's: leader is its lowest CPU
    CHECK(t->cpu[7].l3 == 0);
    CHECK(t->hybrid == 0);
}

TEST_CASE("core_id repeats across packages: cores are sibling sets", "[pin][topology]")
{
    auto t = load("2s8c-ht");
    CHECK(t->nonline == 32);
    CHECK(t->ncores == 16);
    CHECK(t->npackages == 2);
    CHECK(t->nnodes == 2);
    const bt_core &a = t->core[t->cpu[3].core], &b = t->core[t->cpu[11].core];
    CHECK(a.core_id == b.core_id); // both report core_id 3 ...
    CHECK(t->cpu[3].core != t->cpu[11].core); // ... but are different cores
    CHECK(members(a) == std::set<int>{ 3, 19 });
    CHECK(members(b) == std::set<int>{ 11, 27 });
    CHECK(a.package == 0);
    CHECK(b.package == 1);
    CHECK(a.node == 0);
    CHECK(b.node == 1);
    CHECK(t->core[t->cpu[4].core].core_id == 8); // core_id as the OS reports it, gaps included
    CHECK(t->cpu[27].l3 == 8);
    CHECK(t->cpu[27].l2 == 11);
}

TEST_CASE("the Opteron 8431 machine: 4 nodes x 6 cores, no HT", "[pin][topology]")
{
    auto t = load("opteron8431");
    CHECK(t->nonline == 24);
    CHECK(t->ncores == 24);
    CHECK(t->npackages == 4);
    CHECK(t->nnodes == 4);
    for (int c = 0; c < 24; c++) {
        CHECK(t->core[t->cpu[c].core].nsib == 1);
        CHECK(t->core[t->cpu[c].core].node == c / 6);
        CHECK(t->cpu[c].l3 == c / 6 * 6);
    }
}

TEST_CASE("hybrid part: P-cores and E-cores from cpu_core/cpu_atom", "[pin][topology]")
{
    auto t = load("hybrid");
    CHECK(t->hybrid == 1);
    CHECK(t->nclasses == 2);
    CHECK(t->ncores == 12);
    const bt_core &p = t->core[t->cpu[2].core], &e = t->core[t->cpu[9].core];
    CHECK(p.kind == BT_KIND_P);
    CHECK(p.cls == 0);
    CHECK(members(p) == std::set<int>{ 2, 3 });
    CHECK(e.kind == BT_KIND_E);
    CHECK(e.cls == 1);
    CHECK(e.nsib == 1);
    CHECK(t->cpu[9].l2 == 8); // E-cores share an L2 per cluster of four
    CHECK(t->cpu[13].l2 == 12);
    CHECK(t->cpu[9].capacity == 640);
}

TEST_CASE("offline CPUs are skipped, stale sibling lists are not trusted", "[pin][topology]")
{
    auto t = load("offline");
    CHECK(t->nonline == 6);
    CHECK_FALSE(CPU_ISSET(3, &t->online));
    CHECK_FALSE(CPU_ISSET(6, &t->online));
    CHECK_FALSE(t->cpu[3].online);
    CHECK(t->ncores == 4);
    CHECK(members(t->core[t->cpu[2].core]) == std::set<int>{ 2 }); // cpu2 still lists 3
    CHECK(members(t->core[t->cpu[7].core]) == std::set<int>{ 7 });
    CHECK(members(t->core[t->cpu[4].core]) == std::set<int>{ 4, 5 });
    CHECK(t->nnodes == 2);
    CHECK(t->core[t->cpu[7].core].node == 1);
}

TEST_CASE("an old kernel with hex masks only", "[pin][topology]")
{
    auto t = load("hexmask-old");
    CHECK(t->nonline == 40);
    CHECK(t->ncores == 20);
    CHECK(t->npackages == 2);
    CHECK(t->nnodes == 2);
    CHECK(members(t->core[t->cpu[11].core]) == std::set<int>{ 11, 31 }); // mask spans two words
    CHECK(t->core[t->cpu[31].core].node == 1);
    CHECK(t->cpu[31].l3 == 10);
}

TEST_CASE("a missing tree is an error with a message", "[pin][topology]")
{
    auto t = std::make_unique<bt_topology>();
    char err[600] = "";
    CHECK(bt_read(t.get(), fixture("does-not-exist").c_str(), err, sizeof err) != 0);
    CHECK(std::string(err).find("does-not-exist") != std::string::npos);
}

TEST_CASE("this machine's /sys reads", "[pin][topology]")
{
    auto t = std::make_unique<bt_topology>();
    char err[600] = "";
    REQUIRE(bt_read(t.get(), nullptr, err, sizeof err) == 0);
    CHECK(t->nonline >= 1);
    CHECK(t->ncores >= 1);
    CHECK(t->nnodes >= 1);
    CHECK(t->nonline == CPU_COUNT(&t->online));
}
