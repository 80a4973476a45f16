#!/usr/bin/env bash
# make layers: no file of allocator/ includes a header of a layer above its own, no object
# calls a function defined above its layer, and the README's layout table lists every layer
# and file of allocator/layers.txt. Then the check itself is checked: an include that goes
# up, planted in a copy of the tree, must fail it.
set -u
cd "$BOBOX_ROOT"
make -s layers || exit 1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/scripts/test" && cp -r allocator README.md "$tmp/" && cp scripts/test/check-layers.sh "$tmp/scripts/test/"
sed -i '0,/#include "base\/common.h"/s//#include "front\/fastpath.h"/' "$tmp/allocator/base/bounds.h"
grep -q 'front/fastpath.h' "$tmp/allocator/base/bounds.h" || { echo "could not plant the include"; exit 1; }
if out=$("$tmp/scripts/test/check-layers.sh" "$BUILD/so" 2>&1); then
    echo "check-layers.sh passed a tree where base/bounds.h includes front/fastpath.h"; exit 1
fi
grep -q 'base/ includes "front/fastpath.h" from front/' <<<"$out" || { echo "unexpected report: $out"; exit 1; }
echo "make layers passes; a planted upward include fails it"
