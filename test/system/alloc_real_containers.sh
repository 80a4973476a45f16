#!/usr/bin/env bash
# test: slow=15
# Real program: build/test/progs/alloc_containers (maps, vectors, strings, shared_ptrs passed
# between std::threads) prints the same checksum with and without LD_PRELOAD=libbobox.so,
# and with the preload its std containers are allocated by bobox.
source "$(dirname "$0")/../lib/common.sh" || exit 1
need_lib
need_prog alloc_containers
P=$PROGS/alloc_containers
note "without the preload"
run_plain "$TMP/plain.out" "$TMP/plain.err" "$P"
grep -q "bobox: absent" "$TMP/plain.err" || fail "plain run: unexpected allocator report: $(cat "$TMP/plain.err")"
for run in 1 2 3; do
    note "with the preload, run $run"
    run_preload "$TMP/bobox.out" "$TMP/bobox.err" "$P"
    grep -q "bobox: active" "$TMP/bobox.err" || fail "under LD_PRELOAD the containers are not allocated by bobox: $(cat "$TMP/bobox.err")"
    same_output "$TMP/plain.out" "$TMP/bobox.out" "alloc_containers output"
done
cat "$TMP/plain.out"
echo "PASS"
