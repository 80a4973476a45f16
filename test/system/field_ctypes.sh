#!/usr/bin/env bash
# Guards against: a crash when libbobox.so is loaded late (ctypes.CDLL into a running python3).
# What glibc's malloc handed out before stays python's to free; when the static TLS space is
# used up, the load fails with glibc's message and python goes on.
source "$(dirname "$0")/../lib/field.sh" || exit 1
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
# Initial-exec TLS (glibc's rule for a malloc, ours is 32 bytes) comes from the static TLS
# surplus when loaded late: fill it with libraries of the same size, then load ours.
build_c "$TMP/tls_filler.so" "$FIELD_SRC/tls_filler.c" -shared -fPIC
for i in $(seq 0 199); do cp "$TMP/tls_filler.so" "$TMP/tls_filler$i.so"; done  # one object per file
"$PY" - "$TMP" "$SO" >"$TMP/tls.out" 2>&1 <<'PY'
import ctypes, sys
tmp, so = sys.argv[1], sys.argv[2]
for i in range(200):
    try:
        ctypes.CDLL("%s/tls_filler%d.so" % (tmp, i))
    except OSError as e:
        print("fillers loaded:", i)
        break
else:
    sys.exit("the static TLS surplus never ran out")
try:
    ctypes.CDLL(so)
    print("loaded")
except OSError as e:
    print("OSError:", str(e).replace(so, "libbobox.so"))
print("python goes on:", sum(range(10)))
PY
cat "$TMP/tls.out"
grep -qx "OSError: libbobox.so: cannot allocate memory in static TLS block" "$TMP/tls.out" ||
    fail "loading with the static TLS space used up: expected glibc's error"
grep -qx "python goes on: 45" "$TMP/tls.out" || fail "python did not go on"
echo PASS
