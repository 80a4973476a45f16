#!/usr/bin/env bash
# test: lock=install
# make install DESTDIR=... installs exactly the expected files (libraries, header, launcher,
# bobox.pc, every man page); a second install over it changes nothing; make uninstall with the
# same variables removes exactly those and leaves files of others in the same directories;
# without them the staging tree is empty again. MANDIR moves the man pages.
source "$(dirname "$0")/../lib/install.sh" || exit 1
need_cmd python3
dest=$TMP/dest
listing() { (cd "$dest" && find . \( -type f -o -type l \) | sort); }
expected() {
    printf './usr/local/%s\n' lib/libbobox.so lib/libbobox.a lib/libbobox-pin.so lib/pkgconfig/bobox.pc \
        include/bobox.h bin/bobox-run
    man_pages | sed "s|^|.$1/|"
}

install_into DESTDIR="$dest" PREFIX=/usr/local
diff <(expected /usr/local/share/man | sort) <(listing) >"$TMP/diff" || fail "installed files differ from the expected list: $(cat "$TMP/diff")"
[ -L "$dest/usr/local/share/man/man3/bobox_free.3" ] || fail "bobox_free.3 is not a link to the family's page"
grep -qx 'prefix=/usr/local' "$dest/usr/local/lib/pkgconfig/bobox.pc" || fail "bobox.pc's prefix is not PREFIX (DESTDIR leaked?)"
before=$(cd "$dest" && find . -type f -exec md5sum {} + | sort)
install_into DESTDIR="$dest" PREFIX=/usr/local
[ "$before" = "$(cd "$dest" && find . -type f -exec md5sum {} + | sort)" ] || fail "a second install changed the tree"

# files of others beside ours stay
touch "$dest/usr/local/lib/libother.so" "$dest/usr/local/share/man/man3/other.3"
make -C "$BOBOX_ROOT" --no-print-directory uninstall DESTDIR="$dest" PREFIX=/usr/local >"$TMP/make.log" 2>&1 ||
    fail "make uninstall failed: $(tail -5 "$TMP/make.log")"
[ "$(listing)" = $'./usr/local/lib/libother.so\n./usr/local/share/man/man3/other.3' ] ||
    fail "uninstall left or removed the wrong files: $(listing)"
rm -r "$dest"

# install, uninstall: the staging tree is empty again
install_into DESTDIR="$dest" PREFIX=/opt/bobox MANDIR=/usr/share/man
[ -e "$dest/usr/share/man/man7/libbobox.7" ] && [ -e "$dest/opt/bobox/lib/libbobox.so" ] || fail "MANDIR not honoured: $(listing)"
make -C "$BOBOX_ROOT" --no-print-directory uninstall DESTDIR="$dest" PREFIX=/opt/bobox MANDIR=/usr/share/man >"$TMP/make.log" 2>&1 ||
    fail "make uninstall failed: $(tail -5 "$TMP/make.log")"
left=$(cd "$dest" && find . -mindepth 1)
[ -z "$left" ] || fail "uninstall left: $left"
echo "ok: $(expected x | wc -l) files installed and removed"
