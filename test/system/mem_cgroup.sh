#!/usr/bin/env bash
# The default cache bound follows a cgroup memory limit, not the host's memory: a process
# in a memory cgroup limited to 1 GB caches at most 1 GB / 8 = 128 MB (BOBOX_VERBOSE shows
# it; the bound outside is printed too). Makes the cgroup in a writable cgroup v1 memory
# hierarchy, or in cgroup v2 (as root: mounting the hierarchy again when it is read-only, and
# enabling the memory controller for our cgroup's children when it is not): skipped, with the
# kernel's reason, only when the cgroup cannot be made, limited or joined; a failure of the
# preloaded run inside it fails.
source "$(dirname "$0")/../lib/common.sh" || exit 1
need_lib
cg=
cache_mb() { sed -n 's/.*BOBOX_CACHE_MB=\([0-9]*\).*/\1/p' <<<"$1"; }

outside=$(env BOBOX_VERBOSE=1 LD_PRELOAD=$SO true 2>&1) || fail "the preloaded run outside a cgroup failed: $outside"
echo "outside: $outside"
[ -n "$(cache_mb "$outside")" ] || fail "BOBOX_VERBOSE printed no cache bound: $outside"

name=bobox-test-$$
mnt=
trap '[ -n "$cg" ] && rmdir "$cg" 2>/dev/null; [ -n "$mnt" ] && umount "$mnt" 2>/dev/null; rm -rf "$TMP"' EXIT
# v2 at ROOT: the memory controller enabled for our cgroup's children (as root: enabled here
# when it is not yet, which the kernel allows where our cgroup holds no other process, or at
# the hierarchy's root); "" and the reason in $TMP/why when it cannot be.
v2_parent() { # root
    local parent=$1$(sed -n 's/^0:://p' /proc/self/cgroup)
    grep -qw memory "$1/cgroup.controllers" 2>/dev/null || { echo "no memory controller in $1 (v2)" >"$TMP/why"; return; }
    if ! grep -qw memory "$parent/cgroup.subtree_control" 2>/dev/null; then
        echo +memory 2>"$TMP/err" >"$parent/cgroup.subtree_control" ||
            { echo "cannot enable the memory controller in $parent: $(cat "$TMP/err")" >"$TMP/why"; return; }
    fi
    echo "$parent"
}
if [ -w /sys/fs/cgroup/memory ] && [ -f /sys/fs/cgroup/memory/memory.limit_in_bytes ]; then
    mkdir "/sys/fs/cgroup/memory/$name" 2>"$TMP/err" || skip "cannot make a v1 memory cgroup: $(cat "$TMP/err")"
    cg=/sys/fs/cgroup/memory/$name
    echo $((1 << 30)) 2>"$TMP/err" >"$cg/memory.limit_in_bytes" || skip "cannot set a v1 memory limit: $(cat "$TMP/err")"
elif [ -f /sys/fs/cgroup/cgroup.controllers ]; then
    root=/sys/fs/cgroup
    # A container often mounts the hierarchy read-only: as root, mount it again, writable.
    if ! [ -w $root ]; then
        mkdir -p "$TMP/cg2" && mount -t cgroup2 none "$TMP/cg2" 2>"$TMP/err" ||
            skip "the cgroup v2 hierarchy is read-only and cannot be mounted again: $(cat "$TMP/err")"
        mnt=$TMP/cg2 root=$TMP/cg2
    fi
    parent=$(v2_parent $root)
    [ -n "$parent" ] || skip "$(cat "$TMP/why")"
    mkdir "$parent/$name" 2>"$TMP/err" || skip "cannot make a v2 cgroup in $parent: $(cat "$TMP/err")"
    cg=$parent/$name
    echo $((1 << 30)) 2>"$TMP/err" >"$cg/memory.max" || skip "cannot set memory.max: $(cat "$TMP/err")"
else
    skip "no memory cgroup: neither /sys/fs/cgroup/memory (v1) nor a v2 hierarchy at /sys/fs/cgroup"
fi
echo "cgroup: $cg"

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
