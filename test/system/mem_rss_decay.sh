#!/usr/bin/env bash
# test: serial
# (serial: it measures RSS against the peak after the decay delays)
# 1 GB from four threads, all freed: RSS at most 2% of the peak two decay delays later and one
# malloc (up to six on a loaded machine) (BOBOX_DECAY_MS=300 keeps the test short), at most 1% at once after malloc_trim(0).
set -euo pipefail
BUILD=${BUILD:-build}
BOBOX_DECAY_MS=300 LD_PRELOAD=$BUILD/libbobox.so "$BUILD/test/progs/mem_rss" decay
BOBOX_DECAY_MS=60000 LD_PRELOAD=$BUILD/libbobox.so "$BUILD/test/progs/mem_rss" trim
