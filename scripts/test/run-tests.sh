#!/usr/bin/env bash
# Runs the tests and ends with the line "N passed, M failed".
#   build/test/unit_*     Catch2 binaries, run as they are (each test case counts)
#   build/test/preload_*  Catch2 binaries, run under LD_PRELOAD=build/libbobox.so
#   test/system/*.sh      one test each: exit 0 pass, 77 skipped, anything else fails
# TEST_JOBS tests run at once (default: the CPUs + 1), the longest first: by the seconds each
# took last time (build/test-logs/durations), else by its slow tag, Catch2 binaries next. One
# line per test as it ends (wall and CPU seconds); the failures are listed again, in a fixed
# order, and the skips (exit 77) by name with their reason, before the last line, which is
# always exactly "N passed, M failed". A Catch2 binary the Makefile builds for make test
# (make print-catch-bins) and missing from build/test counts as failed.
# A script's tags, on a line "# test: TAG ...":
#   serial     runs alone, after the others: it measures RSS or time, or takes the whole machine
#   slow[=S]   takes long (about S seconds in make test on 2 cores, beside the other tests,
#              which orders a first run): not run by --quick
#   time=S     about S seconds in make test, like slow=S but still run by --quick: orders a
#              first run (a fresh clone's, as in CI) when a test not tagged slow takes long
#   lock=NAME  never runs beside another test holding the same lock (shared files in build/)
# --quick (make test-quick): the unit and API binaries (not *_stress) and the scripts not slow.
# TEST_FILTER=substring runs only the matching binaries and scripts.
set -u
# wait -n -p (which test ended) is bash 5.1's
((BASH_VERSINFO[0] * 100 + BASH_VERSINFO[1] >= 501)) || { echo "run-tests.sh: needs bash 5.1 or later" >&2; exit 2; }
cd "$(dirname "$0")/../.."
export BOBOX_ROOT=$PWD BUILD=$PWD/build
quick=0
case ${1:-} in
    --quick) quick=1 ;;
    "") ;;
    *) echo "usage: $0 [--quick]" >&2; exit 2 ;;
esac
jobs=${TEST_JOBS:-$(($(nproc) + 1))}
[[ $jobs =~ ^[1-9][0-9]*$ ]] || { echo "run-tests.sh: TEST_JOBS=$jobs is not a positive number" >&2; exit 2; }
filter=${TEST_FILTER:-}
log_dir=$BUILD/test-logs; mkdir -p "$log_dir"
res_dir=$(mktemp -d "${TMPDIR:-/tmp}/bobox-tests.XXXXXX") || exit 2

# ---- the tests: name, kind (catch/script), path, tags ------------------------------------
names=() kinds=() paths=() tags=()
tags_of() { # script: the words of its "# test:" line
    sed -nE 's/^# test:(.*)/\1/p' "$1"
}
add() { names+=("$1") kinds+=("$2") paths+=("$3") tags+=(" $4 "); }
# The Catch2 binaries the Makefile builds for make test: one missing is a broken build, a failure.
missing=()
mapfile -t expected < <(make -s --no-print-directory print-catch-bins 2>/dev/null)
[ ${#expected[@]} -gt 0 ] || { echo "run-tests.sh: make print-catch-bins named no Catch2 binary" >&2; exit 2; }
for bin in "${expected[@]}"; do
    [[ -n $filter && $bin != *$filter* ]] && continue
    [ -x "$BUILD/test/$bin" ] || missing+=("$bin")
done
for bin in "$BUILD"/test/unit_* "$BUILD"/test/preload_*; do
    [ -x "$bin" ] || continue
    [[ -n $filter && $bin != *$filter* ]] && continue
    t=; [[ $bin == *_stress ]] && t=slow=20
    add "$(basename "$bin")" catch "$bin" "$t"
done
for script in test/system/*.sh; do
    [ -f "$script" ] || continue
    [[ -n $filter && $script != *$filter* ]] && continue
    add "$(basename "$script" .sh)" script "$script" "$(tags_of "$script" | tr '\n' ' ')"
done

# ---- the order: serial ones last, the others longest first ---------------------------------
declare -A last=()
[ -f "$log_dir/durations" ] && while read -r n s; do last[$n]=$s; done <"$log_dir/durations"
parallel=() serial=()
for i in "${!names[@]}"; do
    [[ $quick = 1 && ${tags[i]} =~ \ slow[\ =] ]] && continue
    if [[ ${tags[i]} == *" serial "* ]]; then serial+=("$i"); continue; fi
    guess=1
    [ "${kinds[i]}" = catch ] && guess=25
    [[ ${tags[i]} == *" slow "* ]] && guess=60
    [[ ${tags[i]} =~ \ (slow|time)=([0-9]+)\  ]] && guess=${BASH_REMATCH[2]}
    echo "${last[${names[i]}]:-$guess} $i"
done >"$res_dir/order"
mapfile -t parallel < <(sort -k1,1nr -k2,2n "$res_dir/order" | cut -d' ' -f2)

# ---- one test, in the background: its result file gets "passed failed rc secs cpu log" -----
run_test() { # index
    local i=$1 name=${names[$1]} log start=$SECONDS
    local -a cmd
    if [ "${kinds[i]}" = catch ]; then
        log=$log_dir/$name.log
        cmd=("${paths[i]}" --durations no)
        [[ $name == preload_* ]] && cmd=(env LD_PRELOAD="$BUILD/libbobox.so" "${cmd[@]}")
    else
        log=$log_dir/system_$name.log
        cmd=(bash "${paths[i]}")
    fi
    # timeout puts the test in a process group of its own: a TERM to this job ends it there.
    timeout --kill-after=10 600 "${cmd[@]}" >"$log" 2>&1 &
    local tpid=$!
    trap 'kill -TERM $tpid 2>/dev/null; exit 1' TERM
    wait $tpid
    local rc=$? p=0 f=0 line cpu
    # user + system seconds of timeout and what it waited for (the test); not in a $(...),
    # whose own children have none
    times >"$res_dir/$i.times"
    cpu=$(awk 'NR == 2 { split($1, u, /[ms]/); split($2, s, /[ms]/); printf "%d", u[1] * 60 + u[2] + s[1] * 60 + s[2] + 0.5 }' "$res_dir/$i.times")
    if [ "${kinds[i]}" = catch ]; then
        if line=$(grep -E '^All tests passed \(' "$log" | tail -1) && [ -n "$line" ]; then
            p=$(sed -E 's/.* in ([0-9]+) test case.*/\1/' <<<"$line")
        elif line=$(grep -E '^test cases:' "$log" | tail -1) && [ -n "$line" ]; then
            p=$(sed -nE 's/.*\| *([0-9]+) passed.*/\1/p' <<<"$line"); p=${p:-0}
            f=$(sed -nE 's/.*\| *([0-9]+) failed.*/\1/p' <<<"$line"); f=${f:-0}
        else
            f=1   # no summary line, whatever the exit status: crashed, killed, or ran nothing
        fi
        if [ $rc -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
    fi
    echo "$p $f $rc $((SECONDS - start)) $cpu $log" >"$res_dir/$i"
}

passed=0 failed=0 skipped=0
failures=() failed_at=() skips=()
for bin in "${missing[@]}"; do
    failed=$((failed + 1)); failures+=("$bin (not built: build/test/$bin is missing)")
    printf '%-28s FAIL  build/test/%s is missing (the Makefile builds it for make test)\n' "$bin" "$bin"
done
report() { # index: one line for the finished test, its log's tail when it failed
    local i=$1 name=${names[$1]} p f rc secs cpu log
    read -r p f rc secs cpu log <"$res_dir/$i" || { p=0 f=1 rc=-1 secs=0 cpu=0 log=-; }
    durations[$name]=$secs
    local t="(${secs}s, ${cpu}s CPU)"
    if [ "${kinds[i]}" = catch ]; then
        passed=$((passed + p)); failed=$((failed + f))
        printf '%-28s %4d passed %3d failed  %s\n' "$name" "$p" "$f" "$t"
        if [ "$f" -ne 0 ]; then
            grep -qE '^(All tests passed \(|test cases:)' "$log" 2>/dev/null || echo "    (no Catch2 summary line: exit status $rc)"
            failed_at[i]="$name (log: $log)"; tail -40 "$log" | sed 's/^/    | /'
        fi
        return
    fi
    case $rc in
        0)  passed=$((passed + 1)); printf '%-28s PASS  %s\n' "$name" "$t" ;;
        77) skipped=$((skipped + 1)); skip_at[i]="$name: $(tail -1 "$log")"
            printf '%-28s SKIP  %s\n' "$name" "$(tail -1 "$log")" ;;
        *)  failed=$((failed + 1)); failed_at[i]="$name (log: $log)"
            printf '%-28s FAIL rc=%d %s\n' "$name" "$rc" "$t"; tail -30 "$log" | sed 's/^/    | /' ;;
    esac
}

declare -A running=() durations=() held=()
lock_of() { [[ ${tags[$1]} =~ \ lock=([^ ]+)\  ]] && echo "${BASH_REMATCH[1]}"; }
start() {
    local lock; lock=$(lock_of "$1")
    [ -n "$lock" ] && held[$lock]=1
    run_test "$1" & running[$!]=$1
}
reap() { # waits for one running test and reports it
    local pid lock
    wait -n -p pid "${!running[@]}"
    report "${running[$pid]}"
    lock=$(lock_of "${running[$pid]}")
    [ -n "$lock" ] && unset "held[$lock]"
    unset "running[$pid]"
}
next= # the first queued test whose lock is free, taken off the queue
take_next() {
    local k lock
    for k in "${!queue[@]}"; do
        lock=$(lock_of "${queue[k]}")
        [ -n "$lock" ] && [ -n "${held[$lock]:-}" ] && continue
        next=${queue[k]}; unset "queue[k]"; return 0
    done
    return 1
}
interrupted() {
    [ ${#running[@]} -gt 0 ] && kill -TERM "${!running[@]}" 2>/dev/null
    wait; rm -rf "$res_dir"; echo "interrupted"; exit 130
}
trap interrupted INT TERM

queue=("${parallel[@]}")
while [ ${#queue[@]} -gt 0 ] || [ ${#running[@]} -gt 0 ]; do
    if [ ${#running[@]} -lt "$jobs" ] && take_next; then start "$next"; else reap; fi
done
for i in "${serial[@]}"; do start "$i"; reap; done
rm -rf "$res_dir"

# The seconds each test took, for the next run's order (kept for tests this run left out).
for n in "${!last[@]}"; do [ -n "${durations[$n]:-}" ] || durations[$n]=${last[$n]}; done
for n in "${!durations[@]}"; do echo "$n ${durations[$n]}"; done | sort >"$log_dir/durations"

for i in "${!names[@]}"; do
    [ -n "${failed_at[i]:-}" ] && failures+=("${failed_at[i]}")
    [ -n "${skip_at[i]:-}" ] && skips+=("${skip_at[i]}")
done
source "$BOBOX_ROOT/scripts/test/summary.sh" || exit 2
print_summary
