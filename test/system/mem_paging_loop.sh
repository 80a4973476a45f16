#!/usr/bin/env bash
# test: serial
# (serial: no page faults after the first pass; memory back after the delay)
# Thesis program 7.1 with 256 MB buffers: no page faults after the first iteration, and the
# memory goes back once the program idles past the decay delay.
source "$(dirname "$0")/../lib/common.sh" || exit 1
set -eo pipefail
BOBOX_DECAY_MS=300 LD_PRELOAD=$BUILD/libbobox.so "$BUILD/test/progs/mem_paging"
