#!/usr/bin/env bash
# Guards against: failures or messages when mbind, get_mempolicy, getcpu, getrandom get EPERM.
# (Containers without CAP_SYS_NICE; the program must run as usual and we print nothing.)
source "$(dirname "$0")/../lib/field.sh" || exit 1
need_lib; need_prog field_work; need_cmd cc
[ -e /usr/include/seccomp.h ] || fail "seccomp.h is missing (scripts/deps.sh installs libseccomp-dev)"
build_c "$TMP/seccomp_run" "$FIELD_SRC/seccomp_run.c" -lseccomp
REFUSED=mbind,get_mempolicy,getcpu,getrandom
"$TMP/seccomp_run" eperm "$REFUSED" true || skip "seccomp filters cannot be loaded here (kernel or container)"
SANDBOX=("$TMP/seccomp_run" eperm "$REFUSED")
run_plain "$TMP/plain.out" "$TMP/plain.err" "$PROGS/field_work" 4
for settings in "" "BOBOX_CHECK=1" "BOBOX_THP=always"; do
    run_plain "$TMP/out" "$TMP/err" "${SANDBOX[@]}" env LD_PRELOAD="$SO" $settings "$PROGS/field_work" 4
    [ -s "$TMP/err" ] && { cat "$TMP/err"; fail "messages on stderr with $REFUSED refused ($settings)"; }
    same_output "$TMP/plain.out" "$TMP/out" "field_work output with $REFUSED refused${settings:+ ($settings)}"
done
# bobox-run: the allocator and the pinning shim together, threads pinned
run_plain "$TMP/out" "$TMP/err" "${SANDBOX[@]}" "$RUN" -- "$PROGS/field_work" 4
[ -s "$TMP/err" ] && { cat "$TMP/err"; fail "messages on stderr under bobox-run with $REFUSED refused"; }
same_output "$TMP/plain.out" "$TMP/out" "field_work output under bobox-run with $REFUSED refused"
# a program that forks and starts threads in its children
run_plain "$TMP/fork.plain" "$TMP/err" "$PROGS/field_fork_first" 50
run_plain "$TMP/fork.out" "$TMP/err" "${SANDBOX[@]}" env LD_PRELOAD="$SO" "$PROGS/field_fork_first" 50
[ -s "$TMP/err" ] && { cat "$TMP/err"; fail "field_fork_first: messages on stderr"; }
same_output "$TMP/fork.plain" "$TMP/fork.out" "field_fork_first output with $REFUSED refused"
echo PASS
