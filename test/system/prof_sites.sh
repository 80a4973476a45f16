#!/usr/bin/env bash
# The heap profiler (BOBOX_PROF): prof_sites keeps 24, 12 and 6 MB live from three call sites
# and 4 MB from one calloc, allocates and frees 16 MB at a fifth site and leaks 3 MB at a sixth.
# google-pprof --text must read the exit profile and name each live site with its megabytes
# within the sampling error (rate 16 KB: the 3 MB leak is about 190 samples, 7% standard
# error; 25% allowed), the leak by the function that leaked it, and not the freed site;
# --alloc_space must show the freed site too. Also: the profile at the default rate reads,
# bobox_prof_dump writes where it is asked, a dump signal and peak dumps leave numbered
# profiles, the folded stacks add up, bad settings are reported once, and the program's
# output is unchanged. About 2 seconds.
source "$(dirname "$0")/../lib/common.sh" || exit 1
need_lib
need_prog prof_sites
command -v google-pprof >/dev/null || fail "google-pprof missing (scripts/deps.sh installs google-perftools)"
P=$PROGS/prof_sites

run_prof() { # prefix, extra env..., then the program's arguments after --
    local prefix=$1; shift
    local envs=()
    while [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    timeout 60 env "${envs[@]}" BOBOX_PROF="$prefix" LD_PRELOAD="$SO" "$P" "$@"
}

note "exit profile at 16 KB"
out=$(run_prof "$TMP/s" BOBOX_PROF_RATE=16384 -- "$TMP/mid.heap") || fail "prof_sites failed under BOBOX_PROF"
[ "$out" = 6 ] || fail "output changed under BOBOX_PROF: $out"
heap=$(ls "$TMP"/s.*.heap)
[ "$(wc -l <<<"$heap")" = 1 ] || fail "expected one exit profile PREFIX.PID.heap, got: $heap"
[[ "$heap" =~ /s\.[0-9]+\.heap$ ]] || fail "exit profile not named PREFIX.PID.heap: $heap"
google-pprof --text "$P" "$heap" >"$TMP/text" 2>"$TMP/text.err" || { cat "$TMP/text.err"; fail "google-pprof cannot read $heap"; }
cat "$TMP/text"
mb() { awk -v f="$1" '$NF == f { print $1 }' "$TMP/text" | head -1; }
near() { # function, expected MB
    local got; got=$(mb "$1")
    [ -n "$got" ] || fail "the profile does not name $1"
    awk -v g="$got" -v w="$2" 'BEGIN { exit !(g >= w * 0.75 && g <= w * 1.25) }' ||
        fail "$1 holds $got MB in the profile, expected $2 MB (within 25%)"
}
near site_small 24
near site_medium 12
near site_large 6
near leak_some 3
near site_calloc 4
[ -z "$(mb site_transient)" ] || [ "$(awk -v g="$(mb site_transient)" 'BEGIN { print (g < 0.5) }')" = 1 ] ||
    fail "site_transient freed everything but holds $(mb site_transient) MB in the live profile"
google-pprof --text --alloc_space "$P" "$heap" >"$TMP/alloc" 2>/dev/null || fail "google-pprof --alloc_space"
got=$(awk '$NF == "site_transient" { print $1 }' "$TMP/alloc" | head -1)
awk -v g="${got:-0}" 'BEGIN { exit !(g >= 12 && g <= 20) }' || fail "site_transient allocated ${got:-no} MB, expected 16"

note "bobox_prof_dump and the folded stacks"
[ -s "$TMP/mid.heap" ] || fail "bobox_prof_dump did not write its path"
google-pprof --text "$P" "$TMP/mid.heap" 2>/dev/null | grep -q "site_medium" ||
    fail "the profile bobox_prof_dump wrote does not show site_medium"
folded=$heap.folded
[ -s "$folded" ] || fail "no folded stacks beside $heap"
total=$(awk '{ s += $NF } END { printf "%d", s / 1048576 }' "$folded")
[ "$total" -ge 34 ] && [ "$total" -le 61 ] || fail "folded stacks add up to $total MB, expected about 49"
grep -q '__libc_start_main' "$folded" || fail "folded stacks lack the outer frames: $(head -2 "$folded")"

note "default rate, signal and peak dumps"
out=$(run_prof "$TMP/d" BOBOX_PROF_PEAK_MB=8 BOBOX_PROF_SIGNAL=0 --) || fail "prof_sites at the default rate"
[ "$out" = 6 ] || fail "output changed: $out"
google-pprof --text "$P" "$TMP"/d.*[0-9].heap 2>/dev/null | grep -q "site_small" || fail "default-rate profile lacks site_small"
npeak=$(ls "$TMP"/d.*.[0-9][0-9][0-9][0-9].heap 2>/dev/null | wc -l)
[ "$npeak" -ge 3 ] || fail "BOBOX_PROF_PEAK_MB=8 with a 45 MB peak left $npeak numbered profiles (expected at least 3)"
# The signal: a shell that sends it to itself through the preload.
BOBOX_PROF="$TMP/g" BOBOX_PROF_SIGNAL=12 LD_PRELOAD="$SO" timeout 30 sh -c 'kill -12 $$; echo sent' >"$TMP/sig.out" ||
    fail "the dump signal killed the process"
[ "$(cat "$TMP/sig.out")" = sent ] || fail "output changed under the dump signal"
ls "$TMP"/g.*.0000.heap >/dev/null 2>&1 || fail "BOBOX_PROF_SIGNAL=12 left no PREFIX.PID.0000.heap"
head -1 "$TMP"/g.*.0000.heap | grep -q '^heap profile: ' || fail "the signal's profile has no header"

note "bad settings"
err=$(BOBOX_PROF="$TMP/b" BOBOX_PROF_RATE=fast BOBOX_PROF_SIGNAL=9 BOBOX_PROF_PEAK_MB=-1 BOBOX_VERBOSE=1 LD_PRELOAD="$SO" /bin/true 2>&1)
for v in BOBOX_PROF_RATE=fast BOBOX_PROF_SIGNAL=9 BOBOX_PROF_PEAK_MB=-1; do
    [ "$(grep -c "ignoring $v" <<<"$err")" = 1 ] || fail "bad $v not reported once: $err"
done
grep -q "BOBOX_PROF_RATE=524288 BOBOX_PROF_SIGNAL=0 BOBOX_PROF_PEAK_MB=0" <<<"$err" || fail "defaults not used: $err"
echo "prof_sites: ok"
