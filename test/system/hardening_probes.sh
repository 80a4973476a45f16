#!/bin/bash
# The heap probe suite: test/progs/probe_heap runs one bad heap operation per kind (writes past
# and before objects, double and invalid frees, C++ delete mismatches, writes after free,
# zero-size objects, immediate reuse of a freed slot, fill of freed and new memory), for 8 B,
# 4 KB and 256 KB objects. Every kind runs without the preload (glibc), with it, and with it in
# checked mode. A kind is caught when the program is stopped with a message (bobox's, or
# glibc's), or by a fault in a guard page for writes far past an object, or, for the
# behaviour kinds, when the probe reports the hardened behaviour (exit 3).
# Fails when checked mode catches fewer than 100 kinds, or the default mode fewer than glibc or
# than the 49 it catches today (a regression floor; what it leaves to checked mode is in
# docs/hardening.md).
# About 15 s.
cd "$(dirname "$0")/../.." || exit 1
PROBE=build/test/progs/probe_heap
LIB=$PWD/build/libbobox.so
for f in "$PROBE" "$LIB"; do
    [ -e "$f" ] || { echo "hardening_probes: $f not built (make all build/test/progs/probe_heap)"; exit 1; }
done
mapfile -t KINDS < <("$PROBE" --list)
[ "${#KINDS[@]}" -ge 100 ] || { echo "hardening_probes: only ${#KINDS[@]} kinds listed"; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# verdict MODE KIND: prints "caught" or "missed" (and why, for the table).
verdict() {
    local mode=$1 kind=$2 rc
    case $mode in
        glibc) timeout 20 "$PROBE" "$kind" >"$TMP/out" 2>"$TMP/err" ;;
        default) env -u BOBOX_CHECK LD_PRELOAD="$LIB" timeout 20 "$PROBE" "$kind" >"$TMP/out" 2>"$TMP/err" ;;
        checked) BOBOX_CHECK=1 LD_PRELOAD="$LIB" timeout 20 "$PROBE" "$kind" >"$TMP/out" 2>"$TMP/err" ;;
    esac
    rc=$?
    local msg=no
    if [ "$mode" = glibc ]; then
        grep -qE 'free|malloc|realloc|corrupt|double|invalid' "$TMP/err" && msg=yes
    else
        grep -q '^bobox: ' "$TMP/err" && msg=yes
    fi
    if [ $rc = 3 ]; then echo caught
    elif [ $rc = 134 ] && [ $msg = yes ]; then echo caught
    elif [ $rc = 139 ] && [[ $kind == over1m.* ]]; then echo caught   # a guard page or unmapped memory
    elif [ $rc = 0 ] || [ $rc = 4 ]; then echo missed
    elif [ $rc = 2 ]; then echo "error"
    else echo "crash($rc)"
    fi
}

declare -A COUNT
printf '%-32s %-10s %-10s %-10s\n' kind glibc default checked
for kind in "${KINDS[@]}"; do
    line=$(printf '%-32s' "$kind")
    for mode in glibc default checked; do
        v=$(verdict $mode "$kind")
        [ "$v" = error ] && { echo "hardening_probes: probe_heap $kind: usage error"; cat "$TMP/err"; exit 1; }
        [ "$v" = caught ] && COUNT[$mode]=$(( ${COUNT[$mode]:-0} + 1 ))
        line+=$(printf ' %-10s' "$v")
    done
    echo "$line"
done
g=${COUNT[glibc]:-0} d=${COUNT[default]:-0} c=${COUNT[checked]:-0}
echo "caught of ${#KINDS[@]} kinds: glibc $g, bobox $d, bobox BOBOX_CHECK=1 $c"
fail=0
[ "$c" -ge 100 ] || { echo "FAIL: checked mode catches $c kinds, fewer than 100"; fail=1; }
[ "$d" -ge 49 ] || { echo "FAIL: default mode catches $d kinds, fewer than the 49 it caught (glibc: $g)"; fail=1; }
[ "$d" -ge "$g" ] || { echo "FAIL: default mode catches $d kinds, fewer than glibc's $g"; fail=1; }
exit $fail
