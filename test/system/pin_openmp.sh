#!/usr/bin/env bash
# OpenMP (libgomp) under the preload: OpenMP thread k on CPU k of the plan. With OMP_PROC_BIND
# set, the runtime's choice stands and the shim pins nothing. bobox-run sets OMP_PLACES to the
# plan, and OpenMP binds its team to it.
source "$(dirname "$0")/../lib/pin.sh" || exit 1
need "$PROGS/pin_omp"
n=$((2 * NCPU + 1))

want=$(plan_masks "$n")
out=$(LD_PRELOAD=$PIN "$PROGS/pin_omp" "$n") || fail "pin_omp failed"
echo "$out"
check_pinned "$out" "$want"
check_order "$out" scatter

# OMP_PROC_BIND=false: nobody binds, every thread keeps the whole set
out=$(OMP_PROC_BIND=false BOBOX_PIN_VERBOSE=1 LD_PRELOAD=$PIN "$PROGS/pin_omp" "$n" 2>"$TMP/err") || fail "pin_omp failed"
check_unpinned "$out"
grep -q 'thread=' "$TMP/err" && fail "the shim pinned threads although OMP_PROC_BIND is set: $(cat "$TMP/err")"
grep -q 'OMP_PROC_BIND is set' "$TMP/err" || fail "no note that OMP_PROC_BIND wins: $(cat "$TMP/err")"

# the runtime binds (OMP_PLACES from the user): the shim does not interfere
for var in "OMP_PROC_BIND=true" "OMP_PLACES=cores" "GOMP_CPU_AFFINITY=0" "KMP_AFFINITY=compact"; do
    env "$var" BOBOX_PIN_VERBOSE=1 LD_PRELOAD=$PIN "$PROGS/pin_omp" 2 >/dev/null 2>"$TMP/err" || fail "pin_omp failed with $var"
    grep -q 'thread=' "$TMP/err" && fail "the shim pinned threads although $var: $(cat "$TMP/err")"
done

# bobox-run: OMP_PLACES = the plan in order; threads up to the number of places follow it
want=($(plan_cpus "$NCPU"))
places=$(printf '{%s},' "${want[@]}"); places=${places%,}
out=$("$RUN" --no-alloc -- "$PROGS/pin_omp" "$NCPU") || fail "bobox-run pin_omp failed"
echo "$out"
grep -qx "omp_places=$places" <<<"$out" || fail "OMP_PLACES is not $places"
check_pinned "$out" "${want[*]}"
# the runtime binding to our places is not the program pinning on its own: children still replan
grep -q '^inherited=P:' <<<"$out" || fail "OpenMP binding to our places marked the process: $(grep inherited <<<"$out")"
# a team larger than the plan's CPUs (OMP_NUM_THREADS): no OMP_PLACES, which would stack threads on
# one-CPU places; the shim binds the extra threads wider, as --plan says
m=$((NCPU + 2))
out=$(OMP_NUM_THREADS=$m "$RUN" --no-alloc -- "$PROGS/pin_omp" "$m") || fail "bobox-run pin_omp ($m threads) failed"
echo "$out"
grep -qx "omp_places=(unset)" <<<"$out" || fail "OMP_PLACES set for a team larger than the CPUs"
check_pinned "$out" "$(plan_masks "$m")"

# a user's OMP_PLACES stands
out=$(OMP_PLACES=threads "$RUN" --no-alloc -- "$PROGS/pin_omp" 2) || fail "bobox-run pin_omp failed"
grep -qx "omp_places=threads" <<<"$out" || fail "bobox-run replaced the user's OMP_PLACES"
echo "ok"
