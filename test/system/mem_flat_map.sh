#!/usr/bin/env bash
# free's flat map: reserved and nearly free of memory without an address-space limit; absent
# under one (ulimit -v), where every free takes the two-level map: small objects, and the
# whole API suite (invalid and double frees included), still behave.
set -euo pipefail
BUILD=${BUILD:-build}
LD_PRELOAD=$BUILD/libbobox.so "$BUILD/test/progs/mem_flat_map" reserved
(
    ulimit -v 16000000
    LD_PRELOAD=$BUILD/libbobox.so "$BUILD/test/progs/mem_flat_map" absent
    LD_PRELOAD=$BUILD/libbobox.so "$BUILD/test/preload_api" >/dev/null
)
