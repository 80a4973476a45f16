#!/usr/bin/env bash
# test: slow=60
# 60 s of libFuzzer on test/fuzz/fuzz_ops.cpp (operation sequences on bobox_* in four
# threads, ASan+UBSan): no crash. The corpus stays in build/fuzz/corpus between runs; a crash
# input is written to build/fuzz/artifacts/ (reproduce: FUZZ_TRACE=1 build/fuzz/fuzz_ops FILE).
set -uo pipefail
BUILD=${BUILD:-build}
BOBOX_ROOT=${BOBOX_ROOT:-.}
bin=$BUILD/fuzz/fuzz_ops
if [ ! -x "$bin" ]; then echo "skipped: $bin not built (needs clang with libFuzzer; make fuzz-bin)"; exit 77; fi
FUZZ_SECONDS=${FUZZ_SECONDS:-60} FUZZ_BIN=$bin FUZZ_DIR=$BUILD/fuzz "$BOBOX_ROOT/test/fuzz/run-fuzz.sh"
