/* retention.h - how much freed memory the allocator keeps, and when it gives it back.
 *
 * Every cache is bounded in base/bounds.h or by a setting (bx_options: BOBOX_CACHE_MB bounds each node's
 * superblock cache and the large-object cache, BOBOX_DECAY_MS how long anything may sit idle
 * in a cache). Release points, by level:
 *   TICK         once per decay delay on the owner's slow paths: kept objects of sizes the
 *                thread stopped allocating, block caches unused since the last tick, and the
 *                node and large caches' memory idle past the delay
 *   THREAD_EXIT  a thread exits: everything free in its heap goes back into its blocks and
 *                superblocks, pages kept (the heap waits for adoption; the reclaimer gives
 *                the pages back once it waited a decay delay, thread/reclaimer.c)
 *   TRIM         malloc_trim: everything free in every heap (a live thread other than the
 *                caller releases at its next malloc) and every cache
 *   OOM          a mapping failed: as TRIM for the caller, then the allocation is retried */
#ifndef BX_RETENTION_H
#define BX_RETENTION_H

#include "heap/heap.h"

enum bx_release_level { BX_RELEASE_TICK, BX_RELEASE_THREAD_EXIT, BX_RELEASE_TRIM, BX_RELEASE_OOM };

/* Registers the tick (bx_retention_tick_due) with the heap layer (bx_heap_set_tick_handler). */
void bx_retention_init(void);
/* The owner's slow paths: the TICK release when it is due, or a release another thread
 * asked for (bx_retention_request). */
void bx_retention_tick_due(bx_heap_t *h, uint64_t now_ns);
/* Gives back what a heap holds free, for `level` (TICK: only what sat idle). The caller owns
 * the heap or holds it exclusively. */
void bx_retention_release_heap(bx_heap_t *h, enum bx_release_level level);
/* The shared caches (node superblocks, large mappings): what is idle past the decay delay
 * (TICK) or everything (other levels). Any thread; returns the bytes given back. */
size_t bx_retention_release_shared(enum bx_release_level level);
/* Asks the live heap of another thread to release everything at its next malloc. */
void bx_retention_request(bx_heap_t *h);
/* The reclaimer's pass (reclaimer.h), from its own thread: the block caches of any heap that
 * took no block from them since the previous pass go back to the node. */
void bx_retention_reclaim_idle(bx_heap_t *h);
/* Called after every TICK release of a live thread's heap (the reclaimer starts from there). */
void bx_retention_set_tick_hook(void (*fn)(void));
/* The same, after a shared heap's tick, once its lock is given back. */
void bx_retention_after_tick(void);

#endif
