#!/usr/bin/env bash
# The default cache bound follows a cgroup memory limit, not the host's memory: a process
# in a memory cgroup limited to 1 GB caches at most 1 GB / 8 = 128 MB (BOBOX_VERBOSE shows
# it; the bound outside is printed too). Needs a writable cgroup v1 memory hierarchy or a
# cgroup v2 one that delegates the memory controller: skipped only when the cgroup cannot be
# made, limited or joined; a failure of the preloaded run inside it fails.
source "$(dirname "$0")/../lib/common.sh" || exit 1
need_lib
cg=
trap '[ -n "$cg" ] && rmdir "$cg" 2>/dev/null; rm -rf "$TMP"' EXIT
cache_mb() { sed -n 's/.*BOBOX_CACHE_MB=\([0-9]*\).*/\1/p' <<<"$1"; }

outside=$(env BOBOX_VERBOSE=1 LD_PRELOAD=$SO true 2>&1) || fail "the preloaded run outside a cgroup failed: $outside"
echo "outside: $outside"
[ -n "$(cache_mb "$outside")" ] || fail "BOBOX_VERBOSE printed no cache bound: $outside"

name=bobox-test-$$
if [ -w /sys/fs/cgroup/memory ] && [ -f /sys/fs/cgroup/memory/memory.limit_in_bytes ]; then
    mkdir "/sys/fs/cgroup/memory/$name" 2>"$TMP/err" || skip "cannot make a v1 memory cgroup: $(cat "$TMP/err")"
    cg=/sys/fs/cgroup/memory/$name
    echo $((1 << 30)) 2>"$TMP/err" >"$cg/memory.limit_in_bytes" || skip "cannot set a v1 memory limit: $(cat "$TMP/err")"
elif [ -f /sys/fs/cgroup/cgroup.controllers ] && [ -w /sys/fs/cgroup ]; then
    parent=/sys/fs/cgroup$(sed -n 's/^0:://p' /proc/self/cgroup)
    grep -qw memory "$parent/cgroup.subtree_control" 2>/dev/null || skip "memory controller not delegated to $parent (v2)"
    mkdir "$parent/$name" 2>"$TMP/err" || skip "cannot make a v2 cgroup in $parent: $(cat "$TMP/err")"
    cg=$parent/$name
    echo $((1 << 30)) 2>"$TMP/err" >"$cg/memory.max" || skip "cannot set memory.max: $(cat "$TMP/err")"
else
    skip "no writable memory cgroup (neither /sys/fs/cgroup/memory nor a writable v2 root)"
fi

# The shell joins the cgroup (exit 98 with a marker when it cannot: the only skip from here on),
# then becomes the preloaded program, which prints the cgroups it runs in.
inside=$(sh -c 'echo $$ 2>/dev/null >"$1/cgroup.procs" || { echo "cannot join $1"; exit 98; }
                exec env BOBOX_VERBOSE=1 LD_PRELOAD="$2" cat /proc/self/cgroup' sh "$cg" "$SO" 2>&1)
rc=$?
[ $rc = 98 ] && grep -q "^cannot join " <<<"$inside" && skip "cannot move a process into $cg"
echo "inside a 1 GB cgroup: $inside"
[ $rc = 0 ] || fail "the preloaded run inside the cgroup exited with $rc: $inside"
grep -q "/$name\$" <<<"$inside" || fail "the preloaded program did not run inside $cg: $inside"
[ "$(cache_mb "$inside")" = 128 ] || fail "cache bound in a 1 GB cgroup is not 128 MB: $inside"
echo "cgroup ok"
