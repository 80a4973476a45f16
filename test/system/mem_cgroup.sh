#!/usr/bin/env bash
# The default cache bound follows a cgroup memory limit, not the host's memory: a process
# in a memory cgroup limited to 1 GB caches at most 1 GB / 8 = 128 MB (BOBOX_VERBOSE shows
# it; the bound outside is printed too). Needs a writable cgroup v1
# memory hierarchy or a cgroup v2 one that delegates the memory controller; skipped otherwise.
set -uo pipefail
BUILD=${BUILD:-build}
LIB=$(cd "$(dirname "$BUILD/libbobox.so")" && pwd)/libbobox.so
fail() { echo "FAIL: $*"; cleanup; exit 1; }
skip() { echo "SKIP: $*"; cleanup; exit 77; }
cg=
cleanup() { [ -n "$cg" ] && rmdir "$cg" 2>/dev/null; true; }
cache_mb() { sed -n 's/.*BOBOX_CACHE_MB=\([0-9]*\).*/\1/p' <<<"$1"; }

outside=$(env BOBOX_VERBOSE=1 LD_PRELOAD=$LIB true 2>&1)
echo "outside: $outside"

if [ -w /sys/fs/cgroup/memory ] && [ -f /sys/fs/cgroup/memory/memory.limit_in_bytes ]; then
    cg=/sys/fs/cgroup/memory/bobox-test-$$
    mkdir "$cg" 2>/dev/null || { cg=; skip "cannot make a v1 memory cgroup"; }
    echo $((1 << 30)) > "$cg/memory.limit_in_bytes" 2>/dev/null || skip "cannot set a v1 memory limit"
elif [ -f /sys/fs/cgroup/cgroup.controllers ] && [ -w /sys/fs/cgroup ]; then
    parent=/sys/fs/cgroup$(sed -n 's/^0:://p' /proc/self/cgroup)
    grep -qw memory "$parent/cgroup.subtree_control" 2>/dev/null || skip "memory controller not delegated here (v2)"
    cg=$parent/bobox-test-$$
    mkdir "$cg" 2>/dev/null || { cg=; skip "cannot make a v2 cgroup"; }
    echo $((1 << 30)) > "$cg/memory.max" 2>/dev/null || skip "cannot set memory.max"
else
    skip "no writable memory cgroup"
fi

inside=$(sh -c 'echo $$ > "$1/cgroup.procs" && exec env BOBOX_VERBOSE=1 LD_PRELOAD="$2" true' sh "$cg" "$LIB" 2>&1) ||
    skip "cannot move a process into the cgroup: $inside"
echo "inside a 1 GB cgroup: $inside"
[ "$(cache_mb "$inside")" = 128 ] || fail "cache bound in a 1 GB cgroup is not 128 MB: $inside"
cleanup
echo "cgroup ok"
