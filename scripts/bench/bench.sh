#!/usr/bin/env bash
# Runs the benchmark suite under every allocator, interleaved, and writes results/.
# Usage: scripts/bench/bench.sh [--quick|--full] [--runs N] [--only W[,W..]] [--alloc A[,A..]]
#                         [--no-fastpath] [--list] [--help]
#   default  3 runs, moderate scale (make bench, about 12 min on 2 cores)
#   --full   5 runs, full scale (make bench-full, the committed results)
#   --quick  1 run, small scale (about 2 min)
# --only/--alloc narrow the run; a narrowed run writes its own CSV and prints the table
# but leaves results/latest.csv, README.md and the plot alone.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
. scripts/bench/bench-lib.sh
unset LD_PRELOAD BOBOX_PIN

B=$ROOT/build/bench
MODE=moderate RUNS= ONLY= ALLOCS= FASTPATH=1
WORKLOADS="server server-t2 prodcons bulkpc batches batches-t1 falseshare mixed pipeline mergesort
           paging71 paging72 realloc handoff powerlaw powerlaw-t2 tight-t1 tight fifo1k fifo4k
           fifo8k bigbuf larson prodcons64 crossfree gmicro-t1 gmicro memthreads memshape memchurn
           python sort gcc clang sqlite postgres redis"
# Memory shapes: their resident memory over time is sampled (results/rss/, the memory plot)
# and their own measures go in the CSV's memory column.
MEM="memthreads memshape memchurn"
# Multi-threaded workloads: these also run under the pinning variants.
MT="server server-t2 prodcons bulkpc batches falseshare pipeline mergesort realloc handoff powerlaw-t2
    tight larson prodcons64 crossfree gmicro sort"
# Real programs (Debian packages driven by a script); every other workload is our own program
# in bench/. The CSV's kind column and the report's tables say which is which.
REAL="python sort gcc clang sqlite postgres redis"
NCPU=$(nproc 2>/dev/null || echo 2)
NCPU2=$((NCPU < 2 ? 2 : NCPU))   # at least 2: workloads whose point is a free by another thread

usage() { sed -n '2,9s/^# \{0,1\}//p' "$0"; }
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) MODE=quick ;;
    --full) MODE=full ;;
    --runs) RUNS=$2; shift ;;
    --only) ONLY="$ONLY ${2//,/ }"; shift ;;
    --alloc) ALLOCS="$ALLOCS ${2//,/ }"; shift ;;
    --no-fastpath) FASTPATH=0 ;;
    --list) echo "workloads: $WORKLOADS" | tr -s ' \n' ' '; echo; echo "real programs (the rest are ours): $REAL"; echo "allocators: $BENCH_ALL_ALLOCS"; exit 0 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "bench.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
  esac
  shift
done

# Scale factors: S for most workloads; merge sort keeps 2^24 ints except in --quick.
case $MODE in
  quick)    S=0.1;  MS=0.25; : "${RUNS:=1}"; TIMEOUT=60 ;;
  moderate) S=0.3;  MS=1;    : "${RUNS:=3}"; TIMEOUT=120 ;;
  full)     S=1;    MS=1;    : "${RUNS:=5}"; TIMEOUT=300 ;;
esac

for w in $ONLY; do
  case " $(echo $WORKLOADS) fastpath " in *" $w "*) ;; *) echo "bench.sh: unknown workload $w (see --list)" >&2; exit 2 ;; esac
done
NARROW=0; [ -n "$ONLY$ALLOCS" ] && NARROW=1
[ -n "$ONLY" ] && WORKLOADS=$(for w in $WORKLOADS; do case " $ONLY " in *" $w "*) echo $w ;; esac; done)
case " $ONLY " in *" fastpath "*) ;; *) [ -n "$ONLY" ] && FASTPATH=0 ;; esac

START=$(date +%s)
echo "== bobox-malloc benchmarks: mode=$MODE runs=$RUNS scale=$S"

# ---- dependencies and build ------------------------------------------------------------
bench_ensure_pkgs libjemalloc2 libmimalloc2.0 libtcmalloc-minimal4 gnuplot-nox valgrind \
                  python3 sqlite3 coreutils gcc clang postgresql \
                  redis-server redis-tools
bench_build_rivals ${ALLOCS:-$BENCH_ALL_ALLOCS}   # mimalloc3, snmalloc: built once into build/rivals/
if ! make -s -C "$ROOT" bench-bins >/dev/null; then
  echo "bench.sh: building the workloads failed" >&2; exit 1
fi
make -s -C "$ROOT" all >/dev/null 2>&1 || echo "bench: note: 'make all' failed; bobox is skipped unless build/libbobox.so exists"
PY=/usr/bin/python3; [ -x $PY ] || PY=python3
# Measure a snapshot of the bobox libraries: a rebuild during a long run must not change them.
SNAP=$(mktemp -d "$B/lib.XXXXXX"); trap 'rm -rf "$SNAP"' EXIT
for l in libbobox.so libbobox-pin.so; do [ -f "build/$l" ] && cp "build/$l" "$SNAP/"; done
export BENCH_BOBOX_DIR=$SNAP
BOBOX_BUILD=
if [ -f "$SNAP/libbobox.so" ]; then
  BOBOX_BUILD="sha256 $(sha256sum "$SNAP/libbobox.so" | cut -c1-12)"
  rev=$(git rev-parse --short HEAD 2>/dev/null) && BOBOX_BUILD="$BOBOX_BUILD, git $rev$(git diff --quiet HEAD -- allocator pinning 2>/dev/null || echo +modified)"
fi

# ---- allocators: present and passing a smoke test ----------------------------------------
ACTIVE= SKIPPED=
for a in ${ALLOCS:-$BENCH_ALL_ALLOCS}; do
  if ! bench_alloc_setup "$a"; then
    echo "bench: skipping $a: $ALLOC_WHY"; SKIPPED="$SKIPPED $a:${ALLOC_WHY// /_}"; continue
  fi
  smoke=$("$B/bench-run" -t 30 ${ALLOC_PRELOAD:+-e LD_PRELOAD=$ALLOC_PRELOAD} ${ALLOC_ENV:+-e $ALLOC_ENV} \
          -- "$B/server" 2 0.002 2>/dev/null | sed -n 's/^RUN status=\([^ ]*\).*/\1/p')
  if [ "$smoke" != ok ]; then
    echo "bench: skipping $a: smoke test (server 2 threads) ended with ${smoke:-no status}"
    SKIPPED="$SKIPPED $a:smoke_test_${smoke:-failed}"; continue
  fi
  ACTIVE="$ACTIVE $a"
done
[ -z "$ACTIVE" ] && { echo "bench.sh: no allocator available" >&2; exit 1; }
echo "allocators:$ACTIVE"

# ---- inputs for the real programs (generated once per size, cached) ----------------------
DATA=$B/data; mkdir -p "$DATA"
n_sort=$(awk -v s=$S 'BEGIN {printf "%d", 4000000*s}')
n_gcc=$(awk -v s=$S 'BEGIN {n = int(400*s); print n < 10 ? 10 : n}')
n_sql=$(awk -v s=$S 'BEGIN {printf "%d", 200000*s}')
n_py=$(awk -v s=$S 'BEGIN {n = int(16*s); print n < 1 ? 1 : n}')
n_pg=$(awk -v s=$S 'BEGIN {n = int(1000*s); print n < 50 ? 50 : n}')
n_redis=$(awk -v s=$S 'BEGIN {n = int(500000*s); print n < 20000 ? 20000 : n}')   # requests per test
gen() {  # kind file n
  [ -s "$DATA/$2" ] && return 0
  "$B/gendata" "$1" "$3" > "$DATA/$2.tmp" && mv -f "$DATA/$2.tmp" "$DATA/$2"
}
gen words words-$n_sort.txt $n_sort
gen csrc big-$n_gcc.c $n_gcc
gen sql ins-$n_sql.sql $n_sql
# postgres: a template cluster, made once, that each run copies (the server's user must reach it).
PGDIR=
if case " $(echo $WORKLOADS) " in *" postgres "*) true ;; *) false ;; esac; then
  mkdir -p "$B/logs"; PGDIR=$(mktemp -d /tmp/bobox-pg.XXXXXX) && chmod 755 "$PGDIR"
  [ "$(id -u)" -eq 0 ] && chown postgres "$PGDIR" 2>/dev/null
  if ! "$ROOT/bench/real/pgbench.sh" --setup "$PGDIR" >>"$B/logs/pg-setup.log" 2>&1; then
    echo "bench: skipping postgres: no PostgreSQL server could be set up (build/bench/logs/pg-setup.log)"
    WORKLOADS=$(for w in $WORKLOADS; do [ "$w" = postgres ] || echo $w; done)
  fi
fi
trap 'rm -rf "$SNAP" ${PGDIR:+"$PGDIR"}' EXIT
if case " $(echo $WORKLOADS) " in *" redis "*) true ;; *) false ;; esac; then
  if ! command -v redis-server >/dev/null || ! command -v redis-benchmark >/dev/null; then
    echo "bench: skipping redis: redis-server or redis-benchmark missing (Debian packages redis-server, redis-tools)"
    WORKLOADS=$(for w in $WORKLOADS; do [ "$w" = redis ] || echo $w; done)
  fi
fi
# Warm the page cache so the first allocator is not charged for reading the inputs.
cat "$DATA/words-$n_sort.txt" "$DATA/big-$n_gcc.c" "$DATA/ins-$n_sql.sql" > /dev/null

# Sets CMD (array), RIN, ENVX, THREADS, UNITS (work units for real programs) for a workload.
workload() {
  RIN= ENVX= UNITS= UNIT=
  case $1 in
    server)     THREADS=4; CMD=("$B/server" 4 $S) ;;
    server-t2)  THREADS=2; CMD=("$B/server" 2 $S) ;;
    prodcons)   THREADS=4; CMD=("$B/prodcons" 4 $S) ;;
    bulkpc)     THREADS=4; CMD=("$B/bulkpc" 4 $S) ;;             # 1-2 s at scale 1
    batches)    THREADS=4; CMD=("$B/batches" 4 $S) ;;
    batches-t1) THREADS=1; CMD=("$B/batches" 1 $S) ;;
    falseshare) THREADS=4; CMD=("$B/falseshare" 4 $S) ;;
    mixed)      THREADS=1; CMD=("$B/mixed" 1 $S) ;;
    pipeline)   THREADS=4; CMD=("$B/pipeline" 4 $S) ;;
    mergesort)  THREADS=4; CMD=("$B/mergesort" 4 $MS) ;;
    paging71)   THREADS=1; CMD=("$B/paging" 71 $S) ;;
    paging72)   THREADS=1; CMD=("$B/paging" 72 $S) ;;
    realloc)    THREADS=4; CMD=("$B/realloc" 4 $S) ;;
    handoff)    THREADS=$NCPU; CMD=("$B/handoff" $NCPU $S) ;;
    powerlaw)   THREADS=1; CMD=("$B/powerlaw" 1 $S) ;;
    powerlaw-t2) THREADS=2; CMD=("$B/powerlaw" 2 $S) ;;
    tight-t1)   THREADS=1; CMD=("$B/tightloop" 1 $S) ;;
    tight)      THREADS=$NCPU; CMD=("$B/tightloop" $NCPU $S) ;;
    fifo1k)     THREADS=1; CMD=("$B/fifo" 1024 $S) ;;
    fifo4k)     THREADS=1; CMD=("$B/fifo" 4096 $S) ;;
    fifo8k)     THREADS=1; CMD=("$B/fifo" 8192 $S) ;;
    bigbuf)     THREADS=1; CMD=("$B/bigbuf" 1 $S) ;;
    larson)     THREADS=$NCPU2; CMD=("$B/larson" $NCPU2 $S) ;;   # fixed time: 5 s at scale 1
    prodcons64) THREADS=2; CMD=("$B/prodcons64" 2 $S) ;;        # fixed time: 2 s at scale 1
    crossfree)  THREADS=$NCPU2; CMD=("$B/crossfree" $NCPU2 $S) ;;
    gmicro-t1)  THREADS=1; CMD=("$B/gmicro" 1 $S) ;;
    gmicro)     THREADS=$NCPU; CMD=("$B/gmicro" $NCPU $S) ;;
    memthreads) THREADS=1000; CMD=("$B/memshapes" threads 1000 1) ;;  # 1,000 threads at every scale
    memshape)   THREADS=1; CMD=("$B/memshapes" shape 1 $S) ;;
    memchurn)   THREADS=8; CMD=("$B/memshapes" churn 8 $S) ;;
    python)     THREADS=1; ENVX=PYTHONMALLOC=malloc; UNITS=$n_py; UNIT=rounds/s
                CMD=("$PY" "$ROOT/bench/real/pyalloc.py" $S) ;;
    sort)       THREADS=4; ENVX=LC_ALL=C; UNITS=$n_sort; UNIT=lines/s
                CMD=(sort -S 64M --parallel=4 -o /dev/null "$DATA/words-$n_sort.txt") ;;
    gcc)        THREADS=1; UNITS=$n_gcc; UNIT=functions/s
                CMD=(gcc -O2 -c -o /dev/null "$DATA/big-$n_gcc.c") ;;
    clang)      THREADS=1; UNITS=$n_gcc; UNIT=functions/s   # a C++ program: new and delete
                CMD=(clang -O2 -c -o /dev/null "$DATA/big-$n_gcc.c") ;;
    postgres)   THREADS=4; CMD=("$ROOT/bench/real/pgbench.sh" "$PGDIR" $n_pg) ;;  # 4 clients
    redis)      THREADS=1; CMD=("$ROOT/bench/real/redis.sh" $n_redis) ;;  # 50 connections, pipelined
    sqlite)     THREADS=1; UNITS=$n_sql; UNIT=rows/s; RIN=$DATA/ins-$n_sql.sql
                CMD=(sqlite3 :memory:) ;;
  esac
}

kv() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<" $2"; }   # value of key $1 in line $2

# ---- the runs: for each repetition, each workload, every allocator in turn --------------
mkdir -p results "$B/logs"
HOST=$(hostname -s 2>/dev/null || hostname)
STAMP=$(date +%Y%m%d-%H%M%S)
CSV=results/$STAMP-$HOST.csv
[ $NARROW = 1 ] && CSV=results/$STAMP-$HOST-partial.csv
LOG=$B/logs/$STAMP.log
echo "date,host,mode,run,workload,alloc,threads,scale,status,wall_s,secs,throughput,unit,maxrss_kb,minflt,majflt,utime_s,stime_s,kind,memory" > "$CSV"
RSSDIR=results/rss; [ $NARROW = 1 ] && RSSDIR=${CSV%.csv}-rss
mkdir -p "$RSSDIR"
DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ)
nfail=0
for run in $(seq 1 "$RUNS"); do
  for w in $WORKLOADS; do
    workload "$w"
    for a in $ACTIVE; do
      case $a in bobox-pin-*) case " $(echo $MT) " in *" $w "*) ;; *) continue ;; esac ;; esac
      bench_alloc_setup "$a"
      opts=(-t "$TIMEOUT")
      [ -n "$ALLOC_PRELOAD" ] && opts+=(-e "LD_PRELOAD=$ALLOC_PRELOAD")
      [ -n "$ALLOC_ENV" ] && opts+=(-e "$ALLOC_ENV")
      [ -n "$ENVX" ] && opts+=(-e "$ENVX")
      if [ -n "$RIN" ]; then opts+=(-i "$RIN" -o /dev/null); fi
      # An allocator given as a path (--alloc /x/y.so) is named by its file.
      case " $MEM " in *" $w "*) [ "$run" = 1 ] && opts+=(-s "$RSSDIR/$w-${a##*/}.tsv") ;; esac
      echo "### run=$run workload=$w alloc=$a" >> "$LOG"
      out=$("$B/bench-run" "${opts[@]}" -- "${CMD[@]}" 2>>"$LOG")
      echo "$out" >> "$LOG"
      runl=$(grep '^RUN ' <<<"$out" | tail -1)
      resl=$(grep '^RESULT ' <<<"$out" | tail -1)
      status=$(kv status "$runl"); status=${status:-norun}
      [ "$status" = ok ] && [ -z "$UNITS" ] && [ -z "$resl" ] && status=noresult
      wall=$(kv wall_s "$runl") rss=$(kv maxrss_kb "$runl") minf=$(kv minflt "$runl")
      majf=$(kv majflt "$runl") ut=$(kv utime_s "$runl") st=$(kv stime_s "$runl")
      if [ -n "$UNITS" ]; then
        secs=$wall unit=$UNIT
        thr=$(awk -v n="$UNITS" -v t="$wall" 'BEGIN {if (t > 0) printf "%.6g", n / t}')
      else
        secs=$(kv secs "$resl") thr=$(kv throughput "$resl") unit=$(kv unit "$resl")
      fi
      if [ "$status" != ok ]; then
        nfail=$((nfail + 1))
        wall=NA secs=NA thr=NA rss=NA minf=NA majf=NA ut=NA st=NA
        printf '  [%d/%d] %-11s %-18s FAILED (%s), recorded as NA\n' "$run" "$RUNS" "$w" "$a" "$status"
      else
        printf '  [%d/%d] %-11s %-18s %8.3f s %8.1f MB\n' "$run" "$RUNS" "$w" "$a" "$wall" \
          "$(awk -v k="$rss" 'BEGIN {print k / 1024}')"
      fi
      mem=$(grep -o '[a-z_]*_kb=[0-9]*' <<<"$resl" | tr '\n' ';'); mem=${mem%;}
      [ "$status" = ok ] || mem=
      scale=$S; [ "$w" = mergesort ] && scale=$MS
      kind=own; case " $REAL " in *" $w "*) kind=real ;; esac
      echo "$DATE,$HOST,$MODE,$run,$w,$a,$THREADS,$scale,$status,$wall,${secs:-NA},${thr:-NA},${unit:-NA},$rss,$minf,$majf,$ut,$st,$kind,${mem:-NA}" >> "$CSV"
    done
  done
done

FP_CSV=results/fastpath.csv; [ $NARROW = 1 ] && FP_CSV=${CSV%.csv}-fastpath.csv
# ---- instructions per malloc+free pair ----------------------------------------------------
if [ $FASTPATH = 1 ]; then
  fp_allocs=$(for a in $ACTIVE; do case $a in bobox-pin*) ;; *) echo $a ;; esac; done)
  scripts/bench/fastpath.sh --alloc "$(echo $fp_allocs | tr ' ' ,)" --out "$FP_CSV" || echo "bench: fastpath.sh failed" >&2
fi

# ---- the node lock: spinlock vs mutex under contention ------------------------------------
LOCK_CSV=results/lockbench.csv; [ $NARROW = 1 ] && LOCK_CSV=${CSV%.csv}-lockbench.csv
if [ $NARROW = 0 ] || [ -z "$ONLY" ]; then
  if "$ROOT/build/bench/lockbench" 2 4 8 > "$LOCK_CSV.tmp"; then mv "$LOCK_CSV.tmp" "$LOCK_CSV"
  else rm -f "$LOCK_CSV.tmp"; echo "bench: lockbench failed" >&2; fi
fi

# ---- Redis, ranked over rounds (scripts/bench/redis-rank.sh) -------------------------------
RANK_CSV=results/redis-rank.csv RANK_MD=results/redis-rank.md
[ $NARROW = 1 ] && RANK_CSV=${CSV%.csv}-redis-rank.csv RANK_MD=${CSV%.csv}-redis-rank.md
if case " $(echo $WORKLOADS) " in *" redis "*) true ;; *) false ;; esac; then
  rank_allocs=$(for a in $ACTIVE; do case $a in bobox-pin*) ;; *) echo $a ;; esac; done)
  [ "$MODE" = quick ] && : "${REDIS_ROUNDS:=3}"
  scripts/bench/redis-rank.sh --alloc "$(echo $rank_allocs | tr ' ' ,)" --rounds "${REDIS_ROUNDS:-9}" \
      --requests "$n_redis" --out "$RANK_CSV" --md "$RANK_MD" || echo "bench: redis-rank.sh failed" >&2
fi

# ---- report -------------------------------------------------------------------------------
END=$(date +%s)
META=${CSV%.csv}.meta
{
  echo "date=$DATE"; echo "host=$HOST"; echo "mode=$MODE"; echo "runs=$RUNS"; echo "scale=$S"
  echo "mergesort_scale=$MS"; echo "allocators=$(echo $ACTIVE)"; echo "skipped=$(echo $SKIPPED)"
  echo "bobox_build=$BOBOX_BUILD"; echo "duration_s=$((END - START))"; echo "failures=$nfail"; echo "csv=$(basename "$CSV")"
  bench_machine_info
} > "$META"
if [ $NARROW = 1 ]; then
  $PY scripts/bench/bench-report.py --csv "$CSV" --meta "$META" --fastpath "$FP_CSV" --lock "$LOCK_CSV" --rss "$RSSDIR" --stdout
  echo "== narrowed run: $CSV (results/latest.csv, README.md and the plot are unchanged)"
else
  cp "$CSV" results/latest.csv; cp "$META" results/latest.meta
  $PY scripts/bench/bench-report.py --csv results/latest.csv --meta results/latest.meta \
      --fastpath results/fastpath.csv --lock results/lockbench.csv --readme results/README.md --plot results/bench.png \
      --rss "$RSSDIR" --memory-plot results/memory.png --stdout
  echo "== wrote $CSV, results/latest.csv, results/README.md, results/bench.png, results/memory.png"
fi
echo "== done in $((END - START)) s ($nfail failed runs; log: ${LOG#$ROOT/})"
