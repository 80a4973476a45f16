// The OS layer's reading of a container's memory limit, on cgroup fixtures written to a
// temporary directory (this machine's cgroup has no limit): v2 and v1 layouts, limits on
// parents, a container that sees its own cgroup as the mount's root, and files that say
// nothing ("max", garbage, missing).
#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
extern "C" {
#include "os/cgroup.h"
#include "os/os.h"
}

namespace fs = std::filesystem;

struct Fixture {
    fs::path root;
    Fixture() {
        char tmpl[] = "/tmp/bobox-cgroup-XXXXXX";
        REQUIRE(mkdtemp(tmpl) != nullptr);
        root = tmpl;
    }
    ~Fixture() { fs::remove_all(root); }
    void write(const std::string &rel, const std::string &text) const {
        fs::path p = root / rel;
        fs::create_directories(p.parent_path());
        std::ofstream(p) << text;
    }
    uint64_t limit() const { return bx_cgroup_memory_limit(root.c_str()); }
};

TEST_CASE("os: cgroup v2 memory.max, the lowest on the path up to the mount", "[os]") {
    Fixture f;
    f.write("proc/self/cgroup", "0::/system.slice/db.service\n");
    f.write("sys/fs/cgroup/system.slice/db.service/memory.max", "max\n");
    REQUIRE(f.limit() == UINT64_MAX);
    f.write("sys/fs/cgroup/system.slice/memory.max", "1073741824\n");
    REQUIRE(f.limit() == (uint64_t(1) << 30));
    f.write("sys/fs/cgroup/system.slice/db.service/memory.max", "536870912\n");
    REQUIRE(f.limit() == (uint64_t(512) << 20));
    // A cgroup whose controller is off (no memory.max) still passes its parent's limit on.
    Fixture g;
    g.write("proc/self/cgroup", "0::/a/b\n");
    g.write("sys/fs/cgroup/a/b/cgroup.procs", "");
    g.write("sys/fs/cgroup/a/memory.max", "134217728\n");
    REQUIRE(g.limit() == (uint64_t(128) << 20));
}

TEST_CASE("os: a container sees its cgroup as the mount's root", "[os]") {
    Fixture f;
    // /proc names the host's path, which does not exist inside the container.
    f.write("proc/self/cgroup", "0::/kubepods/pod1234/abcdef\n");
    f.write("sys/fs/cgroup/memory.max", "268435456\n");
    REQUIRE(f.limit() == (uint64_t(256) << 20));
    // A cgroup made inside the container: /proc names it below the host's path.
    f.write("proc/self/cgroup", "0::/kubepods/pod1234/abcdef/worker\n");
    f.write("sys/fs/cgroup/worker/memory.max", "67108864\n");
    REQUIRE(f.limit() == (uint64_t(64) << 20));
    // The same under cgroup v1, with the memory controller sharing a hierarchy.
    Fixture v1;
    v1.write("proc/self/cgroup", "12:pids:/docker/abc\n4:memory,hugetlb:/docker/abc\n1:name=systemd:/docker/abc\n");
    v1.write("sys/fs/cgroup/memory/memory.limit_in_bytes", "2147483648\n");
    REQUIRE(v1.limit() == (uint64_t(2) << 30));
}

TEST_CASE("os: no limit when the files say nothing usable", "[os]") {
    Fixture f;
    REQUIRE(f.limit() == UINT64_MAX); // no /proc/self/cgroup at all
    f.write("proc/self/cgroup", "0::/\n");
    REQUIRE(f.limit() == UINT64_MAX); // no memory.max
    f.write("sys/fs/cgroup/memory.max", "lots\n");
    REQUIRE(f.limit() == UINT64_MAX);
    f.write("sys/fs/cgroup/memory.max", "max\n");
    REQUIRE(f.limit() == UINT64_MAX);
    // v1 writes an unlimited cgroup as a huge page-aligned number: a limit above any RAM.
    Fixture v1;
    v1.write("proc/self/cgroup", "4:memory:/\n");
    v1.write("sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");
    REQUIRE(v1.limit() == 9223372036854771712u);
}
