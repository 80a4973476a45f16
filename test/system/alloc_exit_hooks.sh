#!/usr/bin/env bash
# build/test/progs/alloc_exit_hooks under LD_PRELOAD=libbobox.so: malloc/free from a
# constructor, pthread-key destructors, OpenMP threads, libc-internal allocations (stdio,
# regex, qsort, dlopen, locale) and atexit handlers; output identical to the plain run and
# the preloaded allocator is the one answering.
source "$(dirname "$0")/../lib/common.sh" || exit 1
need_lib
need_prog alloc_exit_hooks
P=$PROGS/alloc_exit_hooks
run_plain "$TMP/plain.out" "$TMP/plain.err" "$P"
for run in 1 2 3 4 5; do
    OMP_NUM_THREADS=$((run + 1)) run_preload "$TMP/bobox.out" "$TMP/bobox.err" "$P"
    grep -q "bobox: active" "$TMP/bobox.err" || fail "bobox is not the allocator under LD_PRELOAD: $(cat "$TMP/bobox.err")"
    same_output "$TMP/plain.out" "$TMP/bobox.out" "alloc_exit_hooks output (OMP_NUM_THREADS=$((run + 1)))"
done
cat "$TMP/plain.out"
echo "PASS"
