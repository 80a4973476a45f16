#!/usr/bin/env bash
# test: time=37
# Wild frees never followed: addresses swept across small, recycled, medium and large memory
# (headers, cached and unformatted blocks, freed objects) each abort with bobox's message,
# from the owning thread and from another, by default and in checked mode. Guards against a
# free that takes a header or old contents for a block and writes through them.
source "$(dirname "$0")/../lib/common.sh" || exit 1
need_lib
need_prog hard_wild_free
for mode in 0 1; do
    for who in owner other; do
        note "BOBOX_CHECK=$mode, freed by the $who thread"
        BOBOX_CHECK=$mode LD_PRELOAD=$SO timeout 300 "$PROGS/hard_wild_free" $who >"$TMP/out" 2>"$TMP/err"
        rc=$?
        cat "$TMP/out"
        [ $rc -eq 0 ] || { head -20 "$TMP/err"; fail "BOBOX_CHECK=$mode ($who): some wild frees crashed or returned (rc $rc)"; }
        grep -q "swept [0-9]*: aborted [1-9]" "$TMP/out" || fail "nothing swept"
    done
done
