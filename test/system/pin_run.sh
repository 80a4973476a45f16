#!/usr/bin/env bash
# bobox-run: the environment it sets, LD_PRELOAD kept and not repeated, exit codes, the
# installed layout (../lib), and a program actually pinned through it.
source "$(dirname "$0")/../lib/pin.sh" || exit 1
need "$PROGS/pin_threads"
pin=$(realpath "$PIN")

out=$("$RUN" --no-alloc --pin=compact --skip=0x4 --verbose --dry-run --stats -- env) || fail "bobox-run env failed"
for kv in BOBOX_PIN=compact BOBOX_PIN_SKIP=0x4 BOBOX_PIN_VERBOSE=1 BOBOX_PIN_DRYRUN=1 BOBOX_STATS=1 "LD_PRELOAD=$pin"; do
    grep -qx -- "$kv" <<<"$out" || fail "bobox-run did not set $kv"
done
# what LD_PRELOAD held stays, after ours, and ours is not repeated
other=$(ls /lib/*/libm.so.6 /usr/lib/*/libm.so.6 2>/dev/null | head -1)
[ -n "$other" ] || other=libm.so.6
out=$(LD_PRELOAD="$other:$pin" "$RUN" --no-alloc -- env) || fail "bobox-run env failed"
grep -qx "LD_PRELOAD=$pin:$other" <<<"$out" || fail "LD_PRELOAD: $(grep LD_PRELOAD <<<"$out")"
# OMP_PLACES follows the plan unless the user set an OpenMP placement
want=($(plan_cpus "$NCPU")); places=$(printf '{%s},' "${want[@]}")
grep -qx "OMP_PLACES=${places%,}" <<<"$out" || fail "OMP_PLACES: $(grep OMP_PLACES <<<"$out")"
OMP_PROC_BIND=close "$RUN" --no-alloc -- env | grep -q '^OMP_PLACES=' && fail "OMP_PLACES set although OMP_PROC_BIND is"

# with the allocator: libbobox.so first
if [ -e "$BUILD/libbobox.so" ]; then
    out=$("$RUN" -- env) || fail "bobox-run env failed"
    grep -qx "LD_PRELOAD=$(realpath "$BUILD/libbobox.so"):$pin" <<<"$out" || fail "LD_PRELOAD: $(grep LD_PRELOAD <<<"$out")"
else
    "$RUN" -- true 2>"$TMP/err"; [ $? -eq 127 ] && grep -q -- --no-alloc "$TMP/err" || fail "missing libbobox.so not reported"
fi

# exit codes
"$RUN" --no-alloc -- sh -c 'exit 3'; [ $? -eq 3 ] || fail "the program's exit status is not passed on"
"$RUN" --no-alloc -- /nonexistent/program 2>/dev/null; [ $? -eq 127 ] || fail "a missing program should give 127"

# installed: bin/bobox-run finds ../lib/libbobox-pin.so
mkdir -p "$TMP/bin" "$TMP/lib"
cp "$RUN" "$TMP/bin/"; cp "$PIN" "$TMP/lib/"
out=$("$TMP/bin/bobox-run" --no-alloc -- env) || fail "installed bobox-run failed"
grep -qx "LD_PRELOAD=$(realpath "$TMP/lib/libbobox-pin.so")" <<<"$out" || fail "installed layout: $(grep LD_PRELOAD <<<"$out")"

# a real run
n=$((NCPU + 1))
out=$("$RUN" --no-alloc --pin=compact -- "$PROGS/pin_threads" $n) || fail "bobox-run pin_threads failed"
echo "$out"
check_pinned "$out" "$(plan_masks $((n + 1)) --pin=compact)"
echo "ok"
