#!/usr/bin/env bash
# test: slow=36 serial
# The VM tests' placement and pinning checks (scripts/test/test-vm.sh --quick) on one guest of
# 2 packages x 2 NUMA nodes x 2 cores x 2 threads: every thread's affinity against the guest
# kernel's topology, bobox-run --plan against the shim, and the NUMA node of small, medium and
# large objects (move_pages). A missing QEMU or a failed boot fails. `make test-vm` runs all.
# Serial: the emulated guest's 8 CPUs take the whole machine.
source "$(dirname "$0")/../lib/common.sh" || exit 1
exec "$BOBOX_ROOT/scripts/test/test-vm.sh" --quick 2x2x2x2
