#!/usr/bin/env bash
# test: slow=40
# Real program: gcc -O2 compiling a large generated C file (400 functions, 300 KB) under
# LD_PRELOAD=libbobox.so (driver, cc1, as, ld all preloaded) produces the same object file
# (byte for byte and by disassembly) and a program with the same output as without it.
source "$(dirname "$0")/../lib/common.sh" || exit 1
need_lib
command -v gcc >/dev/null || { echo "gcc not installed"; exit 77; }
N=${ALLOC_GCC_FUNCS:-400}
cd "$TMP" || fail "cd $TMP"
awk -v N="$N" 'BEGIN {
    print "#include <stdio.h>"
    print "#include <string.h>"
    print "struct S { int a[16]; long b; double c; };"
    for (i = 0; i < N; i++) {
        k = (i * 7919) % 13
        printf "static long f%d(long x) {\n", i
        printf "    struct S s; memset(&s, 0, sizeof s); long acc = %d;\n", i
        printf "    for (int j = 0; j < %d; j++) { s.a[j & 15] += (int)(x * %d + j); acc ^= s.a[(j * %d) & 15] << (j & 7); }\n", 8 + k, i % 101 + 1, k + 1
        printf "    switch ((x + %d) %% 7) {\n", i
        for (c = 0; c < 7; c++) printf "    case %d: acc += %d * x - s.a[%d]; break;\n", c, (i + c) % 37, (c + i) % 16
        printf "    }\n"
        printf "    s.b = acc; s.c = (double)acc / %d.0;\n", k + 1
        printf "    if (acc & 1) acc = acc * 3 + 1; else acc /= 2;\n"
        if (i > 0) printf "    if (x > 0) acc += f%d(x - 1) & 0xff;\n", int(i / 2)
        printf "    return acc + (long)s.c + s.b %% 1000;\n}\n"
    }
    print "int main(void) {"
    print "    unsigned long sum = 0;"
    for (i = 0; i < N; i++) printf "    sum = sum * 31 + (unsigned long)f%d(%d);\n", i, i % 5
    print "    printf(\"%lu\\n\", sum);"
    print "    return 0;"
    print "}"
}' >big.c || fail "generating big.c"
echo "generated big.c: $(wc -c <big.c) bytes, $N functions"
check_loaded_into gcc -O2 -c big.c -o probe.o -fsyntax-only

note "gcc -O2 without the preload"
run_plain plain.log plain.err gcc -O2 -c big.c -o plain.o
note "gcc -O2 with the preload"
run_preload bobox.log bobox.err gcc -O2 -c big.c -o bobox.o
same_output plain.err bobox.err "gcc diagnostics"
if ! cmp -s plain.o bobox.o; then
    objdump -d plain.o | tail -n +3 >plain.dis
    objdump -d bobox.o | tail -n +3 >bobox.dis
    same_output plain.dis bobox.dis "disassembly of the object file"
    echo "note: object files differ in non-code bytes, disassembly identical"
else
    echo "object files identical"
fi
note "linking with the preload"
run_plain plain.link plain.link.err gcc plain.o -o plain.bin
run_preload bobox.link bobox.link.err gcc bobox.o -o bobox.bin
run_plain plain.run plain.run.err ./plain.bin
run_plain bobox.run bobox.run.err ./bobox.bin
same_output plain.run bobox.run "program output"
echo "PASS"
