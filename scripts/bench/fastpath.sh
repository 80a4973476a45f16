#!/usr/bin/env bash
# Instructions per malloc+free pair on the single-thread hot path, from callgrind, and per
# C++ new+delete pair (`::operator new(size)`, sized `::operator delete`). Two malloc
# patterns, each with 64 live objects of the size: LIFO (free what was just allocated) and
# FIFO (free the object allocated 64 mallocs earlier, a queue).
# For each allocator and size, runs build/bench/fastpath (fastpath_new) with N and 2N pairs,
# counting only inside pair() (--toggle-collect), and reports (Ir(2N) - Ir(N)) / N: start-up,
# first-touch and lazy-binding costs appear in both runs and cancel out.
# Usage: scripts/bench/fastpath.sh [--alloc A[,A..]] [--pairs N] [--out results/fastpath.csv]
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
. scripts/bench/bench-lib.sh
unset LD_PRELOAD BOBOX_PIN

ALLOCS="glibc jemalloc mimalloc mimalloc3 snmalloc tcmalloc bobox" N=100000 OUT=results/fastpath.csv
SIZES="16 64 256 1024 8192"
while [ $# -gt 0 ]; do
  case "$1" in
    --alloc) ALLOCS=${2//,/ }; shift ;;
    --pairs) N=$2; shift ;;
    --out) OUT=$2; shift ;;
    -h|--help) sed -n '2,9s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) echo "fastpath.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
bench_ensure_pkgs valgrind libjemalloc2 libmimalloc2.0 libtcmalloc-minimal4
bench_build_rivals $ALLOCS
make -s -C "$ROOT" build/bench/fastpath build/bench/fastpath_new >/dev/null || exit 1
command -v valgrind >/dev/null || { echo "fastpath.sh: valgrind missing" >&2; exit 1; }

TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
# Ir collected inside pair() for one run; empty on failure.
count() {  # preload pairs size probe [pattern]
  local f=$TMP/cg.out
  rm -f "$f"
  env ${1:+LD_PRELOAD=$1} valgrind --tool=callgrind --toggle-collect='pair*' \
      --callgrind-out-file="$f" "$ROOT/build/bench/$4" "$3" "$2" ${5:-} >/dev/null 2>&1 || return 1
  awk '/^(summary|totals):/ {print $2; exit}' "$f"
}

mkdir -p "$(dirname "$OUT")"
echo "alloc,size,instr_per_pair,pair" > "$OUT.tmp"
# probe:pattern:kind (the CSV's pair column)
for spec in fastpath:lifo:malloc fastpath:fifo:malloc-fifo fastpath_new::new; do
  IFS=: read -r probe pattern kind <<<"$spec"
  case $kind in malloc) label=malloc/free ;; malloc-fifo) label="FIFO 64" ;; new) label=new/delete ;; esac
  printf '%-10s' "$label"; for s in $SIZES; do printf '%8s' "$s B"; done; echo
  for a in $ALLOCS; do
    if ! bench_alloc_setup "$a"; then echo "fastpath: skipping $a: $ALLOC_WHY" >&2; continue; fi
    [ -n "$ALLOC_ENV" ] && continue            # pinning variants: same allocator
    printf '%-10s' "$a"
    for s in $SIZES; do
      i1=$(count "$ALLOC_PRELOAD" "$N" "$s" $probe $pattern) i2=$(count "$ALLOC_PRELOAD" $((2 * N)) "$s" $probe $pattern)
      if [ -n "$i1" ] && [ -n "$i2" ]; then
        v=$(awk -v a="$i1" -v b="$i2" -v n="$N" 'BEGIN {printf "%.1f", (b - a) / n}')
      else
        v=NA
      fi
      printf '%8s' "$v"
      echo "$a,$s,$v,$kind" >> "$OUT.tmp"
    done
    echo
  done
done
mv -f "$OUT.tmp" "$OUT"
echo "(instructions inside pair*(): malloc or new + one store + free or delete + call overhead; FIFO 64: malloc + free of the object allocated 64 mallocs earlier; written to $OUT)"
