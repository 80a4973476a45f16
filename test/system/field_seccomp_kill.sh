#!/usr/bin/env bash
# Guards against: a sandbox killing the program because we make mbind/getcpu/get_mempolicy.
# We must make none where the program alone makes none (one NUMA node, no setting asking).
# (man-db, systemd's SystemCallFilter= and hand-written filters kill on unexpected calls.)
source "$(dirname "$0")/../lib/field.sh" || exit 1
need_lib; need_prog field_work; need_cmd cc
[ -e /usr/include/seccomp.h ] || fail "seccomp.h is missing (scripts/deps.sh installs libseccomp-dev)"
build_c "$TMP/seccomp_run" "$FIELD_SRC/seccomp_run.c" -lseccomp
"$TMP/seccomp_run" kill mbind true || skip "seccomp filters cannot be loaded here (kernel or container)"
nodes=$(ls -d /sys/devices/system/node/node[0-9]* 2>/dev/null | wc -l)
# killed NAME CMD...: 1 if the filter killed CMD (SIGSYS), 0 if it ran to the end
killed() {
    local name=$1; shift
    "$TMP/seccomp_run" kill "$name" "$@" >/dev/null 2>"$TMP/err"
    local rc=$?
    case $rc in
        0) echo 0 ;;
        159) echo 1 ;;
        *) cat "$TMP/err" >&2; echo "rc=$rc" ;;
    esac
}
bad=()
printf '%-14s %-22s %-22s %s\n' "killed on" "start-up (true)" "malloc workload" "(plain / with bobox)"
for name in mbind get_mempolicy getcpu getrandom; do
    s_plain=$(killed "$name" true); s_bobox=$(killed "$name" env LD_PRELOAD="$SO" true)
    w_plain=$(killed "$name" "$PROGS/field_work" 2); w_bobox=$(killed "$name" env LD_PRELOAD="$SO" "$PROGS/field_work" 2)
    printf '%-14s %-22s %-22s\n' "$name" "$s_plain / $s_bobox" "$w_plain / $w_bobox"
    for r in "$s_plain" "$s_bobox" "$w_plain" "$w_bobox"; do [[ $r == [01] ]] || fail "$name: unexpected exit ($r)"; done
    case $name in
        getrandom)
            # glibc's own malloc draws its tcache key with getrandom on the first call: killing it
            # kills the plain workload too; we draw our secrets at start-up (docs/syscalls.md).
            [ "$w_bobox" = "$w_plain" ] || bad+=("$name: workload killed with bobox only") ;;
        *)
            [ "$s_bobox" = 0 ] || bad+=("$name at start-up")
            if [ "$nodes" -le 1 ] && [ "$w_bobox" != "$w_plain" ]; then
                bad+=("$name on a one-node machine in a plain malloc/free workload")
            fi ;;
    esac
done
[ ${#bad[@]} -eq 0 ] || fail "the allocator makes system calls a sandbox may kill on: ${bad[*]} (see docs/syscalls.md)"
echo PASS
