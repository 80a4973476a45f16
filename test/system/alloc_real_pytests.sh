#!/usr/bin/env bash
# test: slow=155
# Real program: Debian's python3 (/usr/bin/python3, not a pyenv/venv one first in PATH) runs a
# slice of its own regression suite (package libpython3.X-testsuite) with `-m test -j3`, once
# without and once with LD_PRELOAD=libbobox.so (inherited by the regrtest worker processes).
# PYTHONMALLOC=malloc in both runs, so every Python object goes through malloc/free/realloc.
# The per-module results (passed/failed/skipped/crashed...) and the per-test-case results
# (from --junit-xml: ok/skipped/failure/error, about 7,900 cases) must be identical.
# A module whose result differs only by a failed assertion is re-run once in both modes (a
# timing-sensitive test on a loaded machine); a crash, a timeout or a difference that
# reproduces fails the test, naming the module and test cases.
source "$(dirname "$0")/../lib/common.sh" || exit 1
need_lib
PY=/usr/bin/python3
[ -x "$PY" ] || { echo "/usr/bin/python3 not installed (scripts/deps.sh installs it)"; exit 77; }
pyver=$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])') || fail "$PY does not run"
"$PY" -c 'import test.libregrtest, test.test_dict' 2>/dev/null ||
    { echo "libpython$pyver-testsuite not installed (scripts/deps.sh installs it)"; exit 77; }

SLICE=${ALLOC_PYTESTS:-"test_dict test_list test_set test_tuple test_collections test_ordered_dict
 test_deque test_heapq test_sort test_array test_bytes test_unicode test_re test_json test_pickle
 test_marshal test_struct test_memoryview test_long test_decimal test_itertools test_functools
 test_gc test_tracemalloc test_sys test_descr test_enum test_typing test_dataclasses
 test_generators test_coroutines test_codecs test_unicodedata test_hashlib test_zlib test_mmap
 test_ctypes test_thread test_threading test_threading_local test_queue test_fork1"}
JOBS=${ALLOC_PYTESTS_JOBS:-3}
export PYTHONMALLOC=malloc PYTHONHASHSEED=0 PYTHONDONTWRITEBYTECODE=1 LC_ALL=C.UTF-8 TMPDIR=$TMP
unset PYTHONPATH PYTHONHOME PYTHONSTARTUP PYTHONWARNINGS
cd "$TMP" || fail "cd $TMP"

# the preload really answers inside Debian's python (the workers inherit the environment)
LD_PRELOAD=$SO "$PY" -c '
import ctypes, sys
lib = ctypes.CDLL(None)
lib.malloc.restype = ctypes.c_void_p
lib.malloc.argtypes = [ctypes.c_size_t]
lib.bobox_owns.argtypes = [ctypes.c_void_p]
sys.exit(0 if lib.bobox_owns(lib.malloc(100)) == 1 else 1)' ||
    fail "bobox_owns is missing or does not own malloc() results in $PY under LD_PRELOAD"

# summarise OUT XML PREFIX: PREFIX.modules ("test_x passed") and PREFIX.cases ("case status")
summarise() {
    "$PY" - "$@" <<'EOF' || fail "cannot parse the regrtest output $1 / $2"
import re, sys, xml.etree.ElementTree as ET
out, xmlpath, prefix = sys.argv[1:4]
mods = {}
for line in open(out, errors="replace"):
    m = re.search(r"\[ *\d+/\d+(?:/\d+)?\] (test_\w+) (.*)$", line)
    if m:
        st = m.group(2).split(" -- ")[0]
        st = re.sub(r" \((?:\d[\d.]* (?:ms|sec|min|hour)s? ?)+\)$", "", st)  # slow tests
        st = re.sub(r" \(\d+ (?:errors?|failures?)(?:, \d+ (?:errors?|failures?))?\)", "", st)
        mods[m.group(1)] = st
with open(prefix + ".modules", "w") as f:
    for name in sorted(mods):
        f.write(f"{name} {mods[name]}\n")
cases = []
try:
    root = ET.parse(xmlpath).getroot()
    for tc in root.iter("testcase"):
        st = "ok"
        for child in tc:
            if child.tag in ("skipped", "failure", "error"):
                st = child.tag
        cases.append(f"{tc.get('name')} {st}")
except (OSError, ET.ParseError) as e:
    cases.append(f"<no junit xml: {e.__class__.__name__}>")
with open(prefix + ".cases", "w") as f:
    f.write("".join(c + "\n" for c in sorted(cases)))
EOF
}

# regrtest MODE NAME TESTS...: one run; MODE plain|preload. regrtest exits 2 when a test fails:
# that is a result to compare, not an error, so only a timeout/signal of the runner itself or a
# missing summary line aborts here.
regrtest() {
    local mode=$1 name=$2; shift 2
    local pre=(); [ "$mode" = preload ] && pre=(env "LD_PRELOAD=$SO")
    mkdir -p "$TMP/$name.d"
    # timeout(1) leads its own process group: kill what is left of it (the workers of a runner
    # that crashed) so that nothing outlives the test
    "${pre[@]}" timeout --kill-after=5 "${CMD_TIMEOUT}" "$PY" -m test -j"$JOBS" -u none \
        --timeout 120 --tempdir "$TMP/$name.d" --junit-xml "$TMP/$name.xml" "$@" \
        >"$TMP/$name.out" 2>&1 &
    local pid=$! rc
    wait $pid; rc=$?
    if kill -KILL -- -$pid 2>/dev/null; then
        for _ in $(seq 50); do kill -0 -- -$pid 2>/dev/null || break; sleep 0.1; done
    fi
    if grep -q "cannot be preloaded" "$TMP/$name.out"; then
        grep "cannot be preloaded" "$TMP/$name.out" | head -2; fail "ld.so could not preload $SO"
    fi
    case $rc in
        0|2) ;;
        124|137) tail -30 "$TMP/$name.out"; fail "$mode: python3 -m test timed out after ${CMD_TIMEOUT}s (hang/deadlock?)" ;;
        *) tail -30 "$TMP/$name.out"
           [ $rc -gt 128 ] && fail "$mode: python3 -m test (the runner process) killed by signal $((rc - 128))"
           fail "$mode: python3 -m test exited with $rc" ;;
    esac
    grep -q "^Tests result:" "$TMP/$name.out" || { tail -30 "$TMP/$name.out"; fail "$mode: no 'Tests result' line from regrtest"; }
    summarise "$TMP/$name.out" "$TMP/$name.xml" "$TMP/$name"
}

# compare A B: prints the modules whose module or case results differ (empty when identical)
differing_modules() {
    { diff "$TMP/$1.modules" "$TMP/$2.modules"; diff "$TMP/$1.cases" "$TMP/$2.cases"; } |
        sed -nE 's/^[<>] (test\.)?(test_[A-Za-z0-9_]+).*/\2/p' | sort -u
}
show_diff() { # a b
    echo "--- module results: without (<) vs with (>) the preload ---"
    diff "$TMP/$1.modules" "$TMP/$2.modules" | grep '^[<>]' | head -20
    echo "--- test cases: without (<) vs with (>) the preload ---"
    diff "$TMP/$1.cases" "$TMP/$2.cases" | grep '^[<>]' | head -30
}
failure_excerpt() { # name module: the traceback lines regrtest printed for that module
    awk -v m="$2" '$0 ~ "] "m" " {p=1} p && /^0:|^[0-9]+:[0-9]+:[0-9]+ load avg/ && $0 !~ "] "m" " {p=0} p' \
        "$TMP/$1.out" | head -40
}

read -ra tests <<<"$(echo $SLICE)"
note "python$pyver -m test -j$JOBS (${#tests[@]} modules) without the preload"
regrtest plain plain "${tests[@]}"
note "python$pyver -m test -j$JOBS with the preload"
regrtest preload bobox "${tests[@]}"
echo "plain: $(wc -l <"$TMP/plain.cases") test cases, $(grep -c ' passed$' "$TMP/plain.modules")/${#tests[@]} modules passed"
[ "$(wc -l <"$TMP/plain.modules")" -eq ${#tests[@]} ] ||
    { cat "$TMP/plain.modules"; fail "regrtest reported $(wc -l <"$TMP/plain.modules") module results for ${#tests[@]} modules (output format changed?)"; }

mapfile -t diffmods < <(differing_modules plain bobox)
if [ ${#diffmods[@]} -gt 0 ]; then
    show_diff plain bobox
    # never excused: a crashed worker, a timeout, a module without result
    for m in "${diffmods[@]}"; do
        st=$(sed -n "s/^$m //p" "$TMP/bobox.modules")
        case $st in
            passed|failed|"failed (env changed)"|skipped|"skipped (resource denied)") ;;
            *) failure_excerpt bobox "$m"; fail "$m: '${st:-no result}' with the preload, '$(sed -n "s/^$m //p" "$TMP/plain.modules")' without" ;;
        esac
    done
    note "re-running ${diffmods[*]} once in both modes (timing-sensitive test or real difference?)"
    regrtest plain plain2 "${diffmods[@]}"
    regrtest preload bobox2 "${diffmods[@]}"
    mapfile -t again < <(differing_modules plain2 bobox2)
    if [ ${#again[@]} -gt 0 ]; then
        show_diff plain2 bobox2
        for m in "${again[@]}"; do echo "=== $m with the preload ==="; failure_excerpt bobox2 "$m"; done
        fail "python regression tests ${again[*]} give different results with LD_PRELOAD=$SO (twice)"
    fi
    for m in "${diffmods[@]}"; do echo "=== $m, first preload run ==="; failure_excerpt bobox "$m"; done
    echo "WARNING: ${diffmods[*]} differed in the first run but not in the re-run (flaky test?)"
fi
if grep -qv ' passed$' "$TMP/plain.modules"; then
    echo "note: not passed without the preload either (environment), same result with it:"
    grep -v ' passed$' "$TMP/plain.modules" | sed 's/^/    /'
fi
echo "same results for ${#tests[@]} modules and $(wc -l <"$TMP/bobox.cases") test cases" \
     "($(grep -c ' skipped$' "$TMP/bobox.cases") skipped), sha $(sha256sum <"$TMP/bobox.cases" | cut -c1-16)"
echo "PASS"
