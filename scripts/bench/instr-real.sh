#!/usr/bin/env bash
# Instructions of whole real programs under allocator configurations, from callgrind (every
# process of the program: gcc's cc1 and as too): a noise-free way to see what a change costs
# programs nobody here wrote. Each program runs once per configuration on the same input; the
# table gives the total and its change against the first configuration.
# Usage: scripts/bench/instr-real.sh [--alloc A[,A..]] [--only P[,P..]]
#   configurations as bench.sh names them (bobox, bobox-copies, glibc, ...) or a library's
#   absolute path; default: bobox bobox-copies. Programs: python sort gcc clang sqlite.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
. scripts/bench/bench-lib.sh
unset LD_PRELOAD BOBOX_PIN BOBOX_CHECK

ALLOCS="bobox bobox-copies" ONLY="python sort gcc clang sqlite"
while [ $# -gt 0 ]; do
  case "$1" in
    --alloc) ALLOCS=${2//,/ }; shift ;;
    --only) ONLY=${2//,/ }; shift ;;
    -h|--help) sed -n '2,9s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) echo "instr-real.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
bench_ensure_pkgs valgrind sqlite3 clang
make -s -C "$ROOT" all bench-bins >/dev/null || exit 1
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
G=$ROOT/build/bench/gendata
"$G" words 200000 >"$TMP/words.txt" && "$G" csrc 20 >"$TMP/big.c" && "$G" sql 20000 >"$TMP/ins.sql" || exit 1

# Total instructions of one run: configuration, then the program's command.
count() {
  local input=/dev/null
  [ "$2" = sqlite ] && input=$TMP/ins.sql
  local -a cmd
  case $2 in
    python) cmd=(env PYTHONMALLOC=malloc python3 "$ROOT/bench/real/pyalloc.py" 0.1) ;;
    sort) cmd=(env LC_ALL=C sort -S 64M --parallel=2 -o /dev/null "$TMP/words.txt") ;;
    gcc) cmd=(gcc -O2 -c -o /dev/null "$TMP/big.c") ;;
    clang) cmd=(clang -O2 -c -o /dev/null "$TMP/big.c") ;;
    sqlite) cmd=(sqlite3 :memory:) ;;
  esac
  rm -f "$TMP"/cg.*
  env ${ALLOC_PRELOAD:+LD_PRELOAD=$ALLOC_PRELOAD} $ALLOC_ENV valgrind --tool=callgrind --trace-children=yes \
    --callgrind-out-file="$TMP/cg.%p" "${cmd[@]}" <"$input" >/dev/null 2>"$TMP/err" || { tail -3 "$TMP/err" >&2; return 1; }
  cat "$TMP"/cg.* | awk '/^(summary|totals):/ {s += $2} END {printf "%.0f\n", s}'
}

printf '%-8s' program; for a in $ALLOCS; do printf ' %22s' "${a##*/}"; done; echo "   (instructions; change against the first)"
for p in $ONLY; do
  printf '%-8s' "$p"
  first=
  for a in $ALLOCS; do
    if ! bench_alloc_setup "$a"; then printf ' %22s' NA; continue; fi
    n=$(count "$a" "$p") || { printf ' %22s' failed; continue; }
    if [ -z "$first" ]; then first=$n; printf ' %22s' "$n"
    else printf ' %22s' "$(awk -v n="$n" -v f="$first" 'BEGIN {printf "%.0f (%+.2f%%)", n, 100 * (n / f - 1)}')"; fi
  done
  echo
done
