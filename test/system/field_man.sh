#!/usr/bin/env bash
# Guards against: man-db failing under the preload while its seccomp sandbox refuses our calls.
# (Its filter answers mbind, getcpu, get_mempolicy with an error.)
source "$(dirname "$0")/../lib/field.sh" || exit 1
need_lib; need_cmd man
export MANWIDTH=80 MANPAGER=cat PAGER=cat
unset MAN_DISABLE_SECCOMP
# A page of our own (man -l formats a file through the same sandboxed pipeline) ...
cat > "$TMP/field.1" <<'PAGE'
.TH FIELD 1 "2026" "bobox" "bobox tests"
.SH NAME
field \- a page formatted under the preload
.SH DESCRIPTION
.B groff
and its filters run under man-db's seccomp filter.
.TP
.B \-x
an option
PAGE
compare_preload man_local man -P cat -l "$TMP/field.1"
grep -q "a page formatted under the preload" "$TMP/man_local.bobox.out" || fail "page not formatted: $(head -5 "$TMP/man_local.bobox.out")"
# ... and an installed one, decompressed and formatted
if page=$(man -w ls 2>/dev/null); then
    compare_preload man_ls man -P cat ls
    grep -q "list directory contents" "$TMP/man_ls.bobox.out" || fail "not the ls page: $(head -5 "$TMP/man_ls.bobox.out")"
else
    echo "note: no installed page for ls (a container without manual pages); formatted our own only"
fi
# Show whether man-db sandboxed its filters here (it does not under Valgrind or without seccomp).
if LD_PRELOAD=$SO man -d -P cat -l "$TMP/field.1" 2>&1 >/dev/null | grep -q "loading seccomp filter"; then
    echo "man-db loaded its seccomp filter under the preload"
else
    echo "note: man-db did not load its seccomp filter here (kernel or container without seccomp)"
fi
echo PASS
