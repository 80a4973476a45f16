#!/usr/bin/env bash
# test: slow=30
# Real program: python3 running an allocation-heavy threaded script (test/progs/alloc_py_threads.py)
# under LD_PRELOAD=build/libbobox.so must print exactly what it prints without the preload,
# with Python's own small-object allocator (default) and with PYTHONMALLOC=malloc (every object
# through malloc/free/realloc). Then test/progs/alloc_py_fork.py: multiprocessing pools forked
# while two threads allocate (no deadlock in the children, same digest).
source "$(dirname "$0")/../lib/common.sh" || exit 1
need_lib
command -v python3 >/dev/null || { echo "python3 not installed"; exit 77; }
SCRIPT=$BOBOX_ROOT/test/progs/alloc_py_threads.py
[ -f "$SCRIPT" ] || fail "$SCRIPT missing"
export PYTHONHASHSEED=0 PYTHONDONTWRITEBYTECODE=1

# the preload really answers inside python
LD_PRELOAD=$SO python3 -c '
import ctypes, sys
lib = ctypes.CDLL(None)
lib.malloc.restype = ctypes.c_void_p
lib.malloc.argtypes = [ctypes.c_size_t]
lib.bobox_owns.argtypes = [ctypes.c_void_p]
p = lib.malloc(100)
sys.exit(0 if lib.bobox_owns(p) == 1 else 1)' || fail "bobox_owns is missing or does not own python's malloc() result under LD_PRELOAD"

note "python3 without the preload"
run_plain "$TMP/plain.out" "$TMP/plain.err" python3 "$SCRIPT"
note "python3 with the preload"
run_preload "$TMP/bobox.out" "$TMP/bobox.err" python3 "$SCRIPT"
same_output "$TMP/plain.out" "$TMP/bobox.out" "python3 output"
note "python3 with the preload and PYTHONMALLOC=malloc"
PYTHONMALLOC=malloc run_preload "$TMP/bobox-malloc.out" "$TMP/bobox-malloc.err" python3 "$SCRIPT"
same_output "$TMP/plain.out" "$TMP/bobox-malloc.out" "python3 output (PYTHONMALLOC=malloc)"
same_output "$TMP/plain.err" "$TMP/bobox-malloc.err" "python3 stderr"
cat "$TMP/plain.out"

# fork while threads allocate: multiprocessing pools (fork start method) next to churn threads
FORK_SCRIPT=$BOBOX_ROOT/test/progs/alloc_py_fork.py
[ -f "$FORK_SCRIPT" ] || fail "$FORK_SCRIPT missing"
note "python3 multiprocessing/fork without the preload"
CMD_TIMEOUT=90 run_plain "$TMP/fplain.out" "$TMP/fplain.err" python3 "$FORK_SCRIPT"
note "python3 multiprocessing/fork with the preload (PYTHONMALLOC=malloc)"
PYTHONMALLOC=malloc CMD_TIMEOUT=90 run_preload "$TMP/fbobox.out" "$TMP/fbobox.err" python3 "$FORK_SCRIPT"
same_output "$TMP/fplain.out" "$TMP/fbobox.out" "python3 multiprocessing output"
cat "$TMP/fplain.out"
echo "PASS"
