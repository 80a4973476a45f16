#!/usr/bin/env bash
# RLIMIT_AS computed from the process's own VmSize (which counts the small arena's 256 GB
# reservation) + 512 MB holds as meant: allocating up to 4 GB, in mixed sizes and in small
# objects, fails with ENOMEM within the 512 MB, and after freeing allocation works again
# (test/progs/mem_vsz_limit.c; rlimit.c lowers such a limit by the reservation it gives back).
# The same under glibc's malloc, as a check of the program itself.
source "$(dirname "$0")/../lib/common.sh" || exit 1
need_lib
need_prog mem_vsz_limit
"$PROGS/mem_vsz_limit" >"$TMP/glibc.out" 2>&1 || { cat "$TMP/glibc.out"; fail "without the preload: mem_vsz_limit exited with $?"; }
LD_PRELOAD=$SO "$PROGS/mem_vsz_limit" >"$TMP/bobox.out" 2>&1; rc=$?
cat "$TMP/bobox.out"
[ $rc -eq 0 ] || fail "under the preload: mem_vsz_limit exited with $rc"
grep -q '^PASS$' "$TMP/bobox.out" || fail "mem_vsz_limit did not finish"
