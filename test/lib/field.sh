# field.sh - sourced by test/system/field_*.sh, the field compatibility suite: programs and
# tools that break preloaded allocators elsewhere. On top of common.sh:
#   compare_preload NAME CMD...    CMD's output without and with LD_PRELOAD=$SO must be the same,
#                                  and nothing on stderr under the preload that plain did not print
#   compare_run NAME CMD...    the same under bobox-run (allocator + pinning) against plain
#   build_c OUT SRC [cc args...]   compile a helper with the project's warnings
source "$(dirname "${BASH_SOURCE[0]}")/common.sh" || exit 1
FIELD_SRC=$BOBOX_ROOT/test/progs/field
unset LD_PRELOAD BOBOX_PIN BOBOX_STATS BOBOX_VERBOSE BOBOX_CHECK

build_c() { # out src [args...]
    local out=$1 src=$2; shift 2
    cc -std=gnu11 -Wall -Wextra -Werror -O1 -g -pthread -o "$out" "$src" "$@" || fail "building $(basename "$src")"
}
# stderr lines of the preloaded run that the plain run did not print
new_stderr() { # plain.err preload.err
    grep -vxF -f "$1" "$2" || true
}
compare_preload() { # name cmd...
    local name=$1; shift
    run_plain "$TMP/$name.plain.out" "$TMP/$name.plain.err" "$@"
    [ -s "$TMP/$name.plain.out" ] || fail "$name: no output without the preload: nothing to compare"
    run_preload "$TMP/$name.bobox.out" "$TMP/$name.bobox.err" "$@"
    local extra; extra=$(new_stderr "$TMP/$name.plain.err" "$TMP/$name.bobox.err")
    [ -z "$extra" ] || { echo "$extra" | head -10; fail "$name: messages on stderr under the preload"; }
    same_output "$TMP/$name.plain.out" "$TMP/$name.bobox.out" "$name output"
}
compare_run() { # name cmd...
    local name=$1; shift
    [ -x "$RUN" ] || fail "$RUN is missing (run 'make all')"
    [ -s "$TMP/$name.plain.out" ] || run_plain "$TMP/$name.plain.out" "$TMP/$name.plain.err" "$@"
    timeout --kill-after=5 "$CMD_TIMEOUT" "$RUN" -- "$@" >"$TMP/$name.run.out" 2>"$TMP/$name.run.err"
    local rc=$?
    [ $rc -eq 0 ] || { tail -20 "$TMP/$name.run.err"; fail "$name: under bobox-run exited with $rc"; }
    local extra; extra=$(new_stderr "$TMP/$name.plain.err" "$TMP/$name.run.err")
    [ -z "$extra" ] || { echo "$extra" | head -10; fail "$name: messages on stderr under bobox-run"; }
    same_output "$TMP/$name.plain.out" "$TMP/$name.run.out" "$name output under bobox-run"
}
