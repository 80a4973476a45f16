#!/usr/bin/env bash
# test: slow=110
# The unit, API and stress tests against the allocator built with clang
# -fsanitize=address,undefined (build/asan/, `make asan`): no ASan or UBSan report, all pass.
source "$(dirname "$0")/../lib/common.sh" || exit 1
set -o pipefail
bins=("$BUILD/asan/unit_alloc" "$BUILD/asan/unit_api" "$BUILD/asan/unit_stress")
for b in "${bins[@]}"; do
    [ -x "$b" ] && continue
    has_clang_rt asan && fail "$b not built although clang's ASan runtime is installed (make asan-bins)"
    skip "$b not built: no clang with its ASan runtime (scripts/deps.sh installs them)"
done
export ASAN_OPTIONS=detect_leaks=0:halt_on_error=1:detect_stack_use_after_return=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
rc=0
for b in "${bins[@]}"; do
    start=$SECONDS
    echo "== $b"
    if ! "$b" --durations no; then echo "FAILED: $b"; rc=1; fi
    echo "   ($((SECONDS - start)) s)"
done
exit $rc
