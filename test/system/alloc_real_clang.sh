#!/usr/bin/env bash
# test: slow=31
# Real C++ program: clang++ -O2 (LLVM allocates through operator new and delete, so through
# libbobox.so's own operators) compiling a C++17 source full of standard containers, threads
# and templates produces the same object file as without the preload, in the default and in
# checked mode (where every sized delete is checked against the size allocated), and the
# program it links prints the same output.
source "$(dirname "$0")/../lib/common.sh" || exit 1
need_lib
CLANGXX=$(command -v clang++ || true)
[ -n "$CLANGXX" ] || { echo "clang++ not installed"; exit 77; }
SRC=$BOBOX_ROOT/test/progs/alloc_containers.cpp
cd "$TMP" || fail "cd $TMP"
check_loaded_into "$CLANGXX" -std=c++17 -fsyntax-only "$SRC"
compile() { # out.o runner
    "$2" "$TMP/$1.log" "$TMP/$1.err" "$CLANGXX" -std=c++17 -O2 -pthread -I"$BOBOX_ROOT/include" -c "$SRC" -o "$TMP/$1.o"
}
note "clang++ -O2 without the preload"
compile plain run_plain
for mode in 0 1; do
    note "clang++ -O2 with the preload, BOBOX_CHECK=$mode"
    BOBOX_CHECK=$mode compile bobox$mode run_preload
    same_output "$TMP/plain.err" "$TMP/bobox$mode.err" "clang++ diagnostics (BOBOX_CHECK=$mode)"
    if ! cmp -s plain.o "bobox$mode.o"; then
        objdump -d plain.o | tail -n +3 >plain.dis
        objdump -d "bobox$mode.o" | tail -n +3 >bobox.dis
        same_output plain.dis bobox.dis "disassembly of the object file (BOBOX_CHECK=$mode)"
    else
        echo "object files identical (BOBOX_CHECK=$mode)"
    fi
done
note "linking and running"
run_preload link.log link.err "$CLANGXX" -pthread bobox0.o -o prog -ldl
run_plain plain.run plain.run.err "$TMP/prog" 3000
run_preload bobox.run bobox.run.err "$TMP/prog" 3000
same_output plain.run bobox.run "program output"
echo "PASS"
