#!/bin/bash
# The heap probe suite, judged as an attacker's program would be: test/progs/probe_heap does
# one bad heap operation (writes past and before objects, double and invalid frees, C++ delete
# mismatches, writes after free, zero-size objects, immediate reuse of a freed slot, fill of
# freed and new memory) on an 8 B, 4 KB, 256 KB or 1 MB object, and then ends without
# freeing the object, unless freeing it is the bad operation. Every kind runs under glibc (no
# preload), scudo (Debian's libclang-rt-14-dev, which scripts/deps.sh installs), bobox and bobox in
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
# Fails when a bobox mode crashes, hangs or misnames a kind, and when any column differs from
# its list of kinds (test/fixtures/hardening_probes.txt, one line per kind, one verdict per
# mode): a kind lost or gained fails even when the total stays. A fault at the access counts
# where it is memory bobox left without access (held in the list): in checked mode, and in the
# default and copies modes for objects of 8 B, 4 KB and 256 KB (superblocks are read-only past
# their writable frontier, so a write 1 MB past faults); in the other cells it depends on what
# the kernel mapped next to the object and changes from run to run, so there a fault and
# "missed" are the same. glibc's column checks the
# harness itself: one whose bad operations did nothing would fail there. The README's figures
# (each mode's count of 151 and of the 116 public kinds) are computed from the list and must be
# the README's words. Then a lost kind, planted in a copy of this run's table (one catch of
# the default mode moved to another kind: same total), must fail the comparison.
# About 30 s.
source "$(dirname "$0")/../lib/common.sh" || exit 1
cd "$BOBOX_ROOT"
EXPECTED=test/fixtures/hardening_probes.txt
need "$EXPECTED"
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

MODES=(glibc scudo)
SCUDO=$(ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.scudo_standalone-x86_64.so 2>/dev/null | tail -1)
[ -n "$SCUDO" ] || fail "libclang_rt.scudo_standalone-x86_64.so not found (scripts/deps.sh installs libclang-rt-14-dev): no scudo column"
LD_PRELOAD=$SCUDO "$PROBE" reuse_malloc.small >/dev/null 2>&1
case $? in
    3 | 4) ;;
    *) fail "$SCUDO does not run the probe: no scudo column" ;;
esac
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

declare -A COUNT DIED GROUP PUB FAULT WANT
BAD=() KNOWN=()
while read -r kind v1 v2 v3 v4 v5; do
    WANT[$kind.glibc]=$v1 WANT[$kind.scudo]=$v2 WANT[$kind.default]=$v3 WANT[$kind.copies]=$v4 WANT[$kind.checked]=$v5
done < <(grep -v '^#' "$EXPECTED")
printf '%-28s' kind; for m in "${MODES[@]}"; do printf ' %-9s' "$m"; done; echo
for i in "${!KINDS[@]}"; do
    kind=${KINDS[$i]} family=${FAMILY[$i]}
    group=other; [[ $kind == *.* ]] && group=${kind##*.}
    line=$(printf '%-28s' "$kind") row=
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
            *) if [[ $m == default || $m == copies || $m == checked ]]; then
                   # A known defect stays visible: the list names it, and the run must match it.
                   if [[ /${WANT[$kind.$m]:-}/ == */$v/* ]]; then KNOWN+=("$m $kind: $v: $(grep -v '^$' "$TMP/err" | head -1)")
                   else BAD+=("$m $kind: $v: $(grep -v '^$' "$TMP/err" | head -1)"); fi
               fi ;;
        esac
        # What the public suite counts: any death, or the hardened answer.
        [ "$v" != missed ] && DIED[$m]=$((${DIED[$m]:-0} + 1))
        line+=$(printf ' %-9s' "$v") row+=" $v"
    done
    echo "$line"
    echo "$kind$row" >>"$TMP/table"
done

echo
printf '%-14s' 'caught'; for g in small medium large huge other; do printf ' %6s' "$g"; done; printf ' %6s %6s %6s\n' total faults died
for m in "${MODES[@]}"; do
    printf '%-14s' "$m"
    for g in small medium large huge other; do printf ' %6s' "${GROUP[$m.$g]:-0}"; done
    printf ' %6s %6s %6s\n' "${COUNT[$m]:-0}" "${FAULT[$m]:-0}" "${DIED[$m]:-0}"
done
echo "(small 8 B, medium 4 KB, large 256 KB, huge 1 MB; faults: caught by a fault at the access, held"
echo " where it is memory bobox left without access, elsewhere depending on what the kernel mapped next"
echo " to the object; died: any death or hardened answer, as the public suite counts)"
# The public suite's sizes alone: every kind but the 1 MB ones.
for m in "${MODES[@]}"; do PUB[$m]=$((${COUNT[$m]:-0} - ${GROUP[$m.huge]:-0})); done
echo "caught of the $public kinds of 8 B, 4 KB and 256 KB objects: glibc ${PUB[glibc]}, scudo ${PUB[scudo]}, bobox ${PUB[default]}, bobox BOBOX_CHECK=copies ${PUB[copies]}, bobox BOBOX_CHECK=1 ${PUB[checked]}"
echo "caught of ${#KINDS[@]} kinds: glibc ${COUNT[glibc]:-0}, scudo ${COUNT[scudo]:-0}, bobox ${COUNT[default]:-0}, bobox BOBOX_CHECK=copies ${COUNT[copies]:-0}, bobox BOBOX_CHECK=1 ${COUNT[checked]:-0}"

failed=0
for b in "${BAD[@]}"; do echo "FAIL: $b"; failed=1; done
for b in "${KNOWN[@]}"; do echo "KNOWN DEFECT (in $EXPECTED): $b"; done

# compare EXPECTED TABLE: each kind's verdict in each mode against its line of the list (a cell
# may allow several, a/b); a fault is "missed" where it depends on the layout (held_fault).
# Prints the differences.
compare() {
    awk -v modes="${MODES[*]}" '
        function held_fault(m, k) { return m == "checked" || ((m == "default" || m == "copies") && k ~ /\.(small|medium|large)$/) }
        function norm(m, k, v) { return (v == "fault" && !held_fault(m, k)) ? "missed" : v }
        BEGIN { nm = split(modes, M, " ") }
        NR == FNR { if ($0 ~ /^#/ || NF == 0) next
                    if (NF != nm + 1) { print FILENAME ": " $1 ": " NF - 1 " verdicts, not " nm; bad++ }
                    for (i = 2; i <= NF; i++) want[$1, i] = $i
                    listed[$1] = 1; next }
        { ran[$1] = 1
          if (!($1 in listed)) { print $1 ": run, but not in the list"; bad++; next }
          for (i = 2; i <= NF; i++) {
              n = split(want[$1, i], alt, "/"); ok = 0
              for (j = 1; j <= n; j++) if (norm(M[i - 1], $1, alt[j]) == norm(M[i - 1], $1, $i)) ok = 1
              if (!ok) { print $1 " under " M[i - 1] ": " $i ", the list says " want[$1, i]; bad++ }
          } }
        END { for (k in listed) if (!(k in ran)) { print k ": in the list, not run"; bad++ }
              exit bad > 0 }' "$1" "$2"
}
if ! compare "$EXPECTED" "$TMP/table" >"$TMP/diff"; then
    sed 's/^/FAIL: /' "$TMP/diff"
    echo "FAIL: the columns differ from $EXPECTED (a kind lost, or gained: then update the list, and the README's figures)"
    failed=1
fi

# The README's figures, from the list: catches by a message or answer, and the bobox modes'
# held faults (as compare counts them), of the 151 kinds and of the 116 public ones.
figures() { # mode-column: "all public"
    awk -v c="$1" '!/^#/ && NF { if ($c == "caught") { a++; if ($1 !~ /\.huge$/) p++ } } END { print a + 0, p + 0 }' "$EXPECTED"
}
faults() { # mode-column, and "all" where every fault is held (checked mode)
    awk -v c="$1" -v all="${2:-}" '!/^#/ && NF && $c == "fault" && (all || $1 ~ /\.(small|medium|large)$/) {
                                       a++; if ($1 !~ /\.huge$/) p++ } END { print a + 0, p + 0 }' "$EXPECTED"
}
read -r g gp < <(figures 2); read -r sc sp < <(figures 3); read -r d dp < <(figures 4)
read -r k kp < <(figures 5); read -r c cp < <(figures 6)
read -r df dfp < <(faults 4); read -r kf kfp < <(faults 5); read -r cf cfp < <(faults 6 all)
claim="by a message or answer, glibc catches $g, scudo $sc, the default mode $d, \`BOBOX_CHECK=copies\` $k and checked mode $c, and the three modes $df, $kf and $cf more by a fault on memory bobox left without access ($((d + df)), $((k + kf)) and $((c + cf))); of the $public kinds at 8 B, 4 KB and 256 KB: $gp, $sp, $((dp + dfp)), $((kp + kfp)) and $((cp + cfp))"
echo "the README must say: $claim"
tr '\n' ' ' <README.md | tr -s ' ' | grep -qF -- "$claim" || { echo "FAIL: README.md's Safety section does not say: $claim"; failed=1; }

# A lost kind, planted: the default mode's first catch by a message made "missed", and its
# first miss made "caught". The total is the same; the comparison must fail on both kinds.
awk '{ if (!l && $4 == "caught") { $4 = "missed"; l = $1 } else if (!g && $4 == "missed" && $1 != l) { $4 = "caught"; g = $1 } print }
     END { print l, g >"/dev/stderr" }' "$EXPECTED" 2>"$TMP/planted_kinds" | grep -v '^#' >"$TMP/planted"
read -r lost gained <"$TMP/planted_kinds"
if compare "$EXPECTED" "$TMP/planted" >"$TMP/planted_diff"; then
    echo "FAIL: the comparison passed a table where the default mode lost $lost and gained $gained"; failed=1
elif ! grep -q "^$lost under default" "$TMP/planted_diff" || ! grep -q "^$gained under default" "$TMP/planted_diff"; then
    echo "FAIL: the comparison did not name the planted kinds: $(cat "$TMP/planted_diff")"; failed=1
else
    echo "planted: the default mode losing $lost and gaining $gained (same total) fails the comparison"
fi
[ $failed -eq 0 ] && echo "every column matches its list of kinds"
exit $failed
