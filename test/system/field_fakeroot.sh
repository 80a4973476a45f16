#!/usr/bin/env bash
# Guards against: fakeroot (its preload and faked daemon) breaking beside our preload.
source "$(dirname "$0")/../lib/field.sh" || exit 1
need_lib; need_prog field_work; need_cmd fakeroot
script='cd "$1" && id -u && touch file && chown 1234:5678 file && stat -c "%u:%g" file && rm file && "$2" 4'
mkdir "$TMP/plain" "$TMP/bobox"
run_plain "$TMP/plain.out" "$TMP/plain.err" fakeroot sh -c "$script" sh "$TMP/plain" "$PROGS/field_work"
run_preload "$TMP/bobox.out" "$TMP/bobox.err" fakeroot sh -c "$script" sh "$TMP/bobox" "$PROGS/field_work"
[ -s "$TMP/bobox.err" ] && { cat "$TMP/bobox.err"; fail "messages on stderr under the preload"; }
same_output "$TMP/plain.out" "$TMP/bobox.out" "fakeroot session"
[ "$(sed -n 1,2p "$TMP/bobox.out" | tr '\n' ' ')" = "0 1234:5678 " ] || fail "fakeroot did not fake: $(head -2 "$TMP/bobox.out")"
echo PASS
