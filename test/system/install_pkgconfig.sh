#!/usr/bin/env bash
# test: lock=install
# make install into a temporary prefix, then build programs against it with pkg-config:
# -lbobox (libbobox.so) makes the program's malloc, libc's internal calls and C++ new bobox's;
# the archive named by bobox.pc's `archive` variable gives only the bobox_ names, beside glibc's
# malloc. The installed bobox-run preloads the installed libraries.
source "$(dirname "$0")/../lib/install.sh" || exit 1
need_cmd pkg-config
prefix=$TMP/prefix
install_into PREFIX="$prefix"
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig

flags=$(pkg-config --cflags --libs bobox) || fail "pkg-config does not find bobox"
flags=${flags% }
[ "$flags" = "-I$prefix/include -L$prefix/lib -lbobox" ] || fail "pkg-config --cflags --libs bobox: $flags"
[ "$(pkg-config --variable=archive bobox)" = "$prefix/lib/libbobox.a" ] || fail "archive variable"
pkg-config --modversion bobox | grep -Eq '^[0-9]+\.[0-9]+\.[0-9]+$' || fail "version: $(pkg-config --modversion bobox)"

cat >"$TMP/linked.c" <<'C'
#include <bobox.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(void) {
    char *p = malloc(100), *d = strdup("libc allocates this"); /* strdup: libc's own call */
    void *q = bobox_malloc(5000);
    struct bobox_stats s;
    bobox_get_stats(&s);
    printf("%d %d %d %d\n", bobox_owns(p), bobox_owns(d), bobox_owns(q), s.small_allocs >= 3);
    void *volatile freed = p; /* hidden from the compiler's use-after-free warning */
    free(p); free(d); bobox_free(q);
    printf("%d\n", bobox_owns(freed));
    return 0;
}
C
cat >"$TMP/linked_cxx.cpp" <<'C'
#include <bobox.h>
#include <cstdio>
#include <string>
int main() {
    int *a = new int[100];
    std::string *s = new std::string(200, 'x');
    std::printf("%d %d %d\n", bobox_owns(a), bobox_owns(s), bobox_owns(s->data()));
    delete[] a; delete s;
    return 0;
}
C
libdir=$(pkg-config --variable=libdir bobox)
# shellcheck disable=SC2046 # pkg-config's output is meant to be split
cc -std=gnu11 -Wall -Wextra -Werror -o "$TMP/linked" "$TMP/linked.c" $(pkg-config --cflags --libs bobox) \
    -Wl,-rpath,"$libdir" || fail "cannot build a C program with pkg-config --cflags --libs bobox"
out=$("$TMP/linked") || fail "the linked C program failed"
[ "$out" = $'1 1 1 1\n0' ] || fail "-lbobox: malloc, libc's strdup, bobox_malloc owned / freed: $out"
readelf -d "$TMP/linked" | grep -q 'NEEDED.*\[libbobox.so\]' || fail "the program does not need libbobox.so"
# shellcheck disable=SC2046
c++ -std=c++17 -Wall -Wextra -Werror -o "$TMP/linked_cxx" "$TMP/linked_cxx.cpp" $(pkg-config --cflags --libs bobox) \
    -Wl,-rpath,"$libdir" || fail "cannot build a C++ program with pkg-config --cflags --libs bobox"
out=$("$TMP/linked_cxx") || fail "the linked C++ program failed"
[ "$out" = "1 1 1" ] || fail "-lbobox: new[], new, std::string's buffer owned: $out"

# The program also defines names the allocator uses inside: the archive must not clash.
cat >"$TMP/archive.c" <<'C'
#include <bobox.h>
#include <stdio.h>
#include <stdlib.h>
int bx_options = 7;
int bx_heap_alloc(int x) { return x + 1; }
int main(void) {
    void *sys = malloc(100), *ours = bobox_malloc(100);
    printf("%d %d %d\n", bobox_owns(sys), bobox_owns(ours), bx_heap_alloc(bx_options));
    free(sys); bobox_free(ours);
    return 0;
}
C
# shellcheck disable=SC2046
cc -std=gnu11 -Wall -Wextra -Werror -o "$TMP/archive" "$TMP/archive.c" $(pkg-config --cflags bobox) \
    "$(pkg-config --variable=archive bobox)" -pthread || fail "cannot build against the archive"
out=$("$TMP/archive") || fail "the program linked with libbobox.a failed"
[ "$out" = "0 1 8" ] || fail "libbobox.a: glibc's malloc and bobox_malloc owned, the program's own bx_ names: $out"
others=$(nm -g --defined-only "$prefix/lib/libbobox.a" | awk 'NF == 3 && $3 !~ /^bobox_/ { print $3 }')
[ -z "$others" ] || fail "the installed libbobox.a defines global names other than bobox_*: $(head -5 <<<"$others")"
readelf -d "$TMP/archive" | grep -q libbobox && fail "the archive's program needs a bobox shared library"

out=$("$prefix/bin/bobox-run" -- sh -c 'echo "$LD_PRELOAD"') || fail "installed bobox-run failed"
[ "$out" = "$(realpath "$prefix/lib/libbobox.so"):$(realpath "$prefix/lib/libbobox-pin.so")" ] ||
    fail "installed bobox-run preloads $out"
echo "ok: -lbobox, libbobox.a and bobox-run from $prefix"
