# install.sh - sourced by test/system/install_*.sh. On top of common.sh:
#   install_into ARGS...   make install with these variables, quietly unless it fails
#   man_pages              the man pages, relative to MANDIR (man1/bobox-run.1, ...)
source "$(dirname "${BASH_SOURCE[0]}")/common.sh" || exit 1
# A make of our own, not a part of the make that may run the tests.
unset MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES LD_PRELOAD
install_into() {
    make -C "$BOBOX_ROOT" --no-print-directory install "$@" >"$TMP/make.log" 2>&1 ||
        { tail -20 "$TMP/make.log"; fail "make install $* failed"; }
}
man_pages() { python3 "$BOBOX_ROOT/scripts/gen/gen-man.py" --list; }
