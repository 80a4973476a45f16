/* bounds.h - how much each cache of freed memory may hold (the release points that give it
 * back are heap/retention.h's; the settings BOBOX_CACHE_MB and BOBOX_DECAY_MS, os/options.h). */
#ifndef BX_BOUNDS_H
#define BX_BOUNDS_H

#include "base/common.h"

/* Keep blocks (keep.h): per bin, BX_KEEP_BYTES worth of objects within [MIN, MAX]; per heap,
 * at most BX_KEEP_HEAP_BYTES that no chain counts. */
#define BX_KEEP_BYTES (256 * BX_KB)
#define BX_KEEP_MIN 4
#define BX_KEEP_MAX 1024
#define BX_KEEP_HEAP_BYTES (2 * BX_MB)
/* All of a heap's keep blocks, counted by chains or not: past BX_KEEP_HELD_BYTES every keep
 * that holds objects takes no more; below a quarter of it all take up to their capacity again.
 * Checked every BX_KEEP_BALANCE_FREES frees of other heaps' objects. */
#define BX_KEEP_HELD_BYTES (4 * BX_MB)
#define BX_KEEP_BALANCE_FREES 256

/* Block caches (blockcache.h), bounded by the superblocks they hold blocks of (DESIGN §5). */
/* A small block cache lends what it holds beyond this to an empty one of its node; a borrower
 * looks at this many caches, starting where it last found one. */
#define BX_LEND_RESERVE_BLOCKS 16
#define BX_LEND_SCAN 64
#define BX_SMALL_BLOCK_CACHE_SUPERBLOCKS 8
#define BX_MEDIUM_BLOCK_CACHE_SUPERBLOCKS 1
/* Medium blocks are large: a bin's cache also holds at most this much, so that blocks a
 * thread has moved on from go back, their superblock can empty, and the node can hand it
 * (its pages already touched) to another bin. */
#define BX_MEDIUM_BLOCK_CACHE_BYTES (1 * BX_MB)

/* A cached large mapping that serves a smaller request leaves its tail in the cache as a
 * mapping of its own when the tail is at least this much, and more than a quarter of the
 * request (large.c). */
#define BX_LARGE_SPLIT_MIN (1 * BX_MB)

/* A thread allocates from the heap its CPU shares with other threads, under that heap's
 * lock, until it proves busy: BX_BUSY_OPS mallocs and frees within BX_BUSY_WINDOW_MS. Then
 * it gets a heap of its own (thread.h). */
#define BX_BUSY_OPS 1024
#define BX_BUSY_WINDOW_MS 100

/* A heap's remote frees are drained once this much waits (DESIGN §4). */
#define BX_REMOTE_DRAIN_BYTES BX_MB

#endif
