#!/usr/bin/env bash
# Checked mode (BOBOX_CHECK=1), in three parts that run beside each other:
#   hardening_checked.sh         the hidden [checked] cases (overflow past the requested size,
#                                wrong free_sized size, trashed block header, realloc) in both
#                                API builds, and real programs give the same output checked as
#                                without the preload
#   hardening_checked_api.sh     the whole API suite under the preload, checked
#   hardening_checked_stress.sh  the stress tests, checked
# (no false alarm: canaries survive every legitimate use). The other two run this script
# with "api" or "stress"; "all" runs the three parts one after another.
source "$(dirname "$0")/../lib/common.sh" || exit 1
part=${1:-cases}
case $part in cases|api|stress|all) ;; *) fail "unknown part '$part' (cases, api, stress, all)" ;; esac
need_lib
need_prog alloc_containers
T=$BUILD/test
for b in unit_api preload_api unit_stress; do
    [ -x "$T/$b" ] || fail "$T/$b is missing (make test builds it)"
done
export BOBOX_CHECK=1
runs() { [ "$part" = all ] || [ "$part" = "$1" ]; }

catch_ok() { # name, min test cases, command...
    local name=$1 min=$2; shift 2
    note "$name"
    # Below run-tests.sh's 600 s: the API suite takes 2 to 4 minutes checked beside other tests.
    timeout --kill-after=5 540 "$@" --durations no >"$TMP/$name.log" 2>&1
    local rc=$? line
    line=$(grep -E '^All tests passed \(' "$TMP/$name.log" | tail -1)
    if [ $rc -ne 0 ] || [ -z "$line" ]; then tail -30 "$TMP/$name.log"; fail "$name failed under BOBOX_CHECK=1 (rc $rc)"; fi
    local n; n=$(sed -E 's/.* in ([0-9]+) test case.*/\1/' <<<"$line")
    [ "$n" -ge "$min" ] || fail "$name ran only $n test cases (expected at least $min)"
    echo "$name: $line"
}
if runs api; then
    catch_ok api-suite-checked 40 env LD_PRELOAD="$SO" "$T/preload_api"
fi
if runs stress; then
    catch_ok stress-checked 5 "$T/unit_stress"
fi
if ! runs cases; then echo "PASS"; exit 0; fi

catch_ok checked-static 3 "$T/unit_api" "[checked]"
catch_ok checked-preload 3 env LD_PRELOAD="$SO" "$T/preload_api" "[checked]"

note "real programs, checked"
run_plain "$TMP/plain.out" "$TMP/plain.err" "$PROGS/alloc_containers"
run_preload "$TMP/checked.out" "$TMP/checked.err" "$PROGS/alloc_containers"
same_output "$TMP/plain.out" "$TMP/checked.out" "alloc_containers output (checked)"
PY=$(command -v /usr/bin/python3 python3 | head -1)
if [ -n "$PY" ]; then
    cat >"$TMP/work.py" <<'PYEOF'
import json, random, threading, collections
random.seed(7)
docs = [{"id": i, "tags": [random.choice("abcdefgh") * random.randint(1, 40) for _ in range(8)],
         "vals": [random.random() for _ in range(16)]} for i in range(20000)]
text = json.dumps(docs)
back = json.loads(text)
counts = collections.Counter(t for d in back for t in d["tags"])
out = []
def work(k):
    out.append(sum(len(json.dumps(d)) for d in back[k::4]))
threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
for t in threads: t.start()
for t in threads: t.join()
print(len(text), sorted(counts.items())[:5], sorted(out))
PYEOF
    run_plain "$TMP/py.plain" "$TMP/py.plain.err" "$PY" "$TMP/work.py"
    run_preload "$TMP/py.checked" "$TMP/py.checked.err" "$PY" "$TMP/work.py"
    same_output "$TMP/py.plain" "$TMP/py.checked" "python3 output (checked)"
fi
"$PROGS/alloc_gen_lines" 20000000 3 >"$TMP/lines.txt" 2>/dev/null || fail "line generator failed"
LC_ALL=C run_plain "$TMP/sort.plain" "$TMP/sort.err" sort -S 4M --parallel=2 -T "$TMP" "$TMP/lines.txt"
LC_ALL=C run_preload "$TMP/sort.checked" "$TMP/sort.err" sort -S 4M --parallel=2 -T "$TMP" "$TMP/lines.txt"
same_output "$TMP/sort.plain" "$TMP/sort.checked" "sort output (checked)"
echo "PASS"
