// jemalloc's control interface (mallctl and friends) as bobox answers it: jemalloc's
// signatures and error numbers, values from bobox's own statistics, and bobox's names.
#include <catch2/catch.hpp>

#include <string>
#include <thread>
#include <vector>

#include "api.h"

using namespace api;

namespace {
using ctl_fn = int (*)(const char *, void *, size_t *, void *, size_t);
using nametomib_fn = int (*)(const char *, size_t *, size_t *);
using bymib_fn = int (*)(const size_t *, size_t, void *, size_t *, void *, size_t);
using stats_print_fn = void (*)(void (*)(void *, const char *), void *, const char *);

struct ctl_api {
    ctl_fn ctl;
    nametomib_fn nametomib;
    bymib_fn bymib;
    stats_print_fn stats_print;
};

// Prefixed build: bobox_ctl...; preload build: jemalloc's names, which must be libbobox.so's.
ctl_api the_api() {
#ifdef API_PREFIXED
    return {&bobox_ctl, &bobox_ctlnametomib, &bobox_ctlbymib, &bobox_stats_print};
#else
    ctl_api a{lookup<ctl_fn>("mallctl"), lookup<nametomib_fn>("mallctlnametomib"), lookup<bymib_fn>("mallctlbymib"),
              lookup<stats_print_fn>("malloc_stats_print")};
    REQUIRE(a.ctl != nullptr);
    REQUIRE(a.nametomib != nullptr);
    REQUIRE(a.bymib != nullptr);
    REQUIRE(a.stats_print != nullptr);
    REQUIRE(a.ctl == lookup<ctl_fn>("bobox_ctl"));
    Dl_info info;
    REQUIRE(dladdr(reinterpret_cast<void *>(a.ctl), &info) != 0);
    REQUIRE(std::string(info.dli_fname).find("libbobox.so") != std::string::npos);
    return a;
#endif
}

size_t read_size(const ctl_api &a, const char *name) {
    size_t v = 0, len = sizeof v;
    REQUIRE(a.ctl(name, &v, &len, nullptr, 0) == 0);
    REQUIRE(len == sizeof v);
    return v;
}

void refresh(const ctl_api &a) {
    uint64_t e = 1;
    size_t len = sizeof e;
    REQUIRE(a.ctl("epoch", &e, &len, &e, sizeof e) == 0);
}
} // namespace

TEST_CASE("mallctl: jemalloc's error numbers", "[api][ctl]") {
    ctl_api a = the_api();
    size_t v = 0, len = sizeof v;
    CHECK(a.ctl("no.such.name", &v, &len, nullptr, 0) == ENOENT);
    CHECK(a.ctl("stats", &v, &len, nullptr, 0) == ENOENT);             // an inner node
    CHECK(a.ctl("stats.allocated.x", &v, &len, nullptr, 0) == ENOENT); // past a leaf
    CHECK(a.ctl("stats..allocated", &v, &len, nullptr, 0) == ENOENT);
    CHECK(a.ctl("", &v, &len, nullptr, 0) == ENOENT);
    CHECK(a.ctl(nullptr, &v, &len, nullptr, 0) == ENOENT);
    CHECK(a.ctl("arena.7.purge", nullptr, nullptr, nullptr, 0) == ENOENT); // no such arena
    CHECK(a.ctl("arena.x.purge", nullptr, nullptr, nullptr, 0) == ENOENT);

    // A wrong size: what fits is copied, the size says how much, EINVAL.
    uint32_t small = 0;
    len = sizeof small;
    CHECK(a.ctl("stats.allocated", &small, &len, nullptr, 0) == EINVAL);
    CHECK(len == sizeof small);
    unsigned n = 0;
    len = sizeof(uint64_t);
    CHECK(a.ctl("arenas.narenas", &n, &len, nullptr, 0) == EINVAL);
    len = sizeof n;
    CHECK(a.ctl("arenas.narenas", &n, &len, nullptr, 0) == 0);
    CHECK(n == 1);

    // Read-only names refuse a write, write-only ones a read.
    size_t w = 5;
    len = sizeof v;
    CHECK(a.ctl("stats.allocated", &v, &len, &w, sizeof w) == EPERM);
    CHECK(a.ctl("arenas.narenas", nullptr, nullptr, &n, sizeof n) == EPERM);
    CHECK(a.ctl("arena.0.purge", &v, &len, nullptr, 0) == EPERM);
    CHECK(a.ctl("thread.tcache.flush", &v, &len, nullptr, 0) == EPERM);
    // A write of the wrong size.
    uint32_t e32 = 1;
    CHECK(a.ctl("epoch", nullptr, nullptr, &e32, sizeof e32) == EINVAL);
    uint64_t decay = 0;
    CHECK(a.ctl("bobox.decay_ms", nullptr, nullptr, &e32, sizeof e32) == EINVAL);
    decay = 3600 * 1000 + 1;
    CHECK(a.ctl("bobox.decay_ms", nullptr, nullptr, &decay, sizeof decay) == EINVAL);
}

TEST_CASE("mallctl: statistics follow the program's allocations", "[api][ctl]") {
    ctl_api a = the_api();
    // The thread's counters from here (a thread that reads them takes a heap of its own).
    uint64_t t_start = 0;
    size_t t_len = sizeof t_start;
    REQUIRE(a.ctl("thread.allocated", &t_start, &t_len, nullptr, 0) == 0);
    refresh(a);
    size_t before = read_size(a, "stats.allocated");
    const size_t count = 2000, size = 1000;
    std::vector<void *> objs;
    for (size_t i = 0; i < count; i++) {
        objs.push_back(a_malloc(size));
        memset(objs.back(), 1, size);
    }
    void *large = a_malloc(8 * MB);
    memset(large, 1, 8 * MB);
    // Not refreshed yet: the same snapshot (jemalloc's epoch rule).
    CHECK(read_size(a, "stats.allocated") == before);
    uint64_t e1 = 0, e2 = 0, one = 1;
    size_t len = sizeof e1;
    REQUIRE(a.ctl("epoch", &e1, &len, nullptr, 0) == 0);
    REQUIRE(a.ctl("epoch", &e2, &len, &one, sizeof one) == 0);
    CHECK(e2 > e1);
    size_t allocated = read_size(a, "stats.allocated");
    CHECK(allocated >= before + count * size + 8 * MB);
    CHECK(allocated < before + count * size * 2 + 9 * MB);
    size_t active = read_size(a, "stats.active"), resident = read_size(a, "stats.resident"),
           mapped = read_size(a, "stats.mapped");
    CHECK(active >= allocated);
    CHECK(resident >= active);
    CHECK(mapped >= allocated);
    CHECK(read_size(a, "stats.metadata") > 0);
    (void)read_size(a, "stats.retained");
    // bobox's own name for the same count, never a snapshot.
    size_t in_use = read_size(a, "bobox.stats.in_use");
    CHECK(in_use >= allocated - 65536);
    CHECK(read_size(a, "bobox.stats.mapped") >= in_use);

    // thread.allocated/deallocated: this thread's bytes.
    uint64_t t_alloc0 = 0, t_dealloc0 = 0, t_alloc1 = 0, t_dealloc1 = 0;
    len = sizeof t_alloc0;
    REQUIRE(a.ctl("thread.allocated", &t_alloc0, &len, nullptr, 0) == 0);
    REQUIRE(a.ctl("thread.deallocated", &t_dealloc0, &len, nullptr, 0) == 0);
    for (void *p : objs) a_free(p);
    a_free(large);
    REQUIRE(a.ctl("thread.allocated", &t_alloc1, &len, nullptr, 0) == 0);
    REQUIRE(a.ctl("thread.deallocated", &t_dealloc1, &len, nullptr, 0) == 0);
    CHECK(t_alloc0 >= t_start + count * size + 8 * MB);
    if (checked_mode()) return; // its quarantine holds what was freed: still allocated
    CHECK(t_dealloc1 >= t_dealloc0 + count * size + 8 * MB);

    refresh(a);
    CHECK(read_size(a, "stats.allocated") < allocated - count * size);
}

TEST_CASE("mallctl: purges, arenas and MIBs", "[api][ctl]") {
    ctl_api a = the_api();
    // Redis's purge: arena.<narenas>.purge; MALLCTL_ARENAS_ALL is 4096.
    CHECK(a.ctl("arena.0.purge", nullptr, nullptr, nullptr, 0) == 0);
    CHECK(a.ctl("arena.1.purge", nullptr, nullptr, nullptr, 0) == 0);
    CHECK(a.ctl("arena.4096.purge", nullptr, nullptr, nullptr, 0) == 0);
    CHECK(a.ctl("arena.4096.decay", nullptr, nullptr, nullptr, 0) == 0);
    CHECK(a.ctl("thread.tcache.flush", nullptr, nullptr, nullptr, 0) == 0);
    CHECK(a.ctl("bobox.purge", nullptr, nullptr, nullptr, 0) == 0);
    // A purge gives a freed large object's memory back to the OS (checked mode keeps it in
    // its quarantine a while).
    size_t released0 = read_size(a, "bobox.stats.released");
    void *p = a_malloc(32 * MB);
    memset(p, 1, 32 * MB);
    a_free(p);
    CHECK(a.ctl("arena.4096.purge", nullptr, nullptr, nullptr, 0) == 0);
    if (!checked_mode()) CHECK(read_size(a, "bobox.stats.released") >= released0 + 32 * MB);

    size_t mib[4], miblen = 4;
    REQUIRE(a.nametomib("arena.0.purge", mib, &miblen) == 0);
    REQUIRE(miblen == 3);
    mib[1] = 4096;
    CHECK(a.bymib(mib, miblen, nullptr, nullptr, nullptr, 0) == 0);
    mib[1] = 99;
    CHECK(a.bymib(mib, miblen, nullptr, nullptr, nullptr, 0) == ENOENT);
    miblen = 2;
    CHECK(a.nametomib("arena.0.purge", mib, &miblen) == ENOENT); // deeper than the room given
    miblen = 4;
    REQUIRE(a.nametomib("stats.arenas.4096.pmuzzy", mib, &miblen) == 0);
    REQUIRE(miblen == 4);
    size_t pages = 1, len = sizeof pages;
    CHECK(a.bymib(mib, miblen, &pages, &len, nullptr, 0) == 0);
    CHECK(pages == 0);
    miblen = 4;
    REQUIRE(a.nametomib("stats.allocated", mib, &miblen) == 0);
    REQUIRE(miblen == 2);
    mib[1] = 1000;
    CHECK(a.bymib(mib, miblen, &pages, &len, nullptr, 0) == ENOENT);
    CHECK(a.bymib(nullptr, 0, &pages, &len, nullptr, 0) == ENOENT);
}

TEST_CASE("mallctl: version, options and bobox's control", "[api][ctl]") {
    ctl_api a = the_api();
    const char *version = nullptr;
    size_t len = sizeof version;
    REQUIRE(a.ctl("version", &version, &len, nullptr, 0) == 0);
    CHECK(std::string(version).rfind("5.", 0) == 0);
    REQUIRE(a.ctl("bobox.version", &version, &len, nullptr, 0) == 0);
    CHECK(std::string(version) == BOBOX_VERSION);
    bool b = false;
    len = sizeof b;
    CHECK(a.ctl("opt.tcache", &b, &len, nullptr, 0) == 0);
    CHECK(b);
    CHECK(a.ctl("config.stats", &b, &len, nullptr, 0) == 0);
    CHECK(b);
    b = true;
    CHECK(a.ctl("background_thread", nullptr, nullptr, &b, sizeof b) == 0); // Redis sets it
    ssize_t decay_opt = -2;
    len = sizeof decay_opt;
    CHECK(a.ctl("opt.dirty_decay_ms", &decay_opt, &len, nullptr, 0) == 0);

    uint64_t old = 0, set = 250, now = 0;
    len = sizeof old;
    REQUIRE(a.ctl("bobox.decay_ms", &old, &len, &set, sizeof set) == 0);
    CHECK(old == uint64_t(decay_opt));
    REQUIRE(a.ctl("bobox.decay_ms", &now, &len, nullptr, 0) == 0);
    CHECK(now == 250);
    REQUIRE(a.ctl("bobox.decay_ms", nullptr, nullptr, &old, sizeof old) == 0);

    int ok = 0;
    len = sizeof ok;
    REQUIRE(a.ctl("bobox.check_heap", &ok, &len, nullptr, 0) == 0);
    CHECK(ok == 1);
    // Profiling is off in this test: a dump has nothing to write.
    CHECK(a.ctl("bobox.prof.dump", nullptr, nullptr, nullptr, 0) == ENOENT);

    std::string text;
    a.stats_print([](void *arg, const char *s) { *static_cast<std::string *>(arg) += s; }, &text, nullptr);
    CHECK(text.find("___ Begin jemalloc statistics ___") == 0);
    CHECK(text.find("Allocated: ") != std::string::npos);
    CHECK(text.find("bobox: memory: in use") != std::string::npos);
    CHECK(text.find("--- End jemalloc statistics ---") != std::string::npos);
}

TEST_CASE("mallctl: a purge gives back the free blocks of superblocks still in use", "[api][ctl]") {
    ctl_api a = the_api();
    // 48 MB of 256-byte objects, then all but one in 4096 (one in every 16th block) freed: every
    // superblock keeps a few live objects, so only its free blocks' pages can go back.
    const size_t n = 48 * MB / 256;
    std::vector<unsigned char *> objs(n);
    for (size_t i = 0; i < n; i++) {
        objs[i] = static_cast<unsigned char *>(a_malloc(256));
        memset(objs[i], int(i & 0xff), 256);
    }
    for (size_t i = 0; i < n; i++)
        if (i % 4096) a_free(objs[i]);
    size_t released0 = read_size(a, "bobox.stats.released");
    REQUIRE(a.ctl("arena.4096.purge", nullptr, nullptr, nullptr, 0) == 0);
    size_t released = read_size(a, "bobox.stats.released") - released0;
    CHECK(released >= 30 * MB);
    // The survivors are intact, and the blocks given back serve new objects.
    for (size_t i = 0; i < n; i += 4096) {
        CHECK(objs[i][0] == (i & 0xff));
        CHECK(objs[i][255] == (i & 0xff));
    }
    for (size_t i = 0; i < n; i++)
        if (i % 4096) {
            objs[i] = static_cast<unsigned char *>(a_malloc(256));
            memset(objs[i], 7, 256);
        }
    for (size_t i = 0; i < n; i++) {
        CHECK(objs[i][100] == (i % 4096 ? 7 : (i & 0xff)));
        a_free(objs[i]);
    }
}

TEST_CASE("mallctl: the shared heaps of threads not yet busy are counted", "[api][ctl]") {
    if (foreign_allowed()) return;
    ctl_api a = the_api();
    // A thread with a few allocations stays on its CPU's shared heap (checked mode gives
    // every thread a heap of its own: none is shared there).
    std::thread([] {
        void *p = a_malloc(100);
        REQUIRE(p != nullptr);
        a_free(p);
    }).join();
    size_t shared = read_size(a, "bobox.stats.heaps_shared");
    long cpus = sysconf(_SC_NPROCESSORS_CONF);
    if (checked_mode())
        CHECK(shared == 0);
    else
        CHECK(shared >= 1);
    CHECK(shared <= (size_t)(cpus > 0 ? cpus : 1) + 16); // one per CPU, or per slot without rseq
    // The report prints the same count.
    std::string report;
    a.stats_print([](void *out, const char *s) { *static_cast<std::string *>(out) += s; }, &report, nullptr);
    CHECK(report.find("shared " + std::to_string(shared) + ",") != std::string::npos);
}
