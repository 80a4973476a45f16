#!/usr/bin/env bash
# Runs the libFuzzer harness build/fuzz/fuzz_ops for FUZZ_SECONDS (default 60) on the corpus
# in $FUZZ_DIR/corpus (kept between runs); crashes go to $FUZZ_DIR/artifacts/.
# Used by `make fuzz` and test/system/hardening_fuzz.sh. Reproduce a crash with
#   build/fuzz/fuzz_ops build/fuzz/artifacts/crash-<sha1>
# detect_leaks=0: the allocator's memory is mmap'ed (invisible to LSan); what LSan could
# report per input is thread bookkeeping of the RESTART operation, not the allocator.
set -euo pipefail
FUZZ_SECONDS=${FUZZ_SECONDS:-60}
FUZZ_DIR=${FUZZ_DIR:-build/fuzz}
FUZZ_BIN=${FUZZ_BIN:-$FUZZ_DIR/fuzz_ops}
mkdir -p "$FUZZ_DIR/corpus" "$FUZZ_DIR/artifacts"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:halt_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
exec "$FUZZ_BIN" -max_total_time="$FUZZ_SECONDS" -timeout=30 -rss_limit_mb=4096 -max_len=1024 -len_control=0 \
    -detect_leaks=0 -error_exitcode=1 -timeout_exitcode=1 -print_final_stats=1 -artifact_prefix="$FUZZ_DIR/artifacts/" "$FUZZ_DIR/corpus"
