#!/usr/bin/env bash
# The README's Safety table, word for word: each bad operation of test/progs/hard_messages must
# end the process with SIGABRT and the table's message on stderr, the object's real address
# and size in it: a double free (and, in checked mode, one while the object waits in the
# quarantine), a write 1 or 16 bytes before an object (32: its slot record, so an invalid
# pointer), delete[] of memory from new. The default mode lets the last two pass, as the table
# says. Checked mode fills new memory with 0xbe (calloc: zero) and freed memory with 0xdf; a
# freed large object has no access while it waits in the quarantine.
source "$(dirname "$0")/../lib/common.sh" || exit 1
need_lib
need_prog hard_messages
README=$BOBOX_ROOT/README.md

# expect_abort MODE MESSAGE KIND ARGS...: MESSAGE as the README writes it (0x… the address, N
# the size, K the offset); the run must print it with the object's address and size.
expect_abort() {
    local mode=$1 message=$2; shift 2
    local check=0; [ "$mode" = checked ] && check=1
    grep -qF -- "$message" "$README" || fail "the README does not state '$message'"
    # (the braces keep bash's own "Aborted" line out of the log)
    { BOBOX_CHECK=$check LD_PRELOAD=$SO timeout 20 "$PROGS/hard_messages" "$@" >"$TMP/out" 2>"$TMP/err"; } 2>/dev/null
    local rc=$?
    local ptr size; read -r _ ptr _ size <"$TMP/out"
    [[ $ptr == 0x* ]] || fail "$*: the program printed no address: $(cat "$TMP/out")"
    local want=${message//0x…/$ptr}; want=${want//(size N)/(size $size)}; want=${want//byte K/byte ${2:-}}
    [ $rc = 134 ] || fail "$* ($mode mode): exit status $rc, not SIGABRT: $(cat "$TMP/err")"
    grep -qxF -- "$want" "$TMP/err" || fail "$* ($mode mode): stderr lacks '$want': $(cat "$TMP/err")"
    echo "$mode, $*: $want"
}
# expect_pass KIND ARGS...: the default mode lets it pass (the table's "not detected", "accepted")
expect_pass() {
    BOBOX_CHECK=0 LD_PRELOAD=$SO timeout 20 "$PROGS/hard_messages" "$@" >"$TMP/out" 2>"$TMP/err" ||
        fail "$* (default mode): exit status $?: $(cat "$TMP/err")"
    [ ! -s "$TMP/err" ] || fail "$* (default mode): a message although the table says it passes: $(cat "$TMP/err")"
    echo "default, $*: passes unnoticed"
}

expect_abort default 'bobox: free(): double free 0x…' double-free
expect_abort checked 'bobox: free(): double free 0x… (the object is in the quarantine)' quarantine-double-free
expect_abort checked 'bobox: free(): heap underflow before the start of 0x… (size N): byte K before it overwritten' underflow 1
expect_abort checked 'bobox: free(): heap underflow before the start of 0x… (size N): byte K before it overwritten' underflow 16
expect_abort checked 'bobox: free(): invalid pointer 0x…' underflow 32
expect_abort checked 'bobox: operator delete[](): 0x… was allocated by new, freed by operator delete[]()' delete-array-of-new
expect_pass underflow 1
expect_pass delete-array-of-new

grep -qF 'freed: filled with `0xdf` (a large object: no access until it leaves the quarantine); new: filled with `0xbe` (`calloc`: zero)' "$README" ||
    fail "the README no longer states the fill patterns checked here"
out=$(BOBOX_CHECK=1 LD_PRELOAD=$SO timeout 20 "$PROGS/hard_messages" fills 2>&1) || fail "fills: exit status $?: $out"
echo "$out"
want="size 24: new 0xbe, calloc zero, freed 0xdf
size 4096: new 0xbe, calloc zero, freed 0xdf
size 300000: new 0xbe, calloc zero, freed 0xdf
size 1048576: new 0xbe, calloc zero, freed no access"
[ "$out" = "$want" ] || fail "checked mode's fills differ from the README's"
echo PASS
