#!/usr/bin/env bash
# test: slow=60
# 60 s of libFuzzer on test/fuzz/fuzz_ops.cpp (operation sequences on bobox_* in four
# threads, ASan+UBSan): no crash. The corpus stays in build/fuzz/corpus between runs; a crash
# input is written to build/fuzz/artifacts/ (reproduce: FUZZ_TRACE=1 build/fuzz/fuzz_ops FILE).
source "$(dirname "$0")/../lib/common.sh" || exit 1
set -o pipefail
bin=$BUILD/fuzz/fuzz_ops
if [ ! -x "$bin" ]; then
    has_clang_rt fuzzer && fail "$bin not built although clang's libFuzzer is installed (make fuzz-bin)"
    skip "$bin not built: no clang with libFuzzer (scripts/deps.sh installs them)"
fi
FUZZ_SECONDS=${FUZZ_SECONDS:-60} FUZZ_BIN=$bin FUZZ_DIR=$BUILD/fuzz "$BOBOX_ROOT/test/fuzz/run-fuzz.sh"
