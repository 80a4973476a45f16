#!/usr/bin/env bash
# The postgres workload of scripts/bench/bench.sh: a PostgreSQL server under the allocator named by
# LD_PRELOAD (the server only: pgbench, the client, runs without it) serving 4 clients a mix
# of pgbench's TPC-B-like transactions (5 in 6) and reports (1 in 6: grouped sorts, string
# and jsonb aggregates over a 100k-row table), on a fresh copy of a template cluster.
#   pgbench.sh --setup DIR   makes the template in DIR/template (initdb, pgbench -i -s 2, the table)
#   pgbench.sh DIR TX        runs TX transactions per client on a copy in DIR/run
# Prints RESULT workload=postgres ... unit=tx/s. Fails when the server does not map the
# preloaded libraries. As root, the server runs as the user postgres (PostgreSQL refuses root);
# DIR must be reachable by that user.
set -euo pipefail
PRELOAD=${LD_PRELOAD:-}
unset LD_PRELOAD PGDATA PGHOST PGPORT PGDATABASE PGUSER PGOPTIONS PGSERVICE PSQLRC
export LC_ALL=C
PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -n "$PGBIN" ] && [ -x "$PGBIN/postgres" ] && [ -x "$PGBIN/pgbench" ] || { echo "pgbench.sh: PostgreSQL is not installed" >&2; exit 2; }
AS=()
[ "$(id -u)" -eq 0 ] && AS=(runuser -u postgres --)
PORT=5432
die() { echo "pgbench.sh: $*" >&2; exit 1; }

server() { # data-dir log start|stop: the template's server, daemonized by pg_ctl
    if [ "$3" = start ]; then
        "${AS[@]}" "$PGBIN/pg_ctl" -D "$1" -l "$2" -w -t 60 -o "-k $1 -p $PORT -c listen_addresses=" start >/dev/null
    else
        "${AS[@]}" "$PGBIN/pg_ctl" -D "$1" -w -t 60 -m fast stop >/dev/null
    fi
}

if [ "${1:-}" = --setup ]; then
    dir=${2:?usage: pgbench.sh --setup DIR}
    t=$dir/template
    rm -rf "$t"
    "${AS[@]}" "$PGBIN/initdb" -D "$t" -A trust -U postgres -E UTF8 --no-locale >/dev/null || die "initdb failed"
    server "$t" "$dir/setup.log" start || die "the template server did not start"
    sql() { "$PGBIN/psql" -X -q -h "$t" -p $PORT -U postgres -d postgres -c "$1" >/dev/null; }
    "$PGBIN/pgbench" -h "$t" -p $PORT -U postgres -i -s 2 -q postgres >/dev/null 2>&1 || die "pgbench -i failed"
    sql "create table docs as select g id, (g * 7919) % 500 grp, md5(g::text) h,
         jsonb_build_object('k', g, 'tags', array[g % 7, g % 11], 'name', md5((g * 3)::text)) j
         from generate_series(1, 100000) g"
    sql "create index on docs (grp)"
    sql "vacuum analyze"
    sql "checkpoint"
    server "$t" "$dir/setup.log" stop
    cat >"$dir/report.sql" <<'SQL'
\set g random(0, 499)
select grp, count(*), md5(string_agg(h, ',' order by h)) from docs where grp between :g and :g + 20 group by grp order by 2 desc, 1 limit 5;
select jsonb_agg(j order by id) from docs where grp = :g;
select j->>'name' n, count(*) from docs where grp in (:g, (:g + 250) % 500) group by 1 order by 1 limit 10;
SQL
    chmod 644 "$dir/report.sql"
    exit 0
fi

dir=${1:?usage: pgbench.sh DIR TX}
tx=${2:?usage: pgbench.sh DIR TX}
[ -d "$dir/template" ] || die "no template in $dir (run --setup first)"
run=$dir/run
rm -rf "$run"
cp -a "$dir/template" "$run"
# The server's user may not reach the libraries where they are: copies beside the cluster.
libs=() copies=
for l in ${PRELOAD//:/ }; do
    c=$dir/lib-$(basename "$l")
    cp "$l" "$c" && chmod 755 "$c"
    libs+=("$(basename "$l")")
    copies="$copies${copies:+ }$c"
done
# The server runs as a child of this script, not daemonized by pg_ctl, so that the harness's
# resource usage (peak RSS, CPU times) counts the postmaster and the backends it reaped. It
# stops at once (no shutdown checkpoint: its time varied by a second between runs, and the
# copy is thrown away).
srv=
stop_run() {
    [ -n "$srv" ] || return 0
    "${AS[@]}" "$PGBIN/pg_ctl" -D "$run" -w -t 60 -m immediate stop >/dev/null 2>&1 || kill "$srv" 2>/dev/null
    wait "$srv" 2>/dev/null || true
    srv=
}
trap stop_run EXIT
"${AS[@]}" env ${copies:+LD_PRELOAD="$copies"} "$PGBIN/postgres" -D "$run" -k "$run" -p $PORT -c listen_addresses= \
    -c fsync=off -c synchronous_commit=off >"$dir/run.log" 2>&1 &
srv=$!
for _ in $(seq 600); do
    "$PGBIN/pg_isready" -q -h "$run" -p $PORT && break
    kill -0 "$srv" 2>/dev/null || die "the server did not start (log: $dir/run.log)"
    sleep 0.05
done
"$PGBIN/pg_isready" -q -h "$run" -p $PORT || die "the server is not ready after 30 s (log: $dir/run.log)"
pid=$(head -1 "$run/postmaster.pid")
for l in "${libs[@]}"; do
    grep -q "lib-$l" "/proc/$pid/maps" || die "the server does not map $l"
done
start=$(date +%s.%N)
out=$("$PGBIN/pgbench" -h "$run" -p $PORT -U postgres -n -c 4 -j 2 -t "$tx" \
      -b tpcb-like@5 -f "$dir/report.sql@1" postgres 2>&1) || { echo "$out" >&2; die "pgbench failed"; }
end=$(date +%s.%N)
done_tx=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' <<<"$out" | head -1)
[ "$done_tx" = $((4 * tx)) ] || { echo "$out" >&2; die "pgbench processed ${done_tx:-no} transactions of $((4 * tx))"; }
stop_run
awk -v n="$done_tx" -v s="$start" -v e="$end" \
    'BEGIN {printf "RESULT workload=postgres transactions=%d secs=%.6f throughput=%.2f unit=tx/s\n", n, e - s, n / (e - s)}'
