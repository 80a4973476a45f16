#!/usr/bin/env bash
# Ranks allocators under a real Redis (bench/real/redis.sh: Debian's redis-server, driven by
# redis-benchmark with 50 pipelined connections) with enough rounds to tell them apart.
#
# On a machine of two cores the client and the server share the processors, so throughput moves
# by 20% from run to run whatever the allocator. The figure ranked here is the server's own CPU
# time per 1,000 requests, which the client's scheduling moves much less. Every round runs each
# allocator once, in an order rotated round by round; two allocators are compared round by round
# (a sign test over the rounds), so a drift of the machine's speed during the call cancels out.
#
# Usage: redis-rank.sh [--alloc a,b,...] [--rounds N] [--requests N] [--out CSV] [--md FILE]
#   --alloc     allocators as bench-lib.sh names them (default: every one found, bobox's
#               pinning variants aside)
#   --rounds    rounds (default 9: a sign test can then separate two at p < 0.05)
#   --requests  requests per redis-benchmark test (4 tests; default 150000)
#   --out       the per-run CSV (default results/redis-rank.csv)
#   --md        the ranked table in Markdown (default results/redis-rank.md)
#   --from CSV  no runs: the table of an earlier call's CSV
# Exit 2 when redis-server or redis-benchmark is missing.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
source scripts/bench/bench-lib.sh

allocs=$(echo $BENCH_ALL_ALLOCS | tr ' ' '\n' | grep -v '^bobox-pin' | tr '\n' ,)
rounds=9 requests=150000 out=results/redis-rank.csv md=results/redis-rank.md from=
while [ $# -gt 0 ]; do
  case $1 in
    --alloc) allocs=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --requests) requests=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --md) md=$2; shift 2 ;;
    --from) from=$2; shift 2 ;;
    *) echo "redis-rank.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "redis-rank.sh: --rounds must be a positive number" >&2; exit 2; }
for p in redis-server redis-benchmark redis-cli; do
  command -v $p >/dev/null || { echo "redis-rank.sh: $p is not installed" >&2; exit 2; }
done

if [ -n "$from" ]; then
  out=$from
else
names=() preloads=()
for a in ${allocs//,/ }; do
  if bench_alloc_setup "$a"; then
    [ -z "$ALLOC_ENV" ] || { echo "redis-rank.sh: skipping $a: it needs environment ($ALLOC_ENV)" >&2; continue; }
    names+=("$a") preloads+=("$ALLOC_PRELOAD")
  else
    echo "redis-rank.sh: skipping $a: $ALLOC_WHY" >&2
  fi
done
n=${#names[@]}
[ "$n" -ge 1 ] || { echo "redis-rank.sh: no allocator to run" >&2; exit 1; }

mkdir -p "$(dirname "$out")"
echo "round,alloc,requests,secs,throughput,server_cpu_s,server_hwm_kb" > "$out.tmp"
for r in $(seq 1 "$rounds"); do
  for k in $(seq 0 $((n - 1))); do
    i=$(((k + r) % n))  # rotated: no allocator always runs after the same one
    line=$(LD_PRELOAD=${preloads[$i]} bench/real/redis.sh "$requests" | grep '^RESULT ') \
      || { echo "redis-rank.sh: round $r, ${names[$i]}: redis.sh failed" >&2; exit 1; }
    kv() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$line"; }
    echo "$r,${names[$i]},$(kv requests),$(kv secs),$(kv throughput),$(kv server_cpu_s),$(kv server_hwm_kb)" >> "$out.tmp"
    printf '  [%d/%d] redis %-10s %9.0f requests/s, server CPU %5.2f s\n' "$r" "$rounds" "${names[$i]}" \
      "$(kv throughput)" "$(kv server_cpu_s)"
  done
done
mv "$out.tmp" "$out"
fi

python3 - "$out" "$md" <<'EOF'
import csv, math, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
by = {}
for r in rows:
    d = by.setdefault(r["alloc"], {})
    req = float(r["requests"])
    d[int(r["round"])] = (float(r["server_cpu_s"]) * 1e6 / req,  # ms per 1,000 requests
                          float(r["throughput"]), float(r["server_hwm_kb"]) / 1024)
def med(a, k): return statistics.median(v[k] for v in by[a].values())
order = sorted(by, key=lambda a: med(a, 0))
def sign_p(wins, n):  # two-sided sign test
    tail = sum(math.comb(n, k) for k in range(max(wins, n - wins), n + 1)) / 2 ** n
    return min(1.0, 2 * tail)
lines = ["| rank | allocator | server CPU, ms per 1,000 requests (median, min-max) | throughput, requests/s (median) | server peak RSS, MB | against the next: rounds won, sign test | bobox against it: CPU ratio (median of rounds), rounds bobox won |",
         "|---|---|---|---|---|---|---|"]
for i, a in enumerate(order):
    cpu = [v[0] for v in by[a].values()]
    vs = ""
    if i + 1 < len(order):
        b = order[i + 1]
        common = sorted(set(by[a]) & set(by[b]))
        wins = sum(by[a][r][0] < by[b][r][0] for r in common)
        p = sign_p(wins, len(common))
        vs = f"{wins} of {len(common)}, p = {p:.3f}" + (" (apart)" if p < 0.05 else " (not apart)")
    vb = ""
    if "bobox" in by and a != "bobox":
        common = sorted(set(by["bobox"]) & set(by[a]))
        ratio = statistics.median(by["bobox"][r][0] / by[a][r][0] for r in common)
        wins = sum(by["bobox"][r][0] < by[a][r][0] for r in common)
        vb = f"{ratio:.3f}, {wins} of {len(common)} (p = {sign_p(wins, len(common)):.3f})"
    lines.append(f"| {i + 1} | {a} | {med(a, 0):.3f} ({min(cpu):.3f}-{max(cpu):.3f}) | {med(a, 1):,.0f} | {med(a, 2):.1f} | {vs} | {vb} |")
rounds = len({r["round"] for r in rows})
text = (f"Redis ({rows[0]['requests']} requests in 4 tests a run, {rounds} rounds, allocators in a rotated order each round)\n\n"
        + "\n".join(lines) + "\n")
open(sys.argv[2], "w").write(text)
print(text, end="")
EOF
