#!/usr/bin/env bash
# Out of memory under RLIMIT_AS=512 MB: NULL and ENOMEM every time, no crash, and recovery.
set -euo pipefail
BUILD=${BUILD:-build}
LD_PRELOAD=$BUILD/libbobox.so "$BUILD/test/progs/mem_rlimit"
