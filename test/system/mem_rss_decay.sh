#!/usr/bin/env bash
# test: serial
# (serial: it measures RSS against the peak after the decay delays)
# 1 GB from four threads, all freed: RSS at most 2% of the peak two decay delays later and one
# malloc (BOBOX_DECAY_MS=300 keeps the test short), at most 1% at once after malloc_trim(0).
# Only when the 1-minute load average is above the CPU count may the decay wait up to four
# delays more (test/progs/mem_rss.c); the program prints the delays it waited.
source "$(dirname "$0")/../lib/common.sh" || exit 1
need_lib
need_prog mem_rss
for how in decay trim; do
    ms=300; [ $how = trim ] && ms=60000
    BOBOX_DECAY_MS=$ms run_preload "$TMP/$how.out" "$TMP/$how.err" "$PROGS/mem_rss" $how
    cat "$TMP/$how.out"
done
# Outside the preload, the program must refuse to measure glibc.
"$PROGS/mem_rss" trim >"$TMP/plain.out" 2>&1 && fail "mem_rss ran without libbobox.so: $(cat "$TMP/plain.out")"
grep -q "libbobox.so is not preloaded" "$TMP/plain.out" || fail "mem_rss without the preload: $(cat "$TMP/plain.out")"
echo "ok"
