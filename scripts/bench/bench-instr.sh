#!/usr/bin/env bash
# Instructions per operation of whole workloads, from callgrind: a noise-free companion to the
# wall times of bench.sh on a shared machine. Each workload runs at a reduced scale S and at
# 2S under each allocator; (Ir(2S) - Ir(S)) / (ops(2S) - ops(S)) cancels start-up and the
# initial fill, and counts every thread and the workload's own work (random numbers, writing
# the objects), which is the same under every allocator. Kernel work (page faults, mmap) is not
# counted by callgrind: a second table gives minor page faults per operation, from native runs
# at the same two scales (the same difference; counts, not times, so stable on a shared machine).
# With --annotate, also prints the functions of the first allocator that take the most
# instructions per op (self cost, from callgrind_annotate of both runs, the same difference).
# Usage: scripts/bench/bench-instr.sh [--alloc A[,A..]] [--only W[,W..]] [--annotate] [--out FILE.csv]
#   default allocators: bobox mimalloc tcmalloc (any of bench.sh --list); workloads: the list below (--list)
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
. scripts/bench/bench-lib.sh
unset LD_PRELOAD BOBOX_PIN

ALLOCS="bobox mimalloc tcmalloc" ONLY= ANNOTATE=0 OUT=
# name:scale S:command (SCALE is replaced by S and 2S). Scales keep each run under ~20 s.
# Fixed-time workloads (larson, prodcons64) do fewer operations under callgrind; the count is
# still per operation.
SPECS="handoff:0.002:handoff 2 SCALE
powerlaw:0.01:powerlaw 1 SCALE
powerlaw-t2:0.01:powerlaw 2 SCALE
tight-t1:0.002:tightloop 1 SCALE
tight:0.002:tightloop 2 SCALE
fifo1k:0.005:fifo 1024 SCALE
fifo4k:0.005:fifo 4096 SCALE
fifo8k:0.005:fifo 8192 SCALE
bigbuf:0.02:bigbuf 1 SCALE
larson:0.02:larson 2 SCALE
prodcons64:0.05:prodcons64 2 SCALE
crossfree:0.005:crossfree 2 SCALE
gmicro-t1:0.002:gmicro 1 SCALE
gmicro:0.002:gmicro 2 SCALE
mixed:0.01:mixed 1 SCALE
batches-t1:0.01:batches 1 SCALE
server-t2:0.01:server 2 SCALE
server-t1:0.01:server 1 SCALE
pipeline:0.01:pipeline 2 SCALE
prodcons:0.01:prodcons 2 SCALE
bulkpc:0.05:bulkpc 4 SCALE
realloc:0.01:realloc 2 SCALE
redis:10000:redis"
while [ $# -gt 0 ]; do
  case "$1" in
    --alloc) ALLOCS=${2//,/ }; shift ;;
    --only) ONLY=" ${2//,/ } "; shift ;;
    --annotate) ANNOTATE=1 ;;
    --out) OUT=$2; shift ;;
    --list) cut -d: -f1 <<<"$SPECS" | tr '\n' ' '; echo; exit 0 ;;
    -h|--help) sed -n '2,12s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) echo "bench-instr.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
for w in $ONLY; do
  grep -q "^$w:" <<<"$SPECS" || { echo "bench-instr.sh: unknown workload $w (see --list)" >&2; exit 2; }
done
bench_ensure_pkgs valgrind libjemalloc2 libmimalloc2.0 libtcmalloc-minimal4
bench_build_rivals $ALLOCS
command -v valgrind >/dev/null || { echo "bench-instr.sh: valgrind missing" >&2; exit 1; }
make -s -C "$ROOT" all bench-bins >/dev/null || exit 1
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
B=$ROOT/build/bench

# Runs one workload at one scale under callgrind; prints "Ir ops", or nothing on failure.
# Callgrind output goes to $TMP/cg.<tag> (one file: threads are summed).
run_cg() {  # preload workload scale tag (the configuration's ALLOC_ENV applies too)
  local f=$TMP/cg.$4 out ir ops
  rm -f "$f"
  if [ "$2" = redis ]; then
    # The server runs under callgrind; the client (redis-benchmark) runs natively.
    out=$(env ${1:+LD_PRELOAD=$1} $ALLOC_ENV BENCH_SERVER_PREFIX="valgrind --tool=callgrind --callgrind-out-file=$f" \
          "$ROOT/bench/real/redis.sh" "$3" 2>"$TMP/err") || { cat "$TMP/err" >&2; return 1; }
    ops=$(sed -n 's/.* requests=\([0-9]*\).*/\1/p' <<<"$out")
  else
    local cmd
    cmd=$(grep "^$2:" <<<"$SPECS" | cut -d: -f3-)
    cmd=${cmd//SCALE/$3}
    out=$(env ${1:+LD_PRELOAD=$1} $ALLOC_ENV valgrind --tool=callgrind --callgrind-out-file="$f" $B/$cmd 2>"$TMP/err") \
      || { tail -5 "$TMP/err" >&2; return 1; }
    ops=$(sed -n 's/.* ops=\([0-9]*\).*/\1/p' <<<"$out")
  fi
  ir=$(awk '/^(summary|totals):/ {print $2; exit}' "$f")
  echo "$ops" > "$TMP/ops.$4"
  [ -n "$ir" ] && [ -n "$ops" ] && echo "$ir $ops"
}

# Self instructions per op of each function, (run 2 - run 1) / ops, top 12. Inlined code is
# charged by callgrind to the header it came from; the sum is per function name.
per_function() {  # cg1 cg2 ops
  local f
  for f in "$1" "$2"; do
    callgrind_annotate --inclusive=no --auto=no --threshold=100 "$f" 2>/dev/null |
      awk '$1 ~ /^[0-9,]+$/ && $2 ~ /^\(/ && $0 !~ /PROGRAM TOTALS/ {
             ir = $1; gsub(",", "", ir); fn = $0; sub(/^[^)]*\) +/, "", fn); sub(/ \[.*$/, "", fn)
             n = split(fn, parts, ":"); print parts[n] "\t" ir }'
    echo "--"
  done | awk -F'\t' -v ops="$3" '$0 == "--" {run++; next}
        {if (run == 0) a[$1] += $2; else b[$1] += $2}
        END {for (f in b) {d = (b[f] - a[f]) / ops; if (d >= 0.5) printf "%8.1f  %s\n", d, f}}' |
    sort -rn | head -12
}

# Minor faults and ops of one native run; nothing on failure.
run_native() {  # preload workload scale
  local out cmd ops
  if [ "$2" = redis ]; then
    out=$(env $ALLOC_ENV "$B/bench-run" -t 300 ${1:+-e LD_PRELOAD=$1} -- "$ROOT/bench/real/redis.sh" "$3" 2>/dev/null)
    ops=$(sed -n 's/.* requests=\([0-9]*\).*/\1/p' <<<"$out")
  else
    cmd=$(grep "^$2:" <<<"$SPECS" | cut -d: -f3-)
    out=$(env $ALLOC_ENV "$B/bench-run" -t 300 ${1:+-e LD_PRELOAD=$1} -- $B/${cmd//SCALE/$3} 2>/dev/null)
    ops=$(sed -n 's/^RESULT.* ops=\([0-9]*\).*/\1/p' <<<"$out")
  fi
  grep -q '^RUN status=ok' <<<"$out" || return 1
  echo "$(sed -n 's/^RUN.* minflt=\([0-9]*\).*/\1/p' <<<"$out") $ops"
}
per_op() {  # "value1 ops1" "value2 ops2"
  [ -n "$1" ] && [ -n "$2" ] || { echo NA; return; }
  awk -v a="$1" -v b="$2" 'BEGIN {split(a, x, " "); split(b, y, " ")
    if (y[2] > x[2]) { v = (y[1] - x[1]) / (y[2] - x[2]); printf (v < 10 ? "%.3f" : "%.1f"), v } else print "NA"}'
}
FAULTS=

[ -n "$OUT" ] && { mkdir -p "$(dirname "$OUT")"; echo "workload,alloc,instr_per_op,minflt_per_op" > "$OUT"; }
printf '%-12s' workload; for a in $ALLOCS; do printf '%12s' "${a##*/}"; done; echo "   (instructions per operation)"
first=${ALLOCS%% *}; first=${first//\//_}
for spec in $(cut -d: -f1,2 <<<"$SPECS"); do
  w=${spec%%:*} s=${spec#*:}
  [ -n "$ONLY" ] && case "$ONLY" in *" $w "*) ;; *) continue ;; esac
  s2=$(awk -v s="$s" 'BEGIN {print 2 * s}')
  printf '%-12s' "$w"
  for a in $ALLOCS; do
    if ! bench_alloc_setup "$a"; then printf '%12s' NA; FAULTS="$FAULTS NA"; continue; fi
    r1=$(run_cg "$ALLOC_PRELOAD" "$w" "$s" "$w.${a//\//_}.1") r2=$(run_cg "$ALLOC_PRELOAD" "$w" "$s2" "$w.${a//\//_}.2")
    v=$(per_op "$r1" "$r2")
    f1=$(run_native "$ALLOC_PRELOAD" "$w" "$s") f2=$(run_native "$ALLOC_PRELOAD" "$w" "$s2")
    f=$(per_op "$f1" "$f2")
    printf '%12s' "$v"
    FAULTS="$FAULTS $f"
    [ -n "$OUT" ] && echo "$w,$a,$v,$f" >> "$OUT"
  done
  printf '   | minor faults per op:'; printf ' %s' $FAULTS; echo
  FAULTS=
  if [ $ANNOTATE = 1 ] && [ -s "$TMP/ops.$w.$first.1" ] && [ -s "$TMP/ops.$w.$first.2" ]; then
    per_function "$TMP/cg.$w.$first.1" "$TMP/cg.$w.$first.2" \
      $(($(cat "$TMP/ops.$w.$first.2") - $(cat "$TMP/ops.$w.$first.1"))) | sed 's/^/      /'
  fi
done
