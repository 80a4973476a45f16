#!/usr/bin/env bash
# make layers: no file of allocator/ includes a header of a layer above its own, no object
# calls a function defined above its layer, and the README's layout table lists every layer
# and file of allocator/layers.txt. Then the check itself is checked, on copies: an include
# that goes up, and an object of the lowest layer calling a function of the highest (the nm
# check), must each fail it.
source "$(dirname "$0")/../lib/common.sh" || exit 1
cd "$BOBOX_ROOT"
make -s layers || fail "make layers"
mkdir -p "$TMP/tree/scripts/test" && cp -r allocator README.md "$TMP/tree/" &&
    cp scripts/test/check-layers.sh "$TMP/tree/scripts/test/" || fail "copying the tree"
CHECK=$TMP/tree/scripts/test/check-layers.sh

# 1. An include going up.
cp -r "$TMP/tree/allocator" "$TMP/allocator.orig"
sed -i '0,/#include "base\/common.h"/s//#include "front\/fastpath.h"/' "$TMP/tree/allocator/base/bounds.h"
grep -q 'front/fastpath.h' "$TMP/tree/allocator/base/bounds.h" || fail "could not plant the include"
if out=$("$CHECK" "$BUILD/so" 2>&1); then
    fail "check-layers.sh passed a tree where base/bounds.h includes front/fastpath.h"
fi
grep -q 'base/ includes "front/fastpath.h" from front/' <<<"$out" || fail "unexpected report: $out"
rm -rf "$TMP/tree/allocator" && mv "$TMP/allocator.orig" "$TMP/tree/allocator"

# 2. A call going up, seen only by nm: a copy of the objects with one more object in the
# lowest layer that calls a function one of the highest layer's objects defines.
mapfile -t order < <(awk '!/^#/ && NF {print $1}' allocator/layers.txt)
low=${order[0]} high=${order[-1]}
cp -r "$BUILD/so" "$TMP/so"
sym=$(nm --defined-only "$BUILD"/so/"$high"/*.o | awk '$2 == "T" && $3 ~ /^(bx|bobox)_/ {print $3; exit}')
[ -n "$sym" ] || fail "no bx_ or bobox_ function defined in $high/ to call"
printf 'void %s(void);\nvoid bx_planted_upcall(void) { %s(); }\n' "$sym" "$sym" >"$TMP/planted.c"
cc -c -o "$TMP/so/$low/planted.o" "$TMP/planted.c" || fail "could not build the planted object"
if out=$("$CHECK" "$TMP/so" 2>&1); then
    fail "check-layers.sh passed objects where $low/planted.o calls $sym of $high/"
fi
# The planted call, and nothing else (make layers passed the same objects without it).
grep -q "$low/planted.o ($low/) calls $sym of $high/, a layer above it" <<<"$out" &&
    grep -qx "layers: 1 problem(s)" <<<"$out" || fail "unexpected report: $out"
echo "make layers passes; a planted upward include and a planted upward call ($low/ -> $sym of $high/) each fail it"
