#!/usr/bin/env bash
# test: serial
# (serial: it measures RSS)
# Memory that does not grow with the number of threads: 300 threads each holding 330 KB cost
# at most 1.15x that in RSS and map at most 2x RSS, and it goes back within a few decay delays
# once they end; freed blocks of superblocks still in use give their pages back on a trim
# (test/progs/mem_threads.c); threads that come and go one after another leave their heap
# holding about the widest one's objects, not every block it had whole; workers that replace
# what a thread waiting in pthread_join built get its memory back. About 6 s.
source "$(dirname "$0")/../lib/common.sh" || exit 1
need_lib
need_prog mem_threads
BOBOX_DECAY_MS=300 LD_PRELOAD=$SO "$PROGS/mem_threads" threads 300 || fail "many threads: mem_threads exited with $?"
LD_PRELOAD=$SO "$PROGS/mem_threads" pinned || fail "pinned superblocks: mem_threads exited with $?"
# No tick gives pages back meanwhile: what stays resident is what the blocks' reuse touched.
BOBOX_DECAY_MS=10000 LD_PRELOAD=$SO "$PROGS/mem_threads" churn || fail "threads one after another: mem_threads exited with $?"
LD_PRELOAD=$SO "$PROGS/mem_threads" join || fail "workers replacing what a waiting thread built: mem_threads exited with $?"
echo "mem_threads: ok"
