#!/usr/bin/env bash
# test: slow=6
# Real program: Debian's redis-server, linked with jemalloc, under LD_PRELOAD=libbobox.so.
# Redis asks its allocator for its figures through mallctl; the preload answers them (ctl.c):
#  - mallctl resolves to libbobox.so, not libjemalloc.so.2 (MEMORY MALLOC-STATS says bobox);
#  - with 200k keys, INFO memory's allocator_allocated agrees with Redis's own count of what
#    it allocated (used_memory) and with bobox's (bobox.stats.in_use), and allocated <= active
#    <= resident <= the process's RSS;
#  - after the keys are deleted (which, unlike FLUSHALL, purges nothing itself), MEMORY PURGE
#    gives memory back: the process's RSS and allocator_resident drop by 20 MB or more. A long
#    BOBOX_DECAY_MS keeps the freed memory cached until then.
# Skips only where redis-server is not installed (scripts/deps.sh installs it).
source "$(dirname "$0")/../lib/common.sh" || exit 1
need_lib
command -v redis-server >/dev/null || skip "redis-server is not installed (scripts/deps.sh installs it)"
need_cmd redis-cli ldd
ldd "$(command -v redis-server)" | grep -q libjemalloc ||
    skip "this redis-server is not linked with jemalloc: it calls no mallctl"

SOCK=$TMP/redis.sock
pid=
stop() { [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; pid=; }
trap 'stop; rm -rf "$TMP"' EXIT
BOBOX_DECAY_MS=60000 LD_PRELOAD=$SO redis-server --port 0 --unixsocket "$SOCK" --save '' --appendonly no \
    --enable-debug-command local --dir "$TMP" >"$TMP/redis.log" 2>&1 &
pid=$!
R() { timeout 60 redis-cli -s "$SOCK" "$@"; }
for _ in $(seq 100); do [ -S "$SOCK" ] && R ping 2>/dev/null | grep -q PONG && break; sleep 0.1; done
R ping | grep -q PONG || { tail "$TMP/redis.log"; fail "redis-server did not start under the preload"; }
grep -q libbobox "/proc/$pid/maps" || fail "redis-server did not map libbobox.so"

R memory malloc-stats >"$TMP/mstats" || fail "MEMORY MALLOC-STATS"
grep -q "answered by bobox" "$TMP/mstats" || { head -3 "$TMP/mstats"; fail "malloc_stats_print is jemalloc's, not bobox's"; }

field() { tr -d '\r' <"$TMP/info" | sed -n "s/^$1://p"; }
info() { sleep 0.5; R info memory >"$TMP/info" || fail "INFO memory"; } # Redis refreshes them every 100 ms
rss() { awk '/^VmRSS:/ {print $2 * 1024}' "/proc/$pid/status"; }

[ "$(R debug populate 200000 key 200)" = OK ] || fail "DEBUG POPULATE"
info
used=$(field used_memory) allocated=$(field allocator_allocated) active=$(field allocator_active)
resident=$(field allocator_resident) rss_redis=$(field used_memory_rss)
in_use=$(R debug mallctl bobox.stats.in_use)
echo "200k keys: used_memory $used, allocator_allocated $allocated, active $active, resident $resident," \
    "rss $rss_redis; bobox in use $in_use"
for v in used allocated active resident rss_redis in_use; do
    [[ ${!v} =~ ^[0-9]+$ ]] || fail "$v is not a number: '${!v}'"
done
((used > 40000000)) || fail "used_memory $used: the keys were not loaded"
((allocated >= used && allocated <= used * 11 / 10 + 2000000)) ||
    fail "allocator_allocated $allocated does not agree with Redis's used_memory $used"
((in_use * 100 >= allocated * 95 && in_use * 100 <= allocated * 105)) ||
    fail "allocator_allocated $allocated does not agree with bobox's in use $in_use"
((allocated <= active && active <= resident && resident <= rss_redis)) ||
    fail "not allocated <= active <= resident <= rss: $allocated $active $resident $rss_redis"

R eval "for i=0,199999 do redis.call('del','key:'..i) end" 0 >/dev/null || fail "deleting the keys"
info
before_rss=$(rss) before_resident=$(field allocator_resident)
[ "$(R memory purge)" = OK ] || fail "MEMORY PURGE"
info
after_rss=$(rss) after_resident=$(field allocator_resident)
echo "MEMORY PURGE: rss $before_rss -> $after_rss, allocator_resident $before_resident -> $after_resident"
((before_rss - after_rss >= 20000000)) || fail "MEMORY PURGE gave back less than 20 MB of RSS"
((before_resident - after_resident >= 20000000)) || fail "allocator_resident did not drop by 20 MB"

[ "$(R shutdown nosave 2>&1)" = "" ] || true
wait "$pid"; rc=$?; pid=
((rc == 0)) || { tail "$TMP/redis.log"; fail "redis-server exited with $rc"; }
grep -E "bobox: |Segmentation|signal" "$TMP/redis.log" && fail "the server log reports the above"
echo "PASS"
