#!/usr/bin/env bash
# Guards against: heaptrack (a malloc interposer forwarding to ours) losing calls or crashing.
source "$(dirname "$0")/../lib/field.sh" || exit 1
need_lib; need_prog field_work; need_cmd heaptrack heaptrack_print
mkdir "$TMP/data"
run_plain "$TMP/plain.out" "$TMP/plain.err" heaptrack -o "$TMP/data/plain" "$PROGS/field_work" 4
run_preload "$TMP/bobox.out" "$TMP/bobox.err" heaptrack -o "$TMP/data/bobox" "$PROGS/field_work" 4
grep -q "^threads=4 sum=" "$TMP/bobox.out" || fail "the program's output is missing: $(head -3 "$TMP/bobox.out")"
diff <(grep '^threads=' "$TMP/plain.out") <(grep '^threads=' "$TMP/bobox.out") || fail "program output differs"
calls() { heaptrack_print "$1" 2>/dev/null | sed -n 's/^calls to allocation functions: \([0-9]*\).*/\1/p'; }
# heaptrack names its data file by the compressor it was built with (.zst, .gz)
plain=$(calls "$(ls "$TMP"/data/plain.*)"); bobox=$(calls "$(ls "$TMP"/data/bobox.*)")
echo "allocation calls recorded: plain $plain, with the preload $bobox"
[ -n "$bobox" ] && [ "$bobox" -ge 24000 ] || fail "heaptrack recorded ${bobox:-no} allocation calls (the program makes 24000+)"
# One more is glibc's own: the dtv that pthread_create allocates for bobox's reclaimer thread,
# which starts once the program has mapped 64 MB (allocator/thread/reclaimer.h).
[ "$bobox" -ge "$plain" ] && [ "$bobox" -le $((plain + 1)) ] ||
    fail "heaptrack counts differ: $plain without the preload, $bobox with it"
echo PASS
