#!/usr/bin/env bash
# Machine-readable statistics: BOBOX_STATS=json writes the exit report as one JSON object that
# validates against docs/stats.schema.json (python3-jsonschema) and counts what prof_sites
# keeps live (393,216 objects of 64 B, 12,582 of 1000 B, 6,144 leaked of 512 B); the profiler's state shows in it;
# bobox_stats_json(fd) gives it on demand and reports a bad descriptor; bobox_prof_dump says
# ENOTSUP with profiling off; BOBOX_STATS=1 stays text. About 3 seconds.
source "$(dirname "$0")/../lib/common.sh" || exit 1
need_lib
need_prog prof_sites
PY=/usr/bin/python3
$PY -c 'import jsonschema' 2>/dev/null || fail "python3-jsonschema missing (scripts/deps.sh installs it)"
SCHEMA=$BOBOX_ROOT/docs/stats.schema.json
[ -f "$SCHEMA" ] || fail "$SCHEMA missing"

check() { # json file, python condition on s (the report) ... : validates, then asserts
    local file=$1; shift
    $PY - "$SCHEMA" "$file" "$@" <<'PYEOF' || fail "JSON report $file: see above"
import json, sys, jsonschema
schema = json.load(open(sys.argv[1]))
jsonschema.Draft202012Validator.check_schema(schema)
text = open(sys.argv[2]).read()
s = json.loads(text)  # exactly one object: json.loads refuses trailing data
jsonschema.validate(s, schema)
classes = {c["size"]: c for c in s["size_ranges"]["small"]["classes"]}
for cond in sys.argv[3:]:
    if not eval(cond):
        print("failed:", cond, "in", json.dumps(s)[:1500]); sys.exit(1)
PYEOF
}

note "BOBOX_STATS=json at exit"
out=$(timeout 60 env BOBOX_STATS=json LD_PRELOAD=$SO "$PROGS/prof_sites" 2>"$TMP/exit.json") || fail "prof_sites under BOBOX_STATS=json"
[ "$out" = 6 ] || fail "output changed: $out"
check "$TMP/exit.json" 's["pid"] > 0' 'classes[64]["live_objects"] >= 393216' \
    'sum(c["live_objects"] for z, c in classes.items() if 1000 <= z <= 1100) >= 12582' \
    's["size_ranges"]["small"]["live_bytes"] >= 36 * 2**20' 's["size_ranges"]["medium"]["live_bytes"] >= 6 * 2**20' \
    's["memory"]["peak_mapped_bytes"] >= s["memory"]["mapped_bytes"] >= 40 * 2**20' \
    'sum(c["live_objects"] for z, c in classes.items() if 512 <= z <= 560) >= 6144' 'len(s["nodes"]) >= 1' 's["heaps"]["live"] >= 1' 's["profiler"]["enabled"] is False' 's["profiler"]["prefix"] is None'

note "with the profiler"
timeout 60 env BOBOX_STATS=json BOBOX_PROF=$TMP/p LD_PRELOAD=$SO "$PROGS/prof_sites" >/dev/null 2>"$TMP/prof.json" || fail "prof_sites under BOBOX_PROF"
check "$TMP/prof.json" 's["profiler"]["enabled"] is True' "s['profiler']['prefix'] == '$TMP/p'" \
    's["profiler"]["rate_bytes"] == 524288' '40 <= s["profiler"]["samples"] <= 200' 's["profiler"]["live_samples"] >= 30'

note "bobox_stats_json on demand; bobox_prof_dump with profiling off"
cat >"$TMP/ondemand.py" <<'PYEOF'
import ctypes, os, sys
lib = ctypes.CDLL(None, use_errno=True)
keep = [bytearray(100) for _ in range(1000)]
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
assert lib.bobox_stats_json(fd) == 0
os.close(fd)
assert lib.bobox_stats_json(9999) == -1 and ctypes.get_errno() == 9, "a bad fd must fail with EBADF"
assert lib.bobox_prof_dump(b"/tmp/never") == -1 and ctypes.get_errno() == 95, "ENOTSUP with profiling off"
assert not os.path.exists("/tmp/never")
print("ok")
PYEOF
out=$(PYTHONMALLOC=malloc LD_PRELOAD=$SO $PY "$TMP/ondemand.py" "$TMP/demand.json" 2>&1) || fail "on demand: $out"
[ "$out" = ok ] || fail "on demand: $out"
check "$TMP/demand.json" 's["size_ranges"]["small"]["allocs"] > 1000'

note "BOBOX_STATS=1 stays text"
BOBOX_STATS=1 LD_PRELOAD=$SO /bin/true 2>"$TMP/text" || fail "BOBOX_STATS=1"
grep -q '^bobox: allocations: small' "$TMP/text" && ! grep -q '{' "$TMP/text" || fail "BOBOX_STATS=1 is not the text report: $(cat "$TMP/text")"
echo "stats_json: ok"
