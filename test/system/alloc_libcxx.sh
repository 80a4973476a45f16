#!/usr/bin/env bash
# The C++ operators with LLVM's C++ runtime (libc++ and libc++abi) instead of libstdc++:
# under LD_PRELOAD=libbobox.so, operator new is bobox's; out of memory, libc++abi's runs the
# new-handler loop and throws std::bad_alloc (nothrow: NULL); a program replacing only new
# and delete keeps them paired (alloc_cxx_replace); containers passed between threads give
# the same output (alloc_containers). Skipped where clang++ cannot link against libc++.
source "$(dirname "$0")/../lib/common.sh" || exit 1
need_lib
CLANGXX=$(command -v clang++ || true)
[ -n "$CLANGXX" ] || { echo "clang++ not installed"; exit 77; }
# -fno-builtin: at -O2 clang 14 otherwise rewrites some new/delete pairs of alloc_cxx_replace
# so that its own delete gets a pointer from malloc even without the preload.
build() { # name source
    "$CLANGXX" -stdlib=libc++ -std=c++17 -O2 -fno-builtin -pthread -I"$BOBOX_ROOT/include" -o "$TMP/$1" "$2" -ldl 2>"$TMP/$1.build"
}
if ! build cxx_oom "$BOBOX_ROOT/test/progs/libcxx/cxx_oom.cpp"; then
    head -3 "$TMP/cxx_oom.build"
    echo "clang++ -stdlib=libc++ cannot build here (libc++-dev missing?)"; exit 77
fi
ldd "$TMP/cxx_oom" | grep -q "libc++abi" || fail "cxx_oom is not linked against libc++abi"
build alloc_cxx_replace "$BOBOX_ROOT/test/progs/alloc_cxx_replace.cpp" || { cat "$TMP/alloc_cxx_replace.build"; fail "building alloc_cxx_replace"; }
build alloc_containers "$BOBOX_ROOT/test/progs/alloc_containers.cpp" || { cat "$TMP/alloc_containers.build"; fail "building alloc_containers"; }

note "cxx_oom"
run_plain "$TMP/oom.plain" "$TMP/oom.plain.err" "$TMP/cxx_oom"
grep -q "_Znwm from libc++abi" "$TMP/oom.plain.err" || fail "plain run: $(cat "$TMP/oom.plain.err")"
run_preload "$TMP/oom.bobox" "$TMP/oom.bobox.err" "$TMP/cxx_oom"
grep -q "_Znwm from libbobox.so" "$TMP/oom.bobox.err" || fail "under the preload operator new is not bobox's: $(cat "$TMP/oom.bobox.err")"
same_output "$TMP/oom.plain" "$TMP/oom.bobox" "cxx_oom output"
grep -q "bad_alloc after 2 new-handler calls" "$TMP/oom.bobox" || fail "no new-handler loop: $(cat "$TMP/oom.bobox")"
for p in alloc_cxx_replace alloc_containers; do
    note "$p (libc++)"
    run_plain "$TMP/$p.plain" "$TMP/$p.plain.err" "$TMP/$p"
    run_preload "$TMP/$p.bobox" "$TMP/$p.bobox.err" "$TMP/$p"
    grep -q "bobox: active" "$TMP/$p.bobox.err" || fail "$p under the preload: $(cat "$TMP/$p.bobox.err")"
    same_output "$TMP/$p.plain" "$TMP/$p.bobox" "$p output (libc++)"
done
cat "$TMP/oom.bobox"
echo "PASS"
