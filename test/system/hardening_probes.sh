#!/bin/bash
# The heap probe suite, judged as an attacker's program would be: test/progs/probe_heap does
# one bad heap operation (writes past and before objects, double and invalid frees, C++ delete
# mismatches, writes after free, zero-size objects, immediate reuse of a freed slot, fill of
# freed and new memory) on an 8 B, 4 KB, 256 KB or 1 MB object, and then ends without
# freeing the object, unless freeing it is the bad operation. Every kind runs under glibc (no
# preload), scudo (when Debian's libclang-rt-14-dev is installed), bobox and bobox in
# checked mode (BOBOX_CHECK=1).
#
# A kind is caught only when the process dies before it exits cleanly:
#  - an abort with the allocator's message; for bobox the message must name the kind's
#    family (double free, invalid pointer, overflow, ...: see expected_message);
#  - SIGSEGV or SIGBUS at the program's own bad access (the probe says so on stderr), in the
#    kinds that are accesses (overflow, underflow, read, write after free);
#  - for the behaviour kinds (reuse, fill), the probe's answer "hardened" (exit 3).
# Anything else that is not a clean "not caught" is a failure in a bobox mode, which promises
# never to fault: a fault elsewhere (in the allocator), an abort with a message of another
# family or none, a timeout. glibc's and scudo's are only shown.
#
# Fails when a bobox mode crashes, hangs or misnames a kind, or when a mode catches fewer
# kinds by a message or answer than its regression floor (what it catches today, below).
# Faults are counted and shown but left out of the floors: whether a write past a mapping
# faults depends on what the kernel mapped next to it, and changes from run to run. glibc's
# floor checks the harness itself: one whose bad operations did nothing would fail there.
# About 10 s.
source "$(dirname "$0")/../lib/common.sh" || exit 1
cd "$BOBOX_ROOT"
# Regression floors (docs/hardening.md): glibc 2.36, bobox, bobox BOBOX_CHECK=copies and =1.
FLOOR_GLIBC=35 FLOOR_DEFAULT=52 FLOOR_COPIES=57 FLOOR_CHECKED=136
PROBE=build/test/progs/probe_heap
LIB=$PWD/build/libbobox.so
for f in "$PROBE" "$LIB"; do
    [ -e "$f" ] || { echo "hardening_probes: $f not built (make all build/test/progs/probe_heap)"; exit 1; }
done
KINDS=() FAMILY=()
while read -r kind family; do KINDS+=("$kind"); FAMILY+=("$family"); done < <("$PROBE" --list)
public=0
for k in "${KINDS[@]}"; do [[ $k == *.huge ]] || public=$((public + 1)); done
# The public suite's three sizes give 116 kinds; 1 MB objects (.huge) come on top.
[ "$public" -eq 116 ] || { echo "hardening_probes: $public kinds of 8 B, 4 KB and 256 KB objects listed, not 116"; exit 1; }

MODES=(glibc)
SCUDO=$(ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.scudo_standalone-x86_64.so 2>/dev/null | tail -1)
if [ -z "$SCUDO" ]; then
    echo "note: scudo column skipped: libclang_rt.scudo_standalone-x86_64.so not found (Debian: libclang-rt-14-dev)"
else
    LD_PRELOAD=$SCUDO "$PROBE" reuse_malloc.small >/dev/null 2>&1
    case $? in
        3 | 4) MODES+=(scudo) ;;
        *) echo "note: scudo column skipped: $SCUDO does not run the probe"; SCUDO= ;;
    esac
fi
MODES+=(default copies checked)

# run MODE KIND: runs the probe, its output in $TMP/out and $TMP/err; prints the exit status.
run() {
    local mode=$1 kind=$2
    local -a pre
    case $mode in
        glibc) pre=(env -u LD_PRELOAD -u BOBOX_CHECK) ;;
        scudo) pre=(env -u BOBOX_CHECK LD_PRELOAD="$SCUDO") ;;
        default) pre=(env -u BOBOX_CHECK LD_PRELOAD="$LIB") ;;
        copies) pre=(env BOBOX_CHECK=copies LD_PRELOAD="$LIB") ;;
        checked) pre=(env BOBOX_CHECK=1 LD_PRELOAD="$LIB") ;;
    esac
    # The subshell keeps bash's "Aborted" notice out of the table.
    ( "${pre[@]}" timeout -k 2 10 "$PROBE" "$kind" >"$TMP/out" 2>"$TMP/err" ) 2>/dev/null
    echo $?
}

# expected_message MODE FAMILY KIND: the regex an abort's message must match to be a catch.
expected_message() {
    local mode=$1 family=$2 kind=$3
    case $mode in
        glibc) echo '^(free|malloc|realloc|munmap_chunk|malloc_consolidate)\(\)|double free|corrupt' ; return ;;
        scudo) echo '^Scudo ERROR' ; return ;;
    esac
    case $family in
        overflow) echo '^bobox: .*(heap overflow|corrupted)' ;;
        underflow) echo '^bobox: .*(heap underflow|corrupted|invalid pointer)' ;;
        write_after_free) echo '^bobox: .*(write after free|written after it was freed|corrupted)' ;;
        double_free)
            # A freed large object leaves the page map: its second free looks like a wild one.
            if [[ $kind == *.huge ]]; then echo '^bobox: .*(double free|invalid pointer)'
            else echo '^bobox: .*double free'; fi ;;
        invalid_free) echo '^bobox: .*invalid pointer' ;;
        mismatch) echo '^bobox: .*(was allocated by|does not match)' ;;
        *) echo '^$never' ;;   # read, behaviour: no message is the right one
    esac
}

# verdict MODE KIND FAMILY: caught, fault (caught at the access), missed, or CRASH, WRONGMSG,
# TIMEOUT, ERROR:STATUS (not a probe's answer).
verdict() {
    local mode=$1 kind=$2 family=$3 rc
    rc=$(run "$mode" "$kind")
    case $rc in
        0) if [ "$family" != behaviour ] && [ "$(cat "$TMP/out")" = NOT_CAUGHT ]; then echo missed; else echo "ERROR:$rc"; fi ;;
        3) if [ "$family" = behaviour ]; then echo caught; else echo "ERROR:$rc"; fi ;;
        4) if [ "$family" = behaviour ]; then echo missed; else echo "ERROR:$rc"; fi ;;
        134)
            if grep -v '^probe_heap: ' "$TMP/err" | grep -qE "$(expected_message "$mode" "$family" "$kind")"; then
                echo caught
            else echo WRONGMSG; fi ;;
        135 | 139)
            if grep -q '^probe_heap: fault at the bad access' "$TMP/err" &&
                [[ $family =~ ^(overflow|underflow|read|write_after_free)$ ]]; then echo fault
            else echo CRASH; fi ;;
        124 | 137) echo TIMEOUT ;;
        *) echo "ERROR:$rc" ;;
    esac
}

declare -A COUNT DIED GROUP PUB FAULT
BAD=()
printf '%-28s' kind; for m in "${MODES[@]}"; do printf ' %-9s' "$m"; done; echo
for i in "${!KINDS[@]}"; do
    kind=${KINDS[$i]} family=${FAMILY[$i]}
    group=other; [[ $kind == *.* ]] && group=${kind##*.}
    line=$(printf '%-28s' "$kind")
    for m in "${MODES[@]}"; do
        v=$(verdict "$m" "$kind" "$family")
        if [[ $v == ERROR:* ]]; then
            echo "hardening_probes: probe_heap $kind under $m: exit ${v#ERROR:}, not a probe's answer"
            cat "$TMP/out" "$TMP/err"; exit 1
        fi
        case $v in
            caught | fault)
                COUNT[$m]=$((${COUNT[$m]:-0} + 1)); GROUP[$m.$group]=$((${GROUP[$m.$group]:-0} + 1))
                [ "$v" = fault ] && FAULT[$m]=$((${FAULT[$m]:-0} + 1)) ;;
            missed) ;;
            *) [[ $m == default || $m == copies || $m == checked ]] && BAD+=("$m $kind: $v: $(grep -v '^$' "$TMP/err" | head -1)") ;;
        esac
        # What the public suite counts: any death, or the hardened answer.
        [ "$v" != missed ] && DIED[$m]=$((${DIED[$m]:-0} + 1))
        line+=$(printf ' %-9s' "$v")
    done
    echo "$line"
done

echo
printf '%-14s' 'caught'; for g in small medium large huge other; do printf ' %6s' "$g"; done; printf ' %6s %6s %6s\n' total faults died
for m in "${MODES[@]}"; do
    printf '%-14s' "$m"
    for g in small medium large huge other; do printf ' %6s' "${GROUP[$m.$g]:-0}"; done
    printf ' %6s %6s %6s\n' "${COUNT[$m]:-0}" "${FAULT[$m]:-0}" "${DIED[$m]:-0}"
done
echo "(small 8 B, medium 4 KB, large 256 KB, huge 1 MB; faults: caught by a fault at the access, which"
echo " depends on what the kernel mapped next to the object and varies from run to run; died: any"
echo " death or hardened answer, as the public suite counts)"
# The public suite's sizes alone: every kind but the 1 MB ones.
for m in "${MODES[@]}"; do PUB[$m]=$((${COUNT[$m]:-0} - ${GROUP[$m.huge]:-0})); done
scudo_pub="-"; [ -n "$SCUDO" ] && scudo_pub=${PUB[scudo]}
echo "caught of the $public kinds of 8 B, 4 KB and 256 KB objects: glibc ${PUB[glibc]}, scudo $scudo_pub, bobox ${PUB[default]}, bobox BOBOX_CHECK=copies ${PUB[copies]}, bobox BOBOX_CHECK=1 ${PUB[checked]}"
g=${COUNT[glibc]:-0} d=${COUNT[default]:-0} k=${COUNT[copies]:-0} c=${COUNT[checked]:-0}
s="-"; [ -n "$SCUDO" ] && s=${COUNT[scudo]:-0}
echo "caught of ${#KINDS[@]} kinds: glibc $g, scudo $s, bobox $d, bobox BOBOX_CHECK=copies $k, bobox BOBOX_CHECK=1 $c"

# The floors count the catches that do not depend on the address space's layout.
fail=0
for b in "${BAD[@]}"; do echo "FAIL: $b"; fail=1; done
floor() { # mode floor what
    local n=$((${COUNT[$1]:-0} - ${FAULT[$1]:-0}))
    echo "$3: $n kinds caught by a message or answer, floor $2"
    [ "$n" -ge "$2" ] || { echo "FAIL: $3 caught $n kinds by a message or answer, fewer than its floor $2"; fail=1; }
}
floor glibc $FLOOR_GLIBC "glibc (the harness itself)"
floor default $FLOOR_DEFAULT "bobox"
floor copies $FLOOR_COPIES "bobox BOBOX_CHECK=copies"
floor checked $FLOOR_CHECKED "bobox BOBOX_CHECK=1"
exit $fail
