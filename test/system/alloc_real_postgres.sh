#!/usr/bin/env bash
# test: slow=37
# Real program: the PostgreSQL server, a database that forks a process per connection and
# per parallel worker. One cluster is made by initdb under LD_PRELOAD=libbobox.so, then the
# server runs three times on it: without the preload, with it, and with it in checked mode
# (BOBOX_CHECK=1). Each run loads a table of 200k rows into a fresh database and runs the
# same SQL (sorts in memory and on disk, hash joins and aggregates, window functions, jsonb,
# regexes, updates, deletes and vacuum, a parallel scan, PL/pgSQL with caught exceptions, a
# recursive CTE, one 48 MB value); the three outputs must be identical. Under the preload
# the postmaster and the backend running the queries must map libbobox.so, and pgbench's
# TPC-B-like transactions from 4 clients must fail none and leave the balances consistent.
# The server log must report no crash and no bobox message. The server runs as the user
# `postgres` when the test runs as root (PostgreSQL refuses root).
source "$(dirname "$0")/../lib/common.sh" || exit 1
need_lib
PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
for p in initdb pg_ctl postgres psql pgbench; do
    [ -n "$PGBIN" ] && [ -x "$PGBIN/$p" ] ||
        { echo "PostgreSQL not installed (scripts/deps.sh installs postgresql): no $p"; exit 77; }
done
AS=()
if [ "$(id -u)" -eq 0 ]; then
    id postgres >/dev/null 2>&1 || fail "running as root and there is no user postgres to run the server"
    AS=(runuser -u postgres --)
fi
export LC_ALL=C TZ=UTC PGTZ=UTC
unset PGDATA PGHOST PGPORT PGDATABASE PGUSER PGOPTIONS PGSERVICE PSQLRC

# The server's user must reach the library and the cluster: both live in TMP.
chmod 755 "$TMP"
LIB=$TMP/libbobox.so
cp "$SO" "$LIB" && chmod 755 "$LIB" || fail "copy $SO"
DATA=$TMP/data SOCK=$TMP/sock PORT=$((20000 + $$ % 20000))
mkdir -p "$SOCK" && chmod 1777 "$SOCK"
[ ${#AS[@]} -eq 0 ] || chown postgres "$TMP" || fail "chown $TMP"

server_up=0
stop_server() { # mode
    [ $server_up = 1 ] || return 0
    "${AS[@]}" "$PGBIN/pg_ctl" -D "$DATA" -m "$1" -w -t 60 stop >/dev/null 2>&1
    server_up=0
}
trap 'stop_server immediate; rm -rf "$TMP"' EXIT

start_server() { # log, env assignments...
    local log=$1; shift
    "${AS[@]}" env "$@" "$PGBIN/pg_ctl" -D "$DATA" -w -t 60 -l "$log" \
        -o "-k $SOCK -p $PORT -c listen_addresses= -c fsync=off -c max_parallel_workers_per_gather=2" \
        start >/dev/null || { tail -20 "$log"; fail "the server did not start ($*)"; }
    server_up=1
}
sql() { # database, psql arguments... (the client runs without the preload)
    local db=$1; shift
    timeout --kill-after=5 "$CMD_TIMEOUT" "$PGBIN/psql" -X -q -A -t -v ON_ERROR_STOP=1 \
        -h "$SOCK" -p "$PORT" -U postgres -d "$db" "$@"
}
check_log() { # log, what
    if grep -nE "bobox: |terminated by signal|PANIC|was terminated|server process .* exited" "$1" | head -5 | grep .; then
        fail "the server log of the $2 run reports the above"
    fi
}

cat >"$TMP/work.sql" <<'SQL'
set work_mem = '64MB';
-- Whether the plan (or, with analyze, the run) of a query shows `what`.
create function plan_shows(options text, query text, what text) returns bool language plpgsql as $$
declare line text;
begin
    for line in execute 'explain (' || options || ') ' || query loop
        if line like '%' || what || '%' then return true; end if;
    end loop;
    return false;
end $$;
create table items as
    select g as id, md5(g::text) as h, repeat(chr(65 + g % 26), g % 200) as pad, (g * 7919) % 1000 as grp
    from generate_series(1, 200000) g;
create index on items (h);
create index on items (grp, id);
analyze items;
select 'load', count(*), sum(length(pad)), md5(string_agg(h, ',' order by h)) from items;
select 'groups', grp, count(*), sum(id) from items group by grp order by grp limit 3;
select 'window', md5(string_agg(r::text, ',' order by id)) from (select id, rank() over (partition by grp order by h) r from items) s;
select 'join', count(*), sum(a.id - b.id) from items a join items b on a.h = b.h;
select 'hashagg', count(*) from (select substr(h, 1, 5) k, count(*) from items group by 1) s;
select 'jsonb', md5(jsonb_agg(jsonb_build_object('id', id, 'h', h, 'a', array[grp, id]) order by id)::text) from items where id % 10 = 0;
select 'regex', md5(string_agg(regexp_replace(h, '[0-9]+', '#', 'g'), '' order by id)) from items where id < 50000;
update items set pad = pad || pad where id % 3 = 0;
delete from items where id % 5 = 0;
vacuum items;
select 'updated', count(*), sum(length(pad)) from items;
set work_mem = '1MB';
select 'sort spills', plan_shows('analyze, costs off', 'select h from items order by pad, h', 'external merge');
select 'external sort', md5(string_agg(h, '' order by pad, h)) from items;
reset work_mem;
set parallel_setup_cost = 0; set parallel_tuple_cost = 0; set min_parallel_table_scan_size = 0;
select 'parallel plan', plan_shows('costs off', 'select count(*) from items where pad like ''%A%''', 'Gather');
select 'parallel', count(*), sum(length(h)) from items where pad like '%A%';
reset parallel_setup_cost; reset parallel_tuple_cost; reset min_parallel_table_scan_size;
create function safe_div(a int, b int) returns int language plpgsql as $$
begin
    return a / b;
exception when division_by_zero then
    return -1;
end $$;
select 'plpgsql', sum(safe_div(id, grp % 7)) from items where id < 20000;
with recursive r(n, s) as (select 1, ''::text union all select n + 1, s || n::text from r where n < 3000)
select 'recursive', count(*), length(max(s)) from r;
select 'big value', length(v), md5(v) from (select repeat('bobox', 10 * 1024 * 1024) v) s;
SQL
chmod 644 "$TMP/work.sql"

note "initdb under the preload ($("$PGBIN/postgres" --version))"
timeout --kill-after=5 "$CMD_TIMEOUT" "${AS[@]}" env LD_PRELOAD="$LIB" \
    "$PGBIN/initdb" -D "$DATA" -A trust -U postgres -E UTF8 --no-locale >"$TMP/initdb.log" 2>&1 ||
    { tail -20 "$TMP/initdb.log"; fail "initdb under the preload failed"; }
grep -q "bobox: " "$TMP/initdb.log" && { grep "bobox: " "$TMP/initdb.log" | head -3; fail "initdb printed a bobox message"; }

run_case() { # name, env assignments for the server...
    local name=$1; shift
    note "server $name: SQL workload"
    start_server "$TMP/$name.log" "$@"
    sql postgres -c "create database w_$name" >/dev/null || fail "create database ($name)"
    sql "w_$name" -f "$TMP/work.sql" >"$TMP/$name.out" 2>"$TMP/$name.err" ||
        { tail -5 "$TMP/$name.err"; tail -10 "$TMP/$name.log"; fail "the SQL workload failed ($name)"; }
}

run_case plain PGAPPNAME=plain
stop_server fast
check_log "$TMP/plain.log" plain

run_case bobox LD_PRELOAD="$LIB"
pid=$(head -1 "$DATA/postmaster.pid")
grep -q libbobox "/proc/$pid/maps" || fail "the postmaster (pid $pid) does not map libbobox.so"
mapped=$(sql postgres -c "select count(*) from regexp_split_to_table(pg_read_file('/proc/self/maps'), E'\n') l where l like '%libbobox%'")
[ "${mapped:-0}" -gt 0 ] || fail "the backend does not map libbobox.so"
same_output "$TMP/plain.out" "$TMP/bobox.out" "SQL output"
note "pgbench under the preload: 4 clients, 300 transactions each"
timeout "$CMD_TIMEOUT" "$PGBIN/pgbench" -h "$SOCK" -p "$PORT" -U postgres -i -s 2 -q w_bobox >"$TMP/pgbench-init.log" 2>&1 ||
    { tail -5 "$TMP/pgbench-init.log"; fail "pgbench -i failed"; }
timeout "$CMD_TIMEOUT" "$PGBIN/pgbench" -h "$SOCK" -p "$PORT" -U postgres -n -c 4 -j 2 -t 300 w_bobox >"$TMP/pgbench.log" 2>&1 ||
    { tail -5 "$TMP/pgbench.log"; fail "pgbench failed"; }
grep -E "^(number of transactions actually processed|number of failed transactions|tps)" "$TMP/pgbench.log"
grep -q "^number of transactions actually processed: 1200/1200" "$TMP/pgbench.log" || fail "pgbench did not process 1200 transactions"
# Each transaction adds the same delta to one account, teller and branch and logs it once.
sums=$(sql w_bobox -F ' ' -c "select (select count(*) from pgbench_history), (select sum(delta) from pgbench_history),
    (select sum(abalance) from pgbench_accounts), (select sum(tbalance) from pgbench_tellers),
    (select sum(bbalance) from pgbench_branches)")
echo "history rows, sum of deltas, of account, teller and branch balances: $sums"
read -r n d a t b <<<"$sums"
[ "$n" = 1200 ] && [ "$d" = "$a" ] && [ "$d" = "$t" ] && [ "$d" = "$b" ] || fail "pgbench left inconsistent balances"
stop_server fast
check_log "$TMP/bobox.log" preload

run_case checked LD_PRELOAD="$LIB" BOBOX_CHECK=1
stop_server fast
check_log "$TMP/checked.log" checked
same_output "$TMP/plain.out" "$TMP/checked.out" "SQL output in checked mode"
for want in "sort spills|t" "parallel plan|t"; do
    grep -qx "$want" "$TMP/plain.out" || fail "the workload did not exercise what it means to: no '$want' in its output"
done
cat "$TMP/plain.out"
echo "PASS"
