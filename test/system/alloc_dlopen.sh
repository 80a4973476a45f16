#!/usr/bin/env bash
# Pointers from before the allocator took over: glibc's start-up structures (the initial DTV,
# link maps) come from ld.so's minimal allocator and glibc never hands them to free(). Threads
# that dlopen 24 modules with thread-local storage (growing every thread's DTV past its
# start-up slack), call into them, hit a dlerror and dlclose them, three times over, run clean
# and print the same result with the preload, in default and checked mode.
source "$(dirname "$0")/../lib/common.sh" || exit 1
need_lib
command -v cc >/dev/null || { echo "no C compiler"; exit 77; }
SRC=$BOBOX_ROOT/test/progs/dlopen
cc -std=gnu11 -Wall -Wextra -Werror -O1 -pthread -o "$TMP/dlopen_threads" "$SRC/dlopen_threads.c" -ldl ||
    fail "building dlopen_threads"
for i in $(seq 0 23); do
    cc -std=gnu11 -Wall -Wextra -Werror -O1 -shared -fPIC -o "$TMP/libtls$i.so" "$SRC/tls_module.c" ||
        fail "building libtls$i.so"
done
run_plain "$TMP/plain.out" "$TMP/plain.err" "$TMP/dlopen_threads" "$TMP"
for mode in 0 1; do
    note "with the preload, BOBOX_CHECK=$mode"
    BOBOX_CHECK=$mode run_preload "$TMP/bobox.out" "$TMP/bobox.err" "$TMP/dlopen_threads" "$TMP"
    [ -s "$TMP/bobox.err" ] && { cat "$TMP/bobox.err"; fail "messages on stderr under the preload"; }
    same_output "$TMP/plain.out" "$TMP/bobox.out" "dlopen_threads output (BOBOX_CHECK=$mode)"
done
check_loaded_into "$TMP/dlopen_threads" "$TMP"
echo "PASS"
