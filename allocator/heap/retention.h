/* retention.h - how much freed memory the allocator keeps, and when it gives it back.
 *
 * Every cache is bounded here or by a setting (bx_options: BOBOX_CACHE_MB bounds each node's
 * superblock cache and the large-object cache, BOBOX_DECAY_MS how long anything may sit idle
 * in a cache). Release points, by level:
 *   TICK         once per decay delay on the owner's slow paths: kept objects of sizes the
 *                thread stopped allocating, block caches unused since the last tick, and the
 *                node and large caches' memory idle past the delay
 *   THREAD_EXIT  a thread exits: everything free in its heap (the heap waits for adoption)
 *   TRIM         malloc_trim: everything free in every heap (a live thread other than the
 *                caller releases at its next malloc) and every cache
 *   OOM          a mapping failed: as TRIM for the caller, then the allocation is retried */
#ifndef BX_RETENTION_H
#define BX_RETENTION_H

#include "base/common.h"
#include "os/os.h"

/* Keep blocks (keep.h): per bin, BX_KEEP_BYTES worth of objects within [MIN, MAX]; per heap,
 * at most BX_KEEP_HEAP_BYTES that no chain counts. */
#define BX_KEEP_BYTES (256 * BX_KB)
#define BX_KEEP_MIN 4
#define BX_KEEP_MAX 1024
#define BX_KEEP_HEAP_BYTES (2 * BX_MB)

/* Block caches (blockcache.h), bounded by the superblocks they hold blocks of (DESIGN §5). */
#define BX_SMALL_BLOCK_CACHE_SUPERBLOCKS 8
#define BX_MEDIUM_BLOCK_CACHE_SUPERBLOCKS 1
/* Medium blocks are large: a bin's cache also holds at most this much, so that blocks a
 * thread has moved on from go back, their superblock can empty, and the node can hand it
 * (its pages already touched) to another bin. */
#define BX_MEDIUM_BLOCK_CACHE_BYTES (1 * BX_MB)

/* A heap's remote frees are drained once this much waits (DESIGN §4). */
#define BX_REMOTE_DRAIN_BYTES BX_MB

enum bx_release_level { BX_RELEASE_TICK, BX_RELEASE_THREAD_EXIT, BX_RELEASE_TRIM, BX_RELEASE_OOM };

struct bx_heap;
/* The owner's slow paths: the TICK release when it is due, or a release another thread
 * asked for (bx_retention_request). Inline: every medium malloc makes the check. */
void bx_retention_tick_due(struct bx_heap *h, uint64_t now_ns);
/* A tick is wanted before its time: the process just became big enough for the reclaimer,
 * which starts at a tick (no lock is held there). */
static inline bool bx_retention_tick_wanted(void) {
    return BX_UNLIKELY(__atomic_load_n(&bx_os_big, __ATOMIC_RELAXED) == BX_OS_BECAME_BIG);
}
/* Gives back what a heap holds free, for `level` (TICK: only what sat idle). The caller owns
 * the heap or holds it exclusively. */
void bx_retention_release_heap(struct bx_heap *h, enum bx_release_level level);
/* The shared caches (node superblocks, large mappings): what is idle past the decay delay
 * (TICK) or everything (other levels). Any thread; returns the bytes given back. */
size_t bx_retention_release_shared(enum bx_release_level level);
/* Asks the live heap of another thread to release everything at its next malloc. */
void bx_retention_request(struct bx_heap *h);
/* The reclaimer's pass (reclaimer.h), from its own thread: the block caches of any heap that
 * took no block from them since the previous pass go back to the node. */
void bx_retention_reclaim_idle(struct bx_heap *h);
/* Called after every TICK release (the reclaimer starts from there). */
void bx_retention_set_tick_hook(void (*fn)(void));

#endif
