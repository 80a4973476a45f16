#!/usr/bin/env bash
# test: slow=60
# The heap profiler changes no program's behaviour: with BOBOX_PROF at a high sampling rate
# (one sample per 16 KB, so that sampled objects, their frees, reallocs and dumps are
# frequent), the stress tests (threads, fork storms, out of memory) pass, and a C++ container
# workload, a Python program (its objects through malloc: PYTHONMALLOC=malloc) and git print
# exactly what they print without the preload. Each leaves a profile google-pprof reads.
# About 50 seconds. Not the API suite: some of its cases assert where an object is placed,
# which a sampled object, served as a large mapping, changes.
source "$(dirname "$0")/../lib/common.sh" || exit 1
need_lib
need_prog alloc_containers
command -v google-pprof >/dev/null || fail "google-pprof missing (scripts/deps.sh installs google-perftools)"
T=$BUILD/test
[ -x "$T/preload_stress" ] || fail "$T/preload_stress is missing (make test builds it)"
export BOBOX_PROF_RATE=16384 CMD_TIMEOUT=120
mkdir -p "$TMP/prof"

catch_ok() { # name, command...
    local name=$1; shift
    note "$name"
    BOBOX_PROF="$TMP/prof/$name" timeout --kill-after=5 300 "$@" --durations no >"$TMP/$name.log" 2>&1
    local rc=$?
    grep -qE '^All tests passed \(' "$TMP/$name.log" && [ $rc -eq 0 ] ||
        { tail -30 "$TMP/$name.log"; fail "$name failed with the profiler on (rc $rc)"; }
    ls "$TMP/prof/$name".*.heap >/dev/null 2>&1 || fail "$name left no profile"
}
# The preload only, as programs use it: the static form runs the same code (47 s more).
catch_ok stress-preload env LD_PRELOAD="$SO" "$T/preload_stress"

readable() { # program, profile[, pprof option]: google-pprof names at least one function
    google-pprof --text ${3:-} "$1" "$2" >"$TMP/pprof.txt" 2>"$TMP/pprof.err" || { cat "$TMP/pprof.err"; fail "google-pprof cannot read $2"; }
    grep -qE '^ *[0-9.]+ +[0-9.]+% +[0-9.]+% +[0-9.]+ +[0-9.]+% [A-Za-z_]' "$TMP/pprof.txt" || fail "no function in the profile of $1: $(head -5 "$TMP/pprof.txt")"
}

note "alloc_containers"
run_plain "$TMP/plain.out" "$TMP/plain.err" "$PROGS/alloc_containers"
BOBOX_PROF=$TMP/prof/cont run_preload "$TMP/prof.out" "$TMP/prof.err" "$PROGS/alloc_containers"
same_output "$TMP/plain.out" "$TMP/prof.out" "alloc_containers output (profiling)"
readable "$PROGS/alloc_containers" "$(ls -S "$TMP"/prof/cont.*.heap | head -1)" --alloc_space # it frees all: what it allocated

PY=/usr/bin/python3
[ -x $PY ] || fail "$PY missing (scripts/deps.sh installs python3)"
note "python3"
cat >"$TMP/work.py" <<'PYEOF'
import json, collections, ctypes, os
rows = [{"id": i, "name": "user%d" % i, "tags": ["t%d" % (i % 7), "g%d" % (i % 13)]} for i in range(60000)]
index = collections.defaultdict(list)
for r in rows:
    for t in r["tags"]:
        index[t].append(r["id"])
text = json.dumps(rows[:20000], sort_keys=True)
back = json.loads(text)
print(len(rows), len(index), len(text), sum(len(v) for v in index.values()), back[-1]["name"])
dump = os.environ.get("DUMP")
if dump:  # the profile while everything is live, through the preloaded allocator's API
    assert ctypes.CDLL(None).bobox_prof_dump(dump.encode()) == 0
PYEOF
export PYTHONMALLOC=malloc
run_plain "$TMP/py.plain" "$TMP/py.err" $PY "$TMP/work.py"
DUMP=$TMP/prof/py-live.heap BOBOX_PROF=$TMP/prof/py run_preload "$TMP/py.prof" "$TMP/py.err" $PY "$TMP/work.py"
same_output "$TMP/py.plain" "$TMP/py.prof" "python3 output (profiling)"
readable $PY "$TMP/prof/py-live.heap"
grep -qE ' (PyList_New|PyList_Append|_PyObject_GC_New|PyDict_New|_PyDict_NewPresized)$' "$TMP/pprof.txt" ||
    fail "the python3 profile names none of its list and dict allocators: $(head -8 "$TMP/pprof.txt")"
unset PYTHONMALLOC

command -v git >/dev/null || fail "git missing (scripts/deps.sh installs it)"
note "git"
export HOME=$TMP/home GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME=A GIT_AUTHOR_EMAIL=a@x GIT_COMMITTER_NAME=C \
       GIT_COMMITTER_EMAIL=c@x GIT_AUTHOR_DATE="2020-01-01T00:00:00Z" GIT_COMMITTER_DATE="2020-01-01T00:00:00Z" LC_ALL=C
mkdir -p "$HOME"
make_repo() { # dir: 30 commits over 40 files; prints the log and a diff
    git init -q -b main "$1" && cd "$1" || return 1
    for c in $(seq 1 30); do
        for f in $(seq 1 40); do [ $(((f * c) % 7)) = 0 ] && seq $c $((c + f * 20)) >"f$f.txt"; done
        git add -A && git commit -qm "commit $c" || return 1
    done
    git log --stat --format='%H %s' && git diff HEAD~20 HEAD | sha256sum && git gc -q && git fsck --strict 2>&1
}
(make_repo "$TMP/g1") >"$TMP/git.plain" 2>&1 || fail "git without the preload"
(export BOBOX_PROF=$TMP/prof/git LD_PRELOAD=$SO; make_repo "$TMP/g2") >"$TMP/git.prof" 2>&1 || fail "git with the profiler"
same_output "$TMP/git.plain" "$TMP/git.prof" "git output (profiling)"
ls "$TMP"/prof/git.*.heap >/dev/null 2>&1 || fail "git left no profile"
echo "prof_programs: ok"
