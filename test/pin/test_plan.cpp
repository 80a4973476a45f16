// The CPU order per fixture: scatter and compact for 1, N/2, N and 2N threads (N = allowed
// logical CPUs), explicit lists, allowed subsets, skip masks and the settings' parsers.
#include "pin_helpers.hpp"

#include <cstring>

// Checks 1, N/2, N and 2N threads against the full order of one round.
static void check_counts(const bt_topology &t, const char *policy, const std::vector<int> &order,
                         const char *allowed = nullptr)
{
    const int n = (int)order.size();
    for (int threads : { 1, n / 2, n, 2 * n }) {
        INFO(policy << " with " << threads << " threads");
        CHECK(plan(t, policy, threads, allowed) == cycle(order, threads));
    }
}

// Interleaves two ranges: a0, b0, a1, b1, ...
static std::vector<int> zip(const std::vector<int> &a, const std::vector<int> &b)
{
    std::vector<int> v;
    for (size_t i = 0; i < a.size(); i++) {
        v.push_back(a[i]);
        v.push_back(b[i]);
    }
    return v;
}

TEST_CASE("plan: 1 socket, 4 cores x 2 HT, siblings apart", "[pin][plan]")
{
    auto t = load("ht4-apart");
    // one CPU of each core (0-3), then the siblings (4-7)
    check_counts(*t, "scatter", range(0, 7));
    check_counts(*t, "compact", range(0, 7));
}

TEST_CASE("plan: 2 sockets x 8 cores x 2 HT on 2 nodes", "[pin][plan]")
{
    auto t = load("2s8c-ht");
    // scatter alternates the nodes; siblings (16-31) only after every core has a thread
    check_counts(*t, "scatter", cat(zip(range(0, 7), range(8, 15)), zip(range(16, 23), range(24, 31))));
    // compact fills node 0's cores, then node 1's, then the siblings in the same order
    check_counts(*t, "compact", range(0, 31));
}

TEST_CASE("plan: 4 NUMA nodes x 6 cores (Opteron 8431)", "[pin][plan]")
{
    auto t = load("opteron8431");
    std::vector<int> scatter;
    for (int i = 0; i < 6; i++)
        for (int node = 0; node < 4; node++)
            scatter.push_back(node * 6 + i);
    check_counts(*t, "scatter", scatter);
    check_counts(*t, "compact", range(0, 23));
}

TEST_CASE("plan: scatter spreads packages before the nodes inside them (4 x Magny-Cours)", "[pin][plan]")
{
    auto t = load("4s2n-magnycours"); // node n = CPUs n*6..n*6+5, package s = nodes 2s, 2s+1
    std::vector<int> scatter;
    for (int i = 0; i < 6; i++)
        for (int die = 0; die < 2; die++)
            for (int s = 0; s < 4; s++)
                scatter.push_back((s * 2 + die) * 6 + i);
    // 0, 12, 24, 36 (one per package), then 6, 18, 30, 42 (the packages' second nodes), ...
    check_counts(*t, "scatter", scatter);
    check_counts(*t, "compact", range(0, 47));
}

TEST_CASE("plan: 2 sockets x 2 nodes (sub-NUMA clusters) x 4 cores x 2 HT", "[pin][plan]")
{
    auto t = load("2s2n-snc-ht"); // nodes 0-3, 4-7 | 8-11, 12-15; siblings +16
    std::vector<int> round = { 0, 8, 4, 12, 1, 9, 5, 13, 2, 10, 6, 14, 3, 11, 7, 15 };
    std::vector<int> siblings;
    for (int c : round)
        siblings.push_back(c + 16);
    check_counts(*t, "scatter", cat(round, siblings));
    check_counts(*t, "compact", range(0, 31));
}

TEST_CASE("plan: EPYC NPS2, packages then nodes then L3 complexes then cores", "[pin][plan]")
{
    auto t = load("2s2n-epyc-nps2"); // node = 4 cores in 2 L3s of 2; siblings +16
    std::vector<int> round = { 0, 8, 4, 12, 2, 10, 6, 14, 1, 9, 5, 13, 3, 11, 7, 15 };
    std::vector<int> siblings;
    for (int c : round)
        siblings.push_back(c + 16);
    check_counts(*t, "scatter", cat(round, siblings));
    check_counts(*t, "compact", range(0, 31));
}

TEST_CASE("plan: a node holding two packages is the outer level", "[pin][plan]")
{
    auto t = load("4s-on-2n"); // node 0 = packages 0 (0-1), 1 (2-3); node 1 = packages 2, 3
    check_counts(*t, "scatter", { 0, 4, 2, 6, 1, 5, 3, 7 });
    check_counts(*t, "compact", range(0, 7));
}

// At every prefix of scatter's first round, the threads per package differ by at most one
// among packages with a core left, and so do the threads per node inside each package.
TEST_CASE("plan: scatter is balanced over packages, then nodes, on every fixture", "[pin][plan]")
{
    for (const char *name : { "ht4-apart", "2s8c-ht", "opteron8431", "offline", "hexmask-old", "4s2n-magnycours",
                              "2s2n-snc-ht", "2s2n-epyc-nps2" }) {
        INFO(name);
        auto t = load(name);
        std::vector<int> cores_of_pkg(BT_MAX_CPUS, 0), cores_of_node(BT_MAX_CPUS, 0);
        for (int i = 0; i < t->ncores; i++) {
            cores_of_pkg[(size_t)t->core[i].package]++;
            cores_of_node[(size_t)t->core[i].node]++;
        }
        auto order = plan(*t, "scatter", t->ncores);
        std::vector<int> in_pkg(BT_MAX_CPUS, 0), in_node(BT_MAX_CPUS, 0);
        for (int k = 0; k < t->ncores; k++) {
            const bt_core &c = t->core[t->cpu[order[(size_t)k]].core];
            int pkg = c.package, node = c.node;
            // this thread's package had the fewest threads among packages with a free core
            for (int i = 0; i < t->ncores; i++) {
                int p = t->core[i].package;
                if (in_pkg[(size_t)p] < cores_of_pkg[(size_t)p])
                    CHECK(in_pkg[(size_t)pkg] <= in_pkg[(size_t)p]);
                if (p == pkg && in_node[(size_t)t->core[i].node] < cores_of_node[(size_t)t->core[i].node])
                    CHECK(in_node[(size_t)node] <= in_node[(size_t)t->core[i].node]);
            }
            in_pkg[(size_t)pkg]++;
            in_node[(size_t)node]++;
        }
    }
}

TEST_CASE("plan: hybrid, P-cores then E-cores then P siblings", "[pin][plan]")
{
    auto t = load("hybrid");
    // scatter spreads the E-cores over their two L2 clusters (8-11, 12-15)
    check_counts(*t, "scatter", { 0, 2, 4, 6, 8, 12, 9, 13, 10, 14, 11, 15, 1, 3, 5, 7 });
    check_counts(*t, "compact", { 0, 2, 4, 6, 8, 9, 10, 11, 12, 13, 14, 15, 1, 3, 5, 7 });
}

TEST_CASE("plan: offline CPUs take no place", "[pin][plan]")
{
    auto t = load("offline");
    // cores {0,1} {2} on node 0, {4,5} {7} on node 1
    check_counts(*t, "scatter", { 0, 4, 2, 7, 1, 5 });
    check_counts(*t, "compact", { 0, 2, 4, 7, 1, 5 });
}

TEST_CASE("plan: hex masks only, 40 CPUs", "[pin][plan]")
{
    auto t = load("hexmask-old");
    check_counts(*t, "scatter", cat(zip(range(0, 9), range(10, 19)), zip(range(20, 29), range(30, 39))));
    check_counts(*t, "compact", range(0, 39));
}

TEST_CASE("plan: an allowed set that excludes CPUs", "[pin][plan]")
{
    auto t = load("2s8c-ht");
    // node 0: cores of 0,1,2,3 (16,17 siblings allowed); node 1: core of 8 and core {9,25}
    // with only 25 allowed, so 25 is that core's first CPU: a core counts if any CPU does
    const char *allowed = "0-3,8,16-17,25";
    check_counts(*t, "scatter", { 0, 8, 1, 25, 2, 3, 16, 17 }, allowed);
    check_counts(*t, "compact", { 0, 1, 2, 3, 8, 25, 16, 17 }, allowed);

    auto h = load("ht4-apart");
    check_counts(*h, "scatter", { 3, 4, 5, 6 }, "3-6"); // one CPU of each core, none a sibling
    check_counts(*h, "compact", { 0, 1, 4, 5 }, "0-1,4-5");

    // the whole of node 1 excluded: scatter has one node left to use
    check_counts(*t, "scatter", cat(range(0, 7), range(16, 23)), "0-7,16-23");
}

TEST_CASE("plan: explicit list keeps its order", "[pin][plan]")
{
    auto t = load("ht4-apart");
    CHECK(plan(*t, "2,0,4-7", 8) == std::vector<int>{ 2, 0, 4, 5, 6, 7, 2, 0 });
    CHECK(plan(*t, "0-6:3", 4) == std::vector<int>{ 0, 3, 6, 0 });
    CHECK(plan(*t, "1,1,2", 3) == std::vector<int>{ 1, 1, 2 });

    // CPUs not allowed are left out, with a warning
    static bp_spec spec;
    short order[BP_MAX_ORDER];
    char err[600], warn[600];
    REQUIRE(bp_parse_policy("7,1,3", &spec, err, sizeof err) == 0);
    cpu_set_t allowed = cpus("0-3");
    CHECK(bp_order(t.get(), &allowed, &spec, order, BP_MAX_ORDER, warn, sizeof warn) == 2);
    CHECK(order[0] == 1);
    CHECK(order[1] == 3);
    CHECK(std::string(warn).find("7") != std::string::npos);
    // offline CPUs too
    auto o = load("offline");
    REQUIRE(bp_parse_policy("3,2", &spec, err, sizeof err) == 0);
    CHECK(bp_order(o.get(), nullptr, &spec, order, BP_MAX_ORDER, warn, sizeof warn) == 1);
    CHECK(order[0] == 2);
}

TEST_CASE("plan: none and bad policies", "[pin][plan]")
{
    static bp_spec spec;
    char err[600] = "";
    CHECK(bp_parse_policy(nullptr, &spec, err, sizeof err) == 0);
    CHECK(spec.policy == BP_SCATTER);
    CHECK(bp_parse_policy("", &spec, err, sizeof err) == 0);
    CHECK(spec.policy == BP_SCATTER);
    CHECK(bp_parse_policy("COMPACT", &spec, err, sizeof err) == 0);
    CHECK(spec.policy == BP_COMPACT);
    CHECK(bp_parse_policy("none", &spec, err, sizeof err) == 0);
    CHECK(spec.policy == BP_NONE);
    for (const char *bad : { "spread", "1-", "3-1", "1,,2", "0x3", "-1", "1-2:0", "99999" }) {
        INFO(bad);
        err[0] = '\0';
        CHECK(bp_parse_policy(bad, &spec, err, sizeof err) != 0);
        CHECK(spec.policy == BP_NONE);
        CHECK(std::string(err).find("BOBOX_PIN=") == 0);
    }
    auto t = load("ht4-apart");
    short order[8];
    char warn[600];
    REQUIRE(bp_parse_policy("none", &spec, err, sizeof err) == 0);
    CHECK(bp_order(t.get(), nullptr, &spec, order, 8, warn, sizeof warn) == 0);
}

TEST_CASE("skip mask: skipped threads take no CPU", "[pin][plan]")
{
    auto t = load("opteron8431");
    // thread 1 skipped: thread 2 takes the CPU thread 1 would have had
    CHECK(plan(*t, "compact", 5, nullptr, "0x2") == std::vector<int>{ 0, -1, 1, 2, 3 });
    CHECK(plan(*t, "compact", 4, nullptr, "1") == std::vector<int>{ -1, 0, 1, 2 });
    CHECK(plan(*t, "compact", 6, nullptr, "0X14") == std::vector<int>{ 0, 1, -1, 2, -1, 3 });
    // a long mask: bit 40
    auto v = plan(*t, "compact", 42, nullptr, "10000000000");
    CHECK(v[40] == -1);
    CHECK(v[41] == 40 % 24);

    bp_skip skip;
    char err[600];
    CHECK(bp_parse_skip("", &skip, err, sizeof err) == 0);
    CHECK_FALSE(bp_skipped(&skip, 0));
    for (const char *bad : { "0x", "xyz", "0x1g", "-1" }) {
        INFO(bad);
        CHECK(bp_parse_skip(bad, &skip, err, sizeof err) != 0);
        CHECK(std::string(err).find("BOBOX_PIN_SKIP=") == 0);
    }
    CHECK(bp_skipped(&skip, 100000) == 0);
}

TEST_CASE("slots: creation order while no thread exits, a freed place goes to the next thread", "[pin][plan]")
{
    // No exits: the same places as the static plan (bp_thread_cpu), wrapping around.
    auto t = load("opteron8431");
    const int threads = 60;
    auto want = plan(*t, "scatter", threads);
    static bp_spec spec;
    static short order[BP_MAX_ORDER];
    char err[600], warn[600];
    REQUIRE(bp_parse_policy("scatter", &spec, err, sizeof err) == 0);
    int n = bp_order(t.get(), nullptr, &spec, order, BP_MAX_ORDER, warn, sizeof warn);
    REQUIRE(n == 24);
    std::vector<unsigned> live((size_t)n, 0);
    std::vector<int> got;
    for (int k = 0; k < threads; k++) {
        int s = bp_pick_slot(live.data(), n);
        live[(size_t)s]++;
        got.push_back(order[s]);
    }
    CHECK(got == want);

    // Two places: the main thread on place 0, then waves of three workers joined after each
    // wave (sort --parallel=4). Every wave takes places 1, 0, 1: two threads per place. By
    // creation order alone the second wave would take 0, 1, 0: three on place 0, one on 1.
    unsigned two[2] = { 1, 0 };
    for (int wave = 0; wave < 4; wave++) {
        INFO("wave " << wave);
        int a = bp_pick_slot(two, 2);
        two[a]++;
        int b = bp_pick_slot(two, 2);
        two[b]++;
        int c = bp_pick_slot(two, 2);
        two[c]++;
        CHECK(std::vector<int>{ a, b, c } == std::vector<int>{ 1, 0, 1 });
        CHECK(two[0] == 2);
        CHECK(two[1] == 2);
        two[a]--, two[b]--, two[c]--;
    }

    // A place freed in the middle is taken first; ties go to the earliest place.
    unsigned four[4] = { 2, 2, 1, 2 };
    CHECK(bp_pick_slot(four, 4) == 2);
    four[2] = 2;
    CHECK(bp_pick_slot(four, 4) == 0);
    CHECK(bp_pick_slot(four, 1) == 0);
}

TEST_CASE("plan on this machine covers each allowed CPU once", "[pin][plan]")
{
    auto t = std::make_unique<bt_topology>();
    char err[600];
    REQUIRE(bt_read(t.get(), nullptr, err, sizeof err) == 0);
    cpu_set_t allowed;
    REQUIRE(sched_getaffinity(0, sizeof allowed, &allowed) == 0);
    CPU_AND(&allowed, &allowed, &t->online);
    for (const char *policy : { "scatter", "compact" }) {
        auto v = plan(*t, policy, CPU_COUNT(&allowed));
        cpu_set_t seen;
        CPU_ZERO(&seen);
        for (int c : v)
            CPU_SET(c, &seen);
        CHECK(CPU_EQUAL(&seen, &allowed));
    }
}

TEST_CASE("inherited allowed set: our one-CPU mask is replaced, others stand", "[pin][plan]")
{
    cpu_set_t m = cpus("3");
    const cpu_set_t all = cpus("0-7");
    CHECK(bp_inherit_allowed(&m, "P:0-7") == 1);
    CHECK(CPU_EQUAL(&m, &all));
    m = cpus("3");
    CHECK(bp_inherit_allowed(&m, "F:0-7") == 0); // the program pinned something itself
    CHECK(CPU_COUNT(&m) == 1);
    m = cpus("2-3");
    CHECK(bp_inherit_allowed(&m, "P:0-7") == 0); // narrowed to two CPUs: not our doing
    m = cpus("9");
    CHECK(bp_inherit_allowed(&m, "P:0-7") == 0); // outside the parent's set
    m = cpus("3");
    CHECK(bp_inherit_allowed(&m, nullptr) == 0);
    CHECK(bp_inherit_allowed(&m, "X:") == 0);
    CHECK(bp_inherit_allowed(&m, "P:junk") == 0);
    CHECK(CPU_COUNT(&m) == 1);
}

TEST_CASE("domains: likwid-pin expressions, physical cores first", "[pin][plan][domains]")
{
    auto t = load("2s8c-ht"); // package s = CPUs s*8..s*8+7, siblings +16; node = package
    CHECK(plan(*t, "S0:0-3", 4) == std::vector<int>{ 0, 1, 2, 3 });
    CHECK(plan(*t, "S1:0-3", 4) == std::vector<int>{ 8, 9, 10, 11 });
    CHECK(plan(*t, "S0:7-9", 3) == std::vector<int>{ 7, 16, 17 }); // past the cores: the siblings
    CHECK(plan(*t, "S0:0-1@S1:0-1", 4) == std::vector<int>{ 0, 1, 8, 9 });
    CHECK(plan(*t, "M1:0,2,4", 3) == std::vector<int>{ 8, 10, 12 });
    CHECK(plan(*t, "N1:0-7:2", 4) == std::vector<int>{ 8, 10, 12, 14 }); // N<i>: NUMA node i
    CHECK(plan(*t, "N:0-1", 2) == std::vector<int>{ 0, 1 });             // N: the machine
    CHECK(plan(*t, "N:15-16", 2) == std::vector<int>{ 15, 16 });
    CHECK(plan(*t, "C1:0", 1) == std::vector<int>{ 8 }); // the second L3

    auto h = load("ht4-apart"); // core c = CPUs c and c+4
    CHECK(plan(*h, "S0:0-7", 8) == range(0, 7));
    auto m = load("4s2n-magnycours"); // L3 per node: C3 = node 3 = CPUs 18-23
    CHECK(plan(*m, "C3:0-1", 2) == std::vector<int>{ 18, 19 });
    CHECK(plan(*m, "S1:0-11:6", 2) == std::vector<int>{ 12, 18 });
    auto y = load("hybrid"); // P-cores 0,2,4,6 (siblings 1,3,5,7), E-cores 8-15
    CHECK(plan(*y, "S0:0-5", 6) == std::vector<int>{ 0, 2, 4, 6, 8, 9 });
    CHECK(plan(*y, "S0:12-15", 4) == std::vector<int>{ 1, 3, 5, 7 });

    // indices past the domain, and CPUs not allowed: left out, with a warning
    static bp_spec spec;
    short order[BP_MAX_ORDER];
    char err[600], warn[600];
    REQUIRE(bp_parse_policy("S1:14-17@S0:0", &spec, err, sizeof err) == 0);
    CHECK(bp_order(t.get(), nullptr, &spec, order, BP_MAX_ORDER, warn, sizeof warn) == 3);
    CHECK(std::vector<int>(order, order + 3) == std::vector<int>{ 30, 31, 0 });
    CHECK(std::string(warn).find("S1 has 16 CPUs, no index 16") != std::string::npos);
    REQUIRE(bp_parse_policy("S7:0", &spec, err, sizeof err) == 0);
    CHECK(bp_order(t.get(), nullptr, &spec, order, BP_MAX_ORDER, warn, sizeof warn) == 0);
    CHECK(std::string(warn).find("S7 has 0 CPUs") != std::string::npos);
    cpu_set_t allowed = cpus("0-7");
    REQUIRE(bp_parse_policy("S0:0@S1:0", &spec, err, sizeof err) == 0);
    CHECK(bp_order(t.get(), &allowed, &spec, order, BP_MAX_ORDER, warn, sizeof warn) == 1);
    CHECK(order[0] == 0);
    CHECK(std::string(warn).find("left out: 8") != std::string::npos);

    for (const char *bad : { "S0:", "S:0", "S0:1-", "C:1", "M0", "S0:0@", "S0:0@X1:0", "S0-1:0", "N1:0-3@" }) {
        INFO(bad);
        CHECK(bp_parse_policy(bad, &spec, err, sizeof err) != 0);
        CHECK(spec.policy == BP_NONE);
        CHECK(std::string(err).find("BOBOX_PIN=") == 0);
    }
}

TEST_CASE("cores=p: E-cores take no thread", "[pin][plan]")
{
    auto y = load("hybrid");
    static bp_spec spec;
    static short order[BP_MAX_ORDER];
    char err[600], warn[600];
    REQUIRE(bp_parse_policy("scatter", &spec, err, sizeof err) == 0);
    REQUIRE(bp_parse_cores("p", &spec, err, sizeof err) == 0);
    int n = bp_order(y.get(), nullptr, &spec, order, BP_MAX_ORDER, warn, sizeof warn);
    CHECK(std::vector<int>(order, order + n) == std::vector<int>{ 0, 2, 4, 6, 1, 3, 5, 7 });
    REQUIRE(bp_parse_policy("S0:0-5", &spec, err, sizeof err) == 0);
    REQUIRE(bp_parse_cores("P", &spec, err, sizeof err) == 0);
    n = bp_order(y.get(), nullptr, &spec, order, BP_MAX_ORDER, warn, sizeof warn);
    CHECK(std::vector<int>(order, order + n) == std::vector<int>{ 0, 2, 4, 6 }); // 8, 9 left out
    // no E-cores: nothing changes
    auto t = load("2s8c-ht");
    REQUIRE(bp_parse_policy("compact", &spec, err, sizeof err) == 0);
    REQUIRE(bp_parse_cores("p", &spec, err, sizeof err) == 0);
    CHECK(bp_order(t.get(), nullptr, &spec, order, BP_MAX_ORDER, warn, sizeof warn) == 32);
    CHECK(bp_parse_cores("all", &spec, err, sizeof err) == 0);
    CHECK(spec.pcores_only == 0);
    CHECK(bp_parse_cores("e", &spec, err, sizeof err) != 0);
    CHECK(std::string(err).find("BOBOX_PIN_CORES=e") == 0);
}

TEST_CASE("places: OpenMP place names, one thread per place, bound to all of it", "[pin][plan][places]")
{
    auto t = load("2s8c-ht"); // packages = nodes = L3s: CPUs 0-7 | 8-15, siblings +16
    // cores: the scatter order without siblings; a thread gets its core's two CPUs
    CHECK(plan(*t, "cores", 17) == cycle(zip(range(0, 7), range(8, 15)), 17));
    CHECK(plan(*t, "numa_domains", 3) == std::vector<int>{ 0, 8, 0 });
    CHECK(plan(*t, "sockets", 2) == std::vector<int>{ 0, 8 });
    CHECK(plan(*t, "ll_caches", 2) == std::vector<int>{ 0, 8 });
    CHECK(plan(*t, "threads", 32) == plan(*t, "scatter", 32));
    cpu_set_t s, want;
    bp_place_cpus(t.get(), nullptr, BP_UNIT_CORE, 9, &s);
    want = cpus("9,25");
    CHECK(CPU_EQUAL(&s, &want));
    bp_place_cpus(t.get(), nullptr, BP_UNIT_NODE, 8, &s);
    want = cpus("8-15,24-31");
    CHECK(CPU_EQUAL(&s, &want));
    cpu_set_t allowed = cpus("0-3,16-17");
    bp_place_cpus(t.get(), &allowed, BP_UNIT_PACKAGE, 1, &s);
    want = cpus("0-3,16-17"); // only what the process may use
    CHECK(CPU_EQUAL(&s, &want));
    bp_place_cpus(t.get(), nullptr, BP_UNIT_CPU, 5, &s);
    want = cpus("5");
    CHECK(CPU_EQUAL(&s, &want));

    auto e = load("2s2n-epyc-nps2"); // L3 = 2 cores; nodes of 2 L3s; packages of 2 nodes
    CHECK(plan(*e, "ll_caches", 8) == std::vector<int>{ 0, 8, 4, 12, 2, 10, 6, 14 });
    CHECK(plan(*e, "numa_domains", 4) == std::vector<int>{ 0, 8, 4, 12 });
    bp_place_cpus(e.get(), nullptr, BP_UNIT_L3, 6, &s);
    want = cpus("6-7,22-23");
    CHECK(CPU_EQUAL(&s, &want));
    static bp_spec spec;
    char err[600];
    REQUIRE(bp_parse_policy("NUMA_DOMAINS", &spec, err, sizeof err) == 0);
    CHECK(spec.unit == BP_UNIT_NODE);
    CHECK(std::string(bp_unit_name(spec.unit)) == "numa_domains");
    CHECK(bp_parse_policy("numa", &spec, err, sizeof err) != 0);
}

// What thread k is bound to in the static model (no exits): its place, or the wider set of
// oversubscription once every place holds as many threads as it has CPUs.
static std::vector<std::string> bound(const bt_topology &t, const char *policy, int nthreads,
                                      const char *allowed = nullptr)
{
    static bp_spec spec;
    static short order[BP_MAX_ORDER];
    bp_skip skip;
    char err[600], warn[600], list[512];
    REQUIRE(bp_parse_policy(policy, &spec, err, sizeof err) == 0);
    REQUIRE(bp_parse_skip(nullptr, &skip, err, sizeof err) == 0);
    cpu_set_t set;
    if (allowed)
        set = cpus(allowed);
    int n = bp_order(&t, allowed ? &set : nullptr, &spec, order, BP_MAX_ORDER, warn, sizeof warn);
    std::vector<std::string> out;
    for (int k = 0; k < nthreads; k++) {
        int cpu = bp_thread_cpu(order, n, &skip, (unsigned)k);
        cpu_set_t s;
        if (bp_overflows(&t, allowed ? &set : nullptr, spec.unit, cpu, bp_thread_round(n, &skip, (unsigned)k)))
            bp_overflow_cpus(&t, allowed ? &set : nullptr, order, n, spec.unit, cpu, &s);
        else
            bp_place_cpus(&t, allowed ? &set : nullptr, spec.unit, cpu, &s);
        bt_format_cpulist(&s, list, sizeof list);
        out.push_back(list);
    }
    return out;
}

TEST_CASE("oversubscription: threads beyond the places are bound to their node, not one CPU", "[pin][plan][over]")
{
    auto t = load("2s8c-ht"); // nodes = packages: CPUs 0-7 | 8-15, siblings +16
    auto b = bound(*t, "scatter", 35);
    for (int k = 0; k < 32; k++) // every CPU once: one CPU each
        CHECK(b[(size_t)k] == std::to_string(plan(*t, "scatter", 32)[(size_t)k]));
    CHECK(b[32] == "0-7,16-23"); // thread 32 would have had CPU 0 again: node 0
    CHECK(b[33] == "8-15,24-31");
    CHECK(b[34] == "0-7,16-23");
    // places: a core holds two threads before it is full
    b = bound(*t, "cores", 34);
    CHECK(b[16] == "0,16");
    CHECK(b[31] == "15,31");
    CHECK(b[32] == "0-7,16-23");
    CHECK(b[33] == "8-15,24-31");
    // a list keeps to the CPUs it names: those of the node, else of the package, else all of them
    CHECK(bound(*t, "0,1,8", 6) == std::vector<std::string>{ "0", "1", "8", "0-1", "0-1", "0-1,8" });
    // one listed CPU on each node: the package is the node here, so the whole list
    CHECK(bound(*t, "0,8", 4) == std::vector<std::string>{ "0", "8", "0,8", "0,8" });
    // one CPU in all: nothing wider to go to
    CHECK(bound(*t, "5", 3) == std::vector<std::string>{ "5", "5", "5" });
    // an allowed subset: only what the process may use
    CHECK(bound(*t, "scatter", 5, "0-1,8-9") == std::vector<std::string>{ "0", "8", "1", "9", "0-1" });

    auto s = load("2s2n-snc-ht"); // nodes 0-3, 4-7 | 8-11, 12-15 (+16): the node, not the package
    b = bound(*s, "scatter", 33);
    CHECK(b[32] == "0-3,16-19");
    // a node with one CPU of the list: its package's CPUs of the list
    CHECK(bound(*s, "0,4,8", 4)[3] == "0,4");

    cpu_set_t out;
    short order[2] = { 0, 8 };
    CHECK(bp_overflow_cpus(t.get(), nullptr, order, 2, BP_UNIT_CPU, 0, &out) == 1);
    CHECK(bp_overflows(t.get(), nullptr, BP_UNIT_CPU, 0, 0) == 0);
    CHECK(bp_overflows(t.get(), nullptr, BP_UNIT_CPU, 0, 1) == 1);
    CHECK(bp_overflows(t.get(), nullptr, BP_UNIT_CORE, 0, 1) == 0);
    CHECK(bp_overflows(t.get(), nullptr, BP_UNIT_CORE, 0, 2) == 1);
}
