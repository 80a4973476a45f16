#!/usr/bin/env bash
# test: slow=30 serial
# The stress tests against the allocator built with clang -fsanitize=thread (build/tsan/): no
# unsuppressed ThreadSanitizer report (test/tsan.supp says why bx_large_realloc is suppressed).
# The thread-heavy API tests under TSan take about 70 s more: `make tsan` runs them too.
# Serial: beside other tests its threads wait on each other for far longer under TSan (the
# model test: 14 s alone, 86 s beside two stress runs, using no more CPU).
source "$(dirname "$0")/../lib/common.sh" || exit 1
set -o pipefail
b=$BUILD/tsan/unit_stress
if [ ! -x "$b" ]; then
    has_clang_rt tsan && fail "$b not built although clang's TSan runtime is installed (make tsan-bins)"
    skip "$b not built: no clang with its TSan runtime (scripts/deps.sh installs them)"
fi
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:die_after_fork=0:suppressions=$BOBOX_ROOT/test/tsan.supp"
"$b" --durations yes
