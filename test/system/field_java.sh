#!/usr/bin/env bash
# Guards against: javac/java crashing, hanging or computing differently under the preload or bobox-run.
# (The JVM's GC and JIT threads start before main and take the first CPUs under bobox-run.)
source "$(dirname "$0")/../lib/field.sh" || exit 1
need_lib; need_cmd java javac
src=$FIELD_SRC/Field.java
mkdir -p "$TMP/plain" "$TMP/bobox" "$TMP/run"
run_plain "$TMP/javac.out" "$TMP/javac.err" javac -d "$TMP/plain" "$src"
run_preload "$TMP/javac.bobox.out" "$TMP/javac.bobox.err" javac -d "$TMP/bobox" "$src"
timeout 120 "$RUN" -- javac -d "$TMP/run" "$src" || fail "javac under bobox-run failed"
cmp "$TMP/plain/Field.class" "$TMP/bobox/Field.class" || fail "javac under the preload wrote a different class file"
cmp "$TMP/plain/Field.class" "$TMP/run/Field.class" || fail "javac under bobox-run wrote a different class file"
echo "same class file from javac: plain, preloaded, bobox-run"
compare_preload java java -cp "$TMP/plain" Field
compare_run java java -cp "$TMP/plain" Field
grep -qx "total=79999600000 len=100000" "$TMP/java.bobox.out" || fail "unexpected result: $(cat "$TMP/java.bobox.out")"
echo PASS
