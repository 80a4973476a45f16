#!/usr/bin/env bash
# The redis workload of scripts/bench/bench.sh: Debian's redis-server under the allocator named by
# LD_PRELOAD (the server only: redis-benchmark, the client, runs without it), on 127.0.0.1 at
# a free port, no persistence, driven by `redis-benchmark -P 16 -c 50` with TESTS (SET, GET,
# LPUSH, LRANGE_100) of N requests each over 100,000 random keys. The server runs as a child
# of this script so that the harness's peak RSS and CPU time include it; it is stopped (no
# save) when done.
# Usage: redis.sh N   Prints RESULT workload=redis ... unit=requests/s server_cpu_s=... server_hwm_kb=....
# Exit 2 when redis-server or redis-benchmark is missing (bench.sh skips the workload then).
set -euo pipefail
PRELOAD=${LD_PRELOAD:-}
unset LD_PRELOAD
n=${1:?usage: redis.sh REQUESTS_PER_TEST}
TESTS=set,get,lpush,lrange_100
NTESTS=4
for p in redis-server redis-benchmark redis-cli; do
    command -v $p >/dev/null || { echo "redis.sh: $p is not installed (Debian packages redis-server, redis-tools)" >&2; exit 2; }
done
die() { echo "redis.sh: $*" >&2; exit 1; }

dir=$(mktemp -d /tmp/bobox-redis.XXXXXX)
srv=
cleanup() {
    if [ -n "$srv" ]; then
        redis-cli -h 127.0.0.1 -p "$port" shutdown nosave >/dev/null 2>&1 || kill "$srv" 2>/dev/null || true
        wait "$srv" 2>/dev/null || true
    fi
    rm -rf "$dir"
}
trap cleanup EXIT

# A port the kernel reports free on loopback; a race with another program is caught below
# (the server exits and the script fails rather than measuring someone else's server).
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])') \
    || die "no free port found"
# BENCH_SERVER_PREFIX: words run before the server, e.g. valgrind (scripts/bench/bench-instr.sh).
env ${PRELOAD:+LD_PRELOAD="$PRELOAD"} ${BENCH_SERVER_PREFIX:-} redis-server --bind 127.0.0.1 --port "$port" --save '' \
    --appendonly no --daemonize no --dir "$dir" --logfile "$dir/redis.log" --protected-mode yes &
srv=$!
for _ in $(seq 1200); do
    [ "$(redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null)" = PONG ] && break
    kill -0 "$srv" 2>/dev/null || { cat "$dir/redis.log" >&2; srv=; die "the server did not start"; }
    sleep 0.05
done
pid=$(redis-cli -h 127.0.0.1 -p "$port" info server 2>/dev/null | sed -n 's/^process_id:\([0-9]*\).*/\1/p')
[ "$pid" = "$srv" ] || die "the server on port $port is not the one started here"
for l in ${PRELOAD//:/ }; do
    grep -qF "$(readlink -f "$l")" "/proc/$pid/maps" || die "the server does not map $l"
done

start=$(date +%s.%N)
out=$(redis-benchmark -h 127.0.0.1 -p "$port" -P 16 -c 50 -r 100000 -n "$n" -t "$TESTS" --csv 2>&1) \
    || { echo "$out" >&2; die "redis-benchmark failed"; }
end=$(date +%s.%N)
# The server's own CPU time (utime + stime, clock ticks) and peak RSS: the client shares this
# machine's cores, so its scheduling moves the throughput more than the allocator does.
read -r -a stat < <(sed 's/^.*) //' "/proc/$srv/stat")
cpu_ticks=$((stat[11] + stat[12]))
hwm_kb=$(awk '/^VmHWM:/ {print $2}' "/proc/$srv/status")
# One CSV line per test; the server must have processed at least every request sent.
lines=$(grep -c '^"[A-Z]' <<<"$out" || true)
[ "$lines" -ge $NTESTS ] || { echo "$out" >&2; die "redis-benchmark reported $lines of $NTESTS tests"; }
cmds=$(redis-cli -h 127.0.0.1 -p "$port" info stats | sed -n 's/^total_commands_processed:\([0-9]*\).*/\1/p')
[ "${cmds:-0}" -ge $((NTESTS * n)) ] || die "the server processed ${cmds:-no} commands of $((NTESTS * n))"
keys=$(redis-cli -h 127.0.0.1 -p "$port" dbsize)
[ "${keys:-0}" -gt 0 ] || die "the server holds no keys after the SETs"
awk -v n=$((NTESTS * n)) -v s="$start" -v e="$end" -v k="$keys" -v c="$cpu_ticks" -v hz="$(getconf CLK_TCK)" -v m="$hwm_kb" \
    'BEGIN {printf "RESULT workload=redis requests=%d keys=%d secs=%.6f throughput=%.2f unit=requests/s server_cpu_s=%.2f server_hwm_kb=%d\n",
            n, k, e - s, n / (e - s), c / hz, m}'
