# common.sh - what every system test shares. Sourced by test/system/*.sh and by the other files
# of test/lib (which the runner never takes for tests: it runs only test/system/*.sh).
#   BOBOX_ROOT, BUILD     the source tree and its build directory
#   SO PIN RUN PROGS      libbobox.so, libbobox-pin.so, bobox-run, build/test/progs
#   TMP                   a private temp dir, removed on exit
#   fail WHY              exit 1 with "FAIL: WHY"
#   skip WHY              exit 77 with "skipped: WHY" (only for what the machine lacks)
#   note WHAT             a time-stamped progress line
#   need FILE...          fail when a built file is missing
#   need_cmd CMD...       fail when a required command is missing (scripts/deps.sh installs it)
#   need_lib              fail clearly when build/libbobox.so is missing or not the allocator
#   need_prog NAME        fail clearly when build/test/progs/NAME is missing
#   run_plain OUT ERR CMD...    run CMD with stdout/stderr to files, time limit
#   run_preload OUT ERR CMD...  the same under LD_PRELOAD=$SO; fails when ld.so could not preload
#   same_output A B WHAT  fail with a diff excerpt unless files A and B are identical
#   check_loaded_into CMD...    LD_DEBUG proof that libbobox.so is initialised in CMD's process(es)
#   has_clang_rt NAME     clang's runtime libclang_rt.NAME-x86_64.a is installed (test/hardening.mk
#                         then builds the sanitizer binaries: their absence is a broken build)
# Every test sources this file first as `source .../common.sh || exit 1` (scripts/test/check-scripts.sh
# holds every source line to that), so that a test stops, never passes, when
#  - a helper file is missing: the `|| exit 1`;
#  - a variable is unset: set -u;
#  - a command is not found: bash would go on with status 127; the handler below fails the test.
set -u
# Bash runs the handler in the forked child, even inside $(...): it signals the test's own shell.
command_not_found_handle() {
    echo "FAIL: $1: command not found" >&2
    kill -USR2 $$ 2>/dev/null
    exit 127
}
trap 'fail "a command was not found (see above)"' USR2
: "${BOBOX_ROOT:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
: "${BUILD:=$BOBOX_ROOT/build}"
SO=$BUILD/libbobox.so
PIN=$BUILD/libbobox-pin.so
RUN=$BUILD/bobox-run
PROGS=$BUILD/test/progs
CMD_TIMEOUT=${CMD_TIMEOUT:-150}

fail() { echo "FAIL: $*"; exit 1; }
skip() { echo "skipped: $*"; exit 77; }
note() { echo "[$(date +%T)] $*"; }

need() { local f; for f; do [ -e "$f" ] || fail "missing $f (run make first)"; done; }
need_cmd() {
    local c
    for c; do command -v "$c" >/dev/null || fail "$c is missing (scripts/deps.sh installs it)"; done
}
need_lib() {
    [ -f "$SO" ] || fail "$SO is missing: the allocator is not built (run 'make all' in $BOBOX_ROOT)"
    if command -v nm >/dev/null; then
        local syms; syms=$(nm -D --defined-only "$SO" 2>/dev/null | awk '{print $NF}')
        for s in malloc free calloc realloc bobox_owns; do
            grep -qx "$s" <<<"$syms" || fail "$SO does not export $s: not the bobox allocator"
        done
    fi
}
has_clang_rt() {
    command -v "${CLANG:-clang}" >/dev/null || return 1
    [ -f "$("${CLANG:-clang}" --print-runtime-dir 2>/dev/null)/libclang_rt.$1-x86_64.a" ]
}
need_prog() {
    [ -x "$PROGS/$1" ] || fail "$PROGS/$1 is missing (run 'make $PROGS/$1' or 'make test')"
}

TMP=$(mktemp -d "${TMPDIR:-/tmp}/bobox-test.XXXXXX") || fail "mktemp"
trap 'rm -rf "$TMP"' EXIT

run_plain() { # out err cmd...
    local out=$1 err=$2; shift 2
    timeout --kill-after=5 "$CMD_TIMEOUT" "$@" >"$out" 2>"$err"
    local rc=$?
    [ $rc -eq 0 ] || { tail -5 "$err"; fail "without the preload: '$*' exited with $rc"; }
}
run_preload() { # out err cmd...
    local out=$1 err=$2; shift 2
    LD_PRELOAD=$SO timeout --kill-after=5 "$CMD_TIMEOUT" "$@" >"$out" 2>"$err"
    local rc=$?
    if grep -q "cannot be preloaded" "$err"; then
        grep "cannot be preloaded" "$err" | head -2
        fail "ld.so could not preload $SO"
    fi
    if [ $rc -ne 0 ]; then
        echo "--- stderr (last 20 lines) ---"; tail -20 "$err"
        case $rc in
            124|137) fail "under LD_PRELOAD: '$*' timed out after ${CMD_TIMEOUT}s (hang/deadlock?)" ;;
            *) [ $rc -gt 128 ] && fail "under LD_PRELOAD: '$*' killed by signal $((rc - 128))"
               fail "under LD_PRELOAD: '$*' exited with $rc" ;;
        esac
    fi
}
same_output() { # a b what
    if ! cmp -s "$1" "$2"; then
        echo "--- diff (first 20 lines): without preload vs with preload ---"
        diff "$1" "$2" | head -20
        fail "$3 differs with LD_PRELOAD=$SO"
    fi
    echo "same $3: $(sha256sum <"$1" | cut -c1-16)"
}
check_loaded_into() { # cmd... : ld.so must initialise libbobox.so in the (sub)process
    LD_PRELOAD=$SO LD_DEBUG=libs LD_DEBUG_OUTPUT=$TMP/lddebug timeout 60 "$@" >/dev/null 2>&1
    if ! cat "$TMP"/lddebug.* 2>/dev/null | grep -q "calling init: .*libbobox.so"; then
        rm -f "$TMP"/lddebug.*
        fail "libbobox.so was not initialised in '$*' (LD_DEBUG=libs shows no 'calling init')"
    fi
    rm -f "$TMP"/lddebug.*
}
