# Helpers for test/system/install_*.sh (sourced, not a test itself).
set -u
BOBOX_ROOT=${BOBOX_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
# A make of our own, not a part of the make that may run the tests.
unset MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES LD_PRELOAD
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
# A required tool that is missing is a failure (scripts/deps.sh installs it).
need_tool() { command -v "$1" >/dev/null || fail "$1 is missing (scripts/deps.sh installs $2)"; }
# install_into ARGS...: make install with these variables, quietly unless it fails.
install_into() {
    make -C "$BOBOX_ROOT" --no-print-directory install "$@" >"$TMP/make.log" 2>&1 ||
        { tail -20 "$TMP/make.log"; fail "make install $* failed"; }
}
# The man pages, relative to MANDIR (man1/bobox-run.1, ...).
man_pages() { python3 "$BOBOX_ROOT/scripts/gen-man.py" --list; }
