#!/usr/bin/env bash
# test: slow=35
# Real program: GNU sort of a generated 100 MB file under LD_PRELOAD=libbobox.so gives the same
# sha256 as without it: whole-line sort, a keyed/numeric sort, and an external sort with a small
# buffer and 4 threads (temporary files and merges).
source "$(dirname "$0")/../lib/common.sh" || exit 1
need_lib
need_prog alloc_gen_lines
SIZE=${ALLOC_SORT_BYTES:-100000000}
avail=$(df -Pk "$TMP" | awk 'NR==2 {print $4}')
[ "${avail:-0}" -gt $((SIZE / 1024 * 4)) ] || { echo "not enough space in $TMP for a $SIZE-byte sort test"; exit 77; }
export LC_ALL=C
note "generating $SIZE bytes"
"$PROGS/alloc_gen_lines" "$SIZE" 7 >"$TMP/in.txt" || fail "generator failed"
check_loaded_into sort --version

sort_case() { # name, sort options...
    local name=$1; shift
    note "sort $* without the preload"
    run_plain "$TMP/out" "$TMP/plain.err" sort -T "$TMP" "$@" "$TMP/in.txt"
    local want; want=$(sha256sum <"$TMP/out"); rm -f "$TMP/out"
    note "sort $* with the preload"
    run_preload "$TMP/out" "$TMP/bobox.err" sort -T "$TMP" "$@" "$TMP/in.txt"
    local got; got=$(sha256sum <"$TMP/out"); rm -f "$TMP/out"
    [ "$want" = "$got" ] || fail "sort $name: sha256 differs with the preload ($want vs $got)"
    same_output "$TMP/plain.err" "$TMP/bobox.err" "sort $name stderr"
    echo "sort $name: ${want:0:16} identical"
}
sort_case lines
sort_case keyed -t ' ' -k2,2 -k1,1n
sort_case external -S 16M --parallel=4
echo "PASS"
