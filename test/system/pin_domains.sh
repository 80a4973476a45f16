#!/usr/bin/env bash
# bobox-run's likwid and OpenMP conventions on saved trees: --topology lists the tree and the
# domains with their CPUs in index order; --pin=DOMAIN:INDICES, OpenMP place names and --cores=p
# shape the plan, and the shim applies the same order (dry run) and binds threads to whole
# places (on this machine); bad values are refused with a clear message.
source "$(dirname "$0")/../lib/pin.sh" || exit 1
need "$PROGS/pin_threads"
P=$PROGS/pin_threads

topo=$(BOBOX_FSROOT=$FIX/2s2n-snc-ht "$RUN" --topology) || fail "--topology failed"
for want in "^32 CPUs online \(0-31\), 16 cores, 2 packages, 4 NUMA nodes$" "^allowed: 0-31$" \
            "^package 1, node 3, L3 of CPU 8:$" "^  core +4  CPUs 4 20  L2 of CPU 4  kind -$" \
            "^  S1    8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31$" "^  M2    8 9 10 11 24 25 26 27$" \
            "^  N     0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16"; do
    grep -qE "$want" <<<"$topo" || fail "--topology: no line $want in:"$'\n'"$topo"
done
grep -q "kind E" <(BOBOX_FSROOT=$FIX/hybrid "$RUN" --topology) || fail "--topology shows no E-core on hybrid"

export BOBOX_FSROOT=$FIX/2s2n-snc-ht
[ "$(plan_cpus 5 --pin=S0:0-1@S1:0@M3:4-5)" = "0 1 8 28 29" ] || fail "domain plan: $(plan_cpus 5 --pin=S0:0-1@S1:0@M3:4-5)"
[ "$(plan_cpus 2 --pin=N1:0-1)" = "4 5" ] || fail "N1 = NUMA node 1: $(plan_cpus 2 --pin=N1:0-1)"
# the shim applies the same order
BOBOX_PIN=S1:0-1@S0:8 BOBOX_PIN_DRYRUN=1 LD_PRELOAD=$PIN "$P" 2 >/dev/null 2>"$TMP/err" || fail "did not run"
got=$(sed -nE 's/^bobox-pin: thread=([0-9]+) tid=[0-9]+ cpu=([0-9]+) .*/\1:\2/p' "$TMP/err" | tr '\n' ' ')
[ "$got" = "0:8 1:9 2:16 " ] || fail "shim order $got: $(cat "$TMP/err")"

export BOBOX_FSROOT=$FIX/hybrid
[ "$(plan_cpus 6 --cores=p)" = "0 2 4 6 1 3" ] || fail "--cores=p: $(plan_cpus 6 --cores=p)"
[ "$(BOBOX_PIN_CORES=p plan_cpus 5)" = "0 2 4 6 1" ] || fail "BOBOX_PIN_CORES=p: $(BOBOX_PIN_CORES=p plan_cpus 5)"
BOBOX_PIN_CORES=p BOBOX_PIN_DRYRUN=1 LD_PRELOAD=$PIN "$P" 4 >/dev/null 2>"$TMP/err" || fail "did not run"
grep -qE '^bobox-pin: thread=4 tid=[0-9]+ cpu=1 ' "$TMP/err" || fail "shim with BOBOX_PIN_CORES=p: $(cat "$TMP/err")"
# a bad BOBOX_PIN_CORES: said once, all cores used
BOBOX_PIN_CORES=x BOBOX_PIN_DRYRUN=1 LD_PRELOAD=$PIN "$P" 4 >/dev/null 2>"$TMP/err" || fail "did not run"
[ "$(grep -c 'BOBOX_PIN_CORES=x: expected p' "$TMP/err")" -eq 1 ] || fail "bad BOBOX_PIN_CORES: $(cat "$TMP/err")"
grep -qE '^bobox-pin: thread=4 tid=[0-9]+ cpu=8 ' "$TMP/err" || fail "bad BOBOX_PIN_CORES did not fall back to all"

# OpenMP place names: one thread per place, bound to all of it
export BOBOX_FSROOT=$FIX/2s2n-epyc-nps2
plan=$("$RUN" --pin=ll_caches --plan 3)
grep -qE '^     1     8 .* 8-9,24-25$' <<<"$plan" || fail "ll_caches plan: $plan"
BOBOX_PIN=ll_caches BOBOX_PIN_DRYRUN=1 LD_PRELOAD=$PIN "$P" 2 >/dev/null 2>"$TMP/err" || fail "did not run"
grep -qE '^bobox-pin: thread=2 tid=[0-9]+ cpu=4 core=4 package=0 node=1 cpus=4-5,20-21$' "$TMP/err" ||
    fail "shim with ll_caches: $(cat "$TMP/err")"
BOBOX_PIN=numa_domains BOBOX_PIN_DRYRUN=1 LD_PRELOAD=$PIN "$P" 1 >/dev/null 2>"$TMP/err" || fail "did not run"
grep -qE '^bobox-pin: thread=1 tid=[0-9]+ cpu=8 .* cpus=8-11,24-27$' "$TMP/err" || fail "numa_domains: $(cat "$TMP/err")"
unset BOBOX_FSROOT
# here: a core place is its one CPU (no HT on a CI runner: then two), a node place all allowed CPUs
out=$(BOBOX_PIN=numa_domains LD_PRELOAD=$PIN taskset -c 0 "$P" 2) || fail "did not run"
[ "$(grep -c 'allowed=0$' <<<"$out")" -eq 3 ] || fail "numa_domains under taskset -c 0: $out"
if [ "$NCPU" -ge 2 ]; then
    out=$(BOBOX_PIN=numa_domains LD_PRELOAD=$PIN "$P" 2) || fail "did not run"
    [ "$(grep -c "allowed=$ALLOWED\$" <<<"$out")" -eq 3 ] || fail "numa_domains: not bound to the whole node: $out"
    out=$(BOBOX_PIN=cores LD_PRELOAD=$PIN "$P" 1) || fail "did not run"
    want=$(BOBOX_PIN=cores "$RUN" --pin=cores --plan 2 | awk 'NR > 2 { print $NF }' | tr '\n' ' ')
    got=$(sed -nE 's/.* allowed=([^ ]*)$/\1/p' <<<"$out" | tr '\n' ' ')
    [ "$got" = "$want" ] || fail "cores: threads bound to $got, the plan says $want"
fi
[ "$("$RUN" --pin=cores -- sh -c 'echo $OMP_PLACES')" = "$("$RUN" --pin=cores --plan $NCPU | awk 'NR > 2 { printf "%s{%s}", (NR > 3 ? "," : ""), $NF }')" ] ||
    fail "OMP_PLACES for cores: $("$RUN" --pin=cores -- sh -c 'echo $OMP_PLACES')"

for bad in --pin=S0: --pin=S0:1- --pin=X1:0 --pin=S0:0@ --pin=numa --cores=e; do
    "$RUN" "$bad" --plan 2 >"$TMP/out" 2>&1; rc=$?
    [ $rc -eq 2 ] && grep -q "^bobox-run: BOBOX_PIN" "$TMP/out" || fail "$bad: rc=$rc $(cat "$TMP/out")"
done
echo "ok"
