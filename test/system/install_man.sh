#!/usr/bin/env bash
# test: lock=install
# The installed man pages: each one (and each alias link) reads with `man -l` without a
# formatter warning and names its functions; libbobox(7) carries every row of the README's
# settings tables word for word, its safety table and pinning section; bobox-run(1) every
# option of `bobox-run --help`; each bobox_ function of include/bobox.h has a page with its
# prototype.
source "$(dirname "$0")/../lib/install.sh" || exit 1
need_cmd man
need_cmd python3
mandir=$TMP/dest/usr/local/share/man
install_into DESTDIR="$TMP/dest" PREFIX=/usr/local
export MAN_DISABLE_SECCOMP=1 MANWIDTH=2000 MANROFFOPT=-rHY=0 LC_ALL=C.UTF-8  # no wrapping, no hyphens

render() {  # the text of a man page, one line per paragraph
    man -l -P cat "$1" 2>"$TMP/err" | sed 's/^ *//' || fail "man -l $1 failed: $(cat "$TMP/err")"
    [ -s "$TMP/err" ] && fail "man -l $1 warns: $(cat "$TMP/err")"
    return 0
}
# Markdown table cell -> the words man prints: code marks, links and emphasis dropped (a link to a
# source file named by its path says where that file is).
plain() { sed -E 's/`//g; s/\[([^]]*)\]\(\1\)/\1 in the bobox-malloc sources/g; s/\[([^]]*)\]\([^)]*\)/\1/g; s/\*\*//g; s/\*([^*]+)\*/\1/g; s/ +/ /g; s/^ //; s/ $//'; }

pages=$(man_pages) || fail "gen-man.py --list failed"
[ "$(wc -l <<<"$pages")" -ge 3 ] || fail "too few man pages: $pages"
for page in $pages; do
    [ -e "$mandir/$page" ] || fail "$page not installed"
    text=$(render "$mandir/$page")
    name=$(basename "$page"); name=${name%.*}
    sed -n '/^NAME$/,/^SYNOPSIS$/p' <<<"$text" | grep -qw -- "$name" || fail "$page: NAME does not name $name"
done

# libbobox(7) against README.md: every settings row (allocator and pinning), whole.
seven=$(render "$mandir/man7/libbobox.7" | tr -s ' ')
rows=$(grep -E '^\| `BOBOX_' "$BOBOX_ROOT/README.md")
[ "$(wc -l <<<"$rows")" -ge 11 ] || fail "README.md's settings tables lost rows: $rows"
while IFS= read -r row; do
    IFS='|' read -r _ var _ <<<"$row"
    var=$(plain <<<"$var")
    meaning=$(awk -F' \\| ' '{ print $NF }' <<<"$row" | sed 's/ |$//' | plain)
    grep -qxF -- "$var" <<<"$seven" || fail "libbobox(7) lacks the entry $var"
    grep -qF -- "$meaning" <<<"$seven" || fail "libbobox(7) lacks $var's meaning as the README has it: $meaning"
done <<<"$rows"
for want in "SAFETY" "THREAD PINNING" "ENVIRONMENT" "bobox: free(): double free" "BOBOX_CHECK=1"; do
    grep -qF -- "$want" <<<"$seven" || fail "libbobox(7) lacks '$want'"
done

# bobox-run(1) against bobox-run --help: every option.
one=$(render "$mandir/man1/bobox-run.1")
opts=$("$BOBOX_ROOT/build/bobox-run" --help | sed -nE 's/^  (-[^ ]+( [^ ]+)*)( {2,}.*)?$/\1/p')
[ -n "$opts" ] || fail "no options in bobox-run --help"
while IFS= read -r opt; do
    sed -n '/^OPTIONS$/,/^ENVIRONMENT$/p' <<<"$one" | grep -qxF -- "$opt" || fail "bobox-run(1) lacks option $opt"
done <<<"$opts"
grep -qx 'BOBOX_PIN' <<<"$one" || fail "bobox-run(1) lacks BOBOX_PIN in ENVIRONMENT"

# Section 3: a page for every bobox_ function of the header, with its prototype.
funcs=$(sed -nE 's/^[a-z].*\b(bobox_[a-z0-9_]+)\(.*;$/\1/p' "$BOBOX_ROOT/include/bobox.h")
[ "$(wc -w <<<"$funcs")" -ge 20 ] || fail "too few functions found in bobox.h: $funcs"
for f in $funcs; do
    [ -e "$mandir/man3/$f.3" ] || fail "no man page for $f"
    proto=$(grep -E "\b$f\(" "$BOBOX_ROOT/include/bobox.h" | sed 's/ *$//')
    render "$mandir/man3/$f.3" | grep -qxF -- "$proto" || fail "$f.3 lacks its prototype: $proto"
done
echo "ok: $(wc -l <<<"$pages") man pages"
