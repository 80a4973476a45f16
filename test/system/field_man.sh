#!/usr/bin/env bash
# Guards against: man-db, which runs its filters under its own seccomp sandbox (refusing mbind,
# getcpu, get_mempolicy with an error): the page must come out the same, without messages.
source "$(dirname "$0")/../progs/field_common.sh"
need_lib; need_cmd man
page=$(man -w ls 2>/dev/null) || fail "no manual page for ls (scripts/deps.sh installs man-db and coreutils' pages)"
echo "page: $page"
export MANWIDTH=80 MANPAGER=cat PAGER=cat
compare_preload man man -P cat ls
grep -q "list directory contents" "$TMP/man.bobox.out" || fail "not the ls page: $(head -5 "$TMP/man.bobox.out")"
# man-db must have sandboxed its filters, or the test shows nothing
MAN_DISABLE_SECCOMP= man -d -P cat ls 2>&1 >/dev/null | grep -q "loading seccomp filter" ||
    echo "note: man-db did not load its seccomp filter here (kernel or container without seccomp)"
echo PASS
