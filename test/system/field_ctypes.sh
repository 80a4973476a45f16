#!/usr/bin/env bash
# Guards against: the allocator loaded late, by dlopen (ctypes.CDLL) into a running python3:
# its start-up must not crash, and what glibc's malloc handed out before stays freeable.
source "$(dirname "$0")/../progs/field_common.sh"
need_lib
PY=/usr/bin/python3   # Debian's, whatever python3 comes first in PATH
[ -x "$PY" ] || fail "$PY is missing (scripts/deps.sh installs python3)"
script=$FIELD_SRC/ctypes_late.py
# Late: python runs on glibc's malloc, then loads ours.
run_plain "$TMP/late.out" "$TMP/late.err" "$PY" "$script" "$SO"
cat "$TMP/late.err"
grep -qx "owned=0 of 30 earlier buffers" "$TMP/late.err" || fail "bobox_owns claims glibc's buffers: $(cat "$TMP/late.err")"
# Early: the same script under the preload (ctypes then finds it already loaded).
run_preload "$TMP/early.out" "$TMP/early.err" "$PY" "$script" "$SO"
grep -qx "owned=30 of 30 earlier buffers" "$TMP/early.err" || fail "under the preload: $(cat "$TMP/early.err")"
same_output "$TMP/late.out" "$TMP/early.out" "python's results, allocator loaded late vs preloaded"
echo PASS
