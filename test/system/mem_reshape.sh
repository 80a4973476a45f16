#!/usr/bin/env bash
# test: serial
# (serial: it measures RSS)
# Freed memory any size can reuse: after a live set of 16-512 B objects loses a random 90%,
# the pages of its blocks that hold no live object go back, both when the heap grows in
# other sizes (peak at most 1.5x the live bytes: 2.09x when only whole blocks went back, 1.83x
# with pages alone, 1.38x with mixed blocks filling the gaps between the survivors) and
# when the sizes stay idle for a decay delay (a fifth of the fill back); the sizes then
# allocated again get those slots back intact (test/progs/mem_reshape.c). And the gaps
# the growth fills are the pages it found resident: a size that stays still keeps its sparse
# blocks' pages for them, rather than giving them back to fault them in again (17 MB of the
# 64 did). The decay tick, which gives back every idle page, is kept out of that run: a slow
# machine could tick in the middle of it. About 4 s.
source "$(dirname "$0")/../lib/common.sh" || exit 1
need_lib
need_prog mem_reshape
LD_PRELOAD=$SO "$PROGS/mem_reshape" grow 64 || fail "shape change: mem_reshape grow exited with $?"
BOBOX_DECAY_MS=60000 MAX_REFAULT_KB=4096 LD_PRELOAD=$SO "$PROGS/mem_reshape" grow 64 ||
    fail "refaults: mem_reshape grow exited with $?"
BOBOX_DECAY_MS=300 LD_PRELOAD=$SO "$PROGS/mem_reshape" idle 64 || fail "idle sizes: mem_reshape idle exited with $?"
echo "mem_reshape: ok"
