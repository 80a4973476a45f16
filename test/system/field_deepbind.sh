#!/usr/bin/env bash
# Guards against: frees and reallocs across an RTLD_DEEPBIND plugin, which binds glibc's malloc.
# (PHP loads its extensions so: the host allocates with ours, the plugin with glibc's.)
source "$(dirname "$0")/../lib/field.sh" || exit 1
need_lib
need_cmd cc
build_c "$TMP/deepbind_host" "$FIELD_SRC/deepbind_host.c" -ldl
build_c "$TMP/deepbind_plugin.so" "$FIELD_SRC/deepbind_plugin.c" -shared -fPIC
compare_preload deepbind "$TMP/deepbind_host" "$TMP/deepbind_plugin.so"
grep -qx "crossed 2000 x 3 times, [0-9]* bytes of strings" "$TMP/deepbind.bobox.out" || fail "unexpected output"
echo PASS
