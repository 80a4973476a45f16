#!/usr/bin/env bash
# Every test script can fail (scripts/test/check-scripts.sh): each parses, each source names a
# file that exists and stops the script when it does not, each test loads the helpers first.
# Then the check and the helpers are checked, on a copy of the tree: a planted broken source
# line (hardening_checked_exit.sh's old helper, deleted since) and one without `|| exit 1` must
# fail the check, and the planted script must stop without PASS; a command not found (plain,
# in $(...), in a condition) and an unset variable must each stop a test with a failure.
source "$(dirname "$0")/../lib/common.sh" || exit 1
cd "$BOBOX_ROOT"
scripts/test/check-scripts.sh || fail "check-scripts.sh"

T=$TMP/tree
mkdir -p "$T/scripts" && cp -r test "$T/" && cp -r scripts/test "$T/scripts/" || fail "copying the tree"
CHECK=$T/scripts/test/check-scripts.sh
"$CHECK" >/dev/null || fail "check-scripts.sh fails the unplanted copy"

# 1. The broken source line: the check names it, and the script stops without PASS.
victim=$T/test/system/hardening_checked_exit.sh
good='source "$(dirname "$0")/../lib/common.sh" || exit 1'
grep -qxF "$good" "$victim" || fail "hardening_checked_exit.sh does not source common.sh as expected"
sed -i 's#^source "$(dirname "$0")/../lib/common.sh" || exit 1$#source "$(dirname "$0")/../progs/alloc_sys_common.sh" || exit 1#' "$victim"
out=$("$CHECK" 2>&1) && fail "check-scripts.sh passed a script sourcing a missing file"
grep -q 'hardening_checked_exit.sh:[0-9]*: sources .*alloc_sys_common.sh.*, which does not exist' <<<"$out" ||
    fail "unexpected report for the missing file: $out"
out=$(BOBOX_ROOT=$T bash "$victim" 2>&1) && fail "the planted hardening_checked_exit.sh exited 0: $out"
grep -q PASS <<<"$out" && fail "the planted hardening_checked_exit.sh printed PASS: $out"
echo "planted missing helper: check fails, the script stops: $(head -1 <<<"$out")"

# 2. A source line that would let the script go on.
sed -i 's#^source "$(dirname "$0")/../progs/alloc_sys_common.sh" || exit 1$#source "$(dirname "$0")/../lib/common.sh"#' "$victim"
out=$("$CHECK" 2>&1) && fail "check-scripts.sh passed a source line without '|| exit 1'"
grep -q "hardening_checked_exit.sh:[0-9]*: 'source .*' does not end in '|| exit 1'" <<<"$out" ||
    fail "unexpected report for the source line without '|| exit 1': $out"
echo "planted source line without '|| exit 1': check fails"

# 3. Commands not found and an unset variable stop a test that loaded the helpers.
probe() { # name body: a test script in the copy; it must fail without printing PASS
    printf '%s\n%s\necho PASS\n' "$good" "$2" >"$T/test/system/planted_$1.sh"
    out=$(BOBOX_ROOT=$T timeout 30 bash "$T/test/system/planted_$1.sh" 2>&1); rc=$?
    [ $rc -ne 0 ] && [ $rc -ne 77 ] || fail "$1: the planted test exited $rc: $out"
    grep -q PASS <<<"$out" && fail "$1: the planted test printed PASS: $out"
    echo "planted $1: exit $rc, $(grep -m1 -E 'FAIL|unbound' <<<"$out")"
}
probe command_not_found 'no_such_command_bobox arg'
probe not_found_in_subst 'x=$(no_such_command_bobox; echo went on); echo "$x"'
probe not_found_in_condition 'if no_such_command_bobox; then echo found; fi'
probe not_found_in_pipe 'no_such_command_bobox | cat'
probe unset_variable 'echo "$NO_SUCH_VARIABLE_BOBOX"'
echo "ok"
