#!/usr/bin/env bash
# 1 GB from four threads, all freed: RSS below 25% of the peak after the decay delay and one
# malloc (BOBOX_DECAY_MS=300 keeps the test short), and at once after malloc_trim(0).
set -euo pipefail
BUILD=${BUILD:-build}
BOBOX_DECAY_MS=300 LD_PRELOAD=$BUILD/libbobox.so "$BUILD/test/progs/mem_rss" decay
BOBOX_DECAY_MS=60000 LD_PRELOAD=$BUILD/libbobox.so "$BUILD/test/progs/mem_rss" trim
