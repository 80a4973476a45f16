#!/usr/bin/env bash
# z3 and two Ruby threads under allocator configurations (docs/profiles.md): perf's software
# events (page faults, context switches) of one run, and callgrind's instructions split into
# the program's, libc's and the allocator's, with the allocator's heaviest functions (inlined
# code counts under the function it was inlined into).
# Usage: scripts/bench/profile-real.sh [--alloc A[,A..]] [--only z3|ruby[,..]] [--top N]
#   configurations as bench.sh names them (default: bobox mimalloc). Inputs: bench/real/z3_lia.py
#   150 2 (z3 4.8.12: about 1.5 s), bench/real/ruby_threads.rb 60000.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
. scripts/bench/bench-lib.sh
unset LD_PRELOAD BOBOX_PIN BOBOX_CHECK

ALLOCS="bobox mimalloc" ONLY="z3 ruby" TOP=12
while [ $# -gt 0 ]; do
  case "$1" in
    --alloc) ALLOCS=${2//,/ }; shift ;;
    --only) ONLY=${2//,/ }; shift ;;
    --top) TOP=$2; shift ;;
    -h|--help) sed -n '2,8s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) echo "profile-real.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
bench_ensure_pkgs valgrind z3 ruby libmimalloc2.0
command -v perf >/dev/null || echo "profile-real.sh: perf missing: no page-fault counts" >&2
make -s -C "$ROOT" all >/dev/null || exit 1
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
python3 bench/real/z3_lia.py 150 2 >"$TMP/lia.smt2" || exit 1

for p in $ONLY; do
  case $p in
    z3) cmd=(z3 -smt2 "$TMP/lia.smt2") ;;
    ruby) cmd=(ruby bench/real/ruby_threads.rb 60000) ;;
    *) echo "profile-real.sh: unknown program $p" >&2; exit 2 ;;
  esac
  for a in $ALLOCS; do
    bench_alloc_setup "$a" || { echo "$p $a: skipped: $ALLOC_WHY"; continue; }
    echo "== $p under $a"
    if command -v perf >/dev/null; then
      env ${ALLOC_PRELOAD:+LD_PRELOAD=$ALLOC_PRELOAD} $ALLOC_ENV perf stat -x, \
        -e page-faults,context-switches -o "$TMP/perf" "${cmd[@]}" >/dev/null 2>&1
      awk -F, '/page-faults|context-switches/ {printf "%s %s  ", $3, $1} END {print ""}' "$TMP/perf"
    fi
    rm -f "$TMP"/cg.*
    env ${ALLOC_PRELOAD:+LD_PRELOAD=$ALLOC_PRELOAD} $ALLOC_ENV valgrind --tool=callgrind \
      --callgrind-out-file="$TMP/cg.%p" "${cmd[@]}" >/dev/null 2>"$TMP/err" || { tail -3 "$TMP/err"; continue; }
    callgrind_annotate --inclusive=no --threshold=100 "$TMP"/cg.* 2>/dev/null | awk -v top="$TOP" '
      /PROGRAM TOTALS/ {total = $1; gsub(",", "", total)}
      /file:function/ {on = 1; next}
      on && /^-----/ && seen {on = 0}
      on && /%\)  / {
        seen = 1; ir = $1; gsub(",", "", ir); line = $0; sub(/^[^)]*\)  /, "", line)
        obj = line; sub(/.*\[/, "", obj); sub(/\].*/, "", obj); sub(/.*\//, "", obj)
        if (line ~ /allocator\//) obj = "libbobox.so"
        if (obj ~ /libbobox|libmimalloc|libjemalloc|libtcmalloc|libsnmalloc/) {
          f = line; sub(/ \[.*/, "", f); sub(/ \(.*/, "", f); sub(/.*:/, "", f); fn[f] += ir; alloc += ir
        } else if (obj ~ /^libc\./) libc += ir
      }
      END {
        printf "instructions %.0f: allocator %.0f (%.2f%%), libc %.0f, the rest %.0f\n", total, alloc,
               100 * alloc / total, libc, total - alloc - libc
        n = 0; for (f in fn) order[++n] = f
        for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (fn[order[j]] > fn[order[i]]) {t = order[i]; order[i] = order[j]; order[j] = t}
        for (i = 1; i <= n && i <= top; i++) printf "  %12.0f  %s\n", fn[order[i]], order[i]
      }'
  done
done
