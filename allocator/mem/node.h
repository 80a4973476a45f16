/* node.h - one superblock allocator per NUMA node (DESIGN §5).
 *
 * The only structure threads share on the allocation side: superblock traffic is rare.
 * Fresh superblocks are mmap'ed, 64 KB aligned, and bound to their node with mbind.
 * Freed superblocks wait in a bounded cache for reuse (first touch is slow, DESIGN §1)
 * and go back to the OS once unused for longer than the decay delay. */
#ifndef BX_NODE_H
#define BX_NODE_H

#include "mem/superblock.h"

#define BX_MAX_NODES 64
#define BX_MAX_CPUS 4096

/* Reads the CPU-to-node map from /sys (no malloc). */
void bx_node_init(void);
#ifdef BX_TESTING
/* Replaces the CPU-to-node map (tests simulate machines with several nodes). */
void bx_node_set_map(const int *cpu_to_node, int cpus, int nodes);
#endif
int bx_node_count(void);
int bx_node_of_cpu(int cpu);
/* Node of the CPU the calling thread runs on now. */
int bx_node_current(void);

/* A superblock of `node` registered in the pagemap under `tag`, or NULL (ENOMEM). */
bx_superblock_t *bx_node_take(int node, unsigned tag);
/* Takes back an entirely free superblock. */
void bx_node_give(bx_superblock_t *sb);
/* While set (by the calling thread), superblocks given back count as idle for a whole decay
 * delay already, and go back to the OS at once: a decay releasing memory that nobody used
 * for that long would otherwise leave it in the node's cache for a second delay. */
extern __thread bool bx_node_giving_idle __attribute__((visibility("hidden")));
/* Returns cached superblocks to the OS: those idle past the decay delay, or all.
 * Returns the bytes released. */
size_t bx_node_purge(bool all);

/* For stats and the fork handlers. */
size_t bx_node_superblocks_in_use(void);
size_t bx_node_superblocks_cached(void);
size_t bx_node_superblocks_in_use_on(int node);
size_t bx_node_superblocks_cached_on(int node);
void bx_node_lock_all(void);
void bx_node_unlock_all(void);
void bx_node_reset_locks(void);

#endif
