#!/usr/bin/env bash
# Runs every test and ends with the line "N passed, M failed".
#   build/test/unit_*     Catch2 binaries, run as they are (each test case counts)
#   build/test/preload_*  Catch2 binaries, run under LD_PRELOAD=build/libbobox.so
#   test/system/*.sh      one test each: exit 0 pass, 77 skipped, anything else fails
# TEST_FILTER=substring runs only the matching binaries and scripts.
set -u
cd "$(dirname "$0")/../.."
export BOBOX_ROOT=$PWD BUILD=$PWD/build
passed=0 failed=0 skipped=0
failures=()
log_dir=$BUILD/test-logs; mkdir -p "$log_dir"
filter=${TEST_FILTER:-}

run_catch() { # name, command...
    local name=$1; shift
    local log=$log_dir/$name.log
    local start=$SECONDS
    timeout --kill-after=10 600 "$@" --durations no >"$log" 2>&1
    local rc=$?
    local p=0 f=0 line
    if line=$(grep -E '^All tests passed \(' "$log" | tail -1) && [ -n "$line" ]; then
        p=$(sed -E 's/.* in ([0-9]+) test case.*/\1/' <<<"$line")
    elif line=$(grep -E '^test cases:' "$log" | tail -1) && [ -n "$line" ]; then
        p=$(sed -nE 's/.*\| *([0-9]+) passed.*/\1/p' <<<"$line"); p=${p:-0}
        f=$(sed -nE 's/.*\| *([0-9]+) failed.*/\1/p' <<<"$line"); f=${f:-0}
    fi
    if [ $rc -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi   # crashed or timed out: no summary line
    passed=$((passed + p)); failed=$((failed + f))
    printf '%-28s %4d passed %3d failed  (%ds)\n' "$name" "$p" "$f" $((SECONDS - start))
    if [ "$f" -ne 0 ]; then failures+=("$name (log: $log)"); tail -40 "$log" | sed 's/^/    | /'; fi
}

run_script() { # path
    local script=$1 name; name=$(basename "$script" .sh)
    local log=$log_dir/system_$name.log
    local start=$SECONDS
    timeout --kill-after=10 600 bash "$script" >"$log" 2>&1
    local rc=$?
    case $rc in
        0)  passed=$((passed + 1)); printf '%-28s PASS  (%ds)\n' "$name" $((SECONDS - start)) ;;
        77) skipped=$((skipped + 1)); printf '%-28s SKIP  %s\n' "$name" "$(tail -1 "$log")" ;;
        *)  failed=$((failed + 1)); failures+=("$name (log: $log)")
            printf '%-28s FAIL rc=%d (%ds)\n' "$name" $rc $((SECONDS - start)); tail -30 "$log" | sed 's/^/    | /' ;;
    esac
}

for bin in "$BUILD"/test/unit_* ; do
    [ -x "$bin" ] || continue
    [[ -n $filter && $bin != *$filter* ]] && continue
    run_catch "$(basename "$bin")" "$bin"
done
for bin in "$BUILD"/test/preload_* ; do
    [ -x "$bin" ] || continue
    [[ -n $filter && $bin != *$filter* ]] && continue
    run_catch "$(basename "$bin")" env LD_PRELOAD="$BUILD/libbobox.so" "$bin"
done
for script in test/system/*.sh; do
    [ -f "$script" ] || continue
    [[ -n $filter && $script != *$filter* ]] && continue
    run_script "$script"
done

source "$BOBOX_ROOT/scripts/test/summary.sh"
print_summary
