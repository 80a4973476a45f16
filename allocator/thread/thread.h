/* thread.h - which thread owns which heap: creation or adoption at a thread's first call,
 * abandonment at its exit, the orphan heap for threads past their own teardown, and fork.
 *
 * Heaps are never unmapped: a thread that exits abandons its heap (after giving back what
 * it can) and the next thread on the same node adopts it, so memory is neither lost nor
 * leaked and short-lived threads cost no superblock traffic.
 *
 * Lock order (fork_prepare takes them all in it): the registry lock (every heap, the
 * abandoned list), then the orphan heap's lock, then the large cache's and the samples'
 * pool's (mem/samplepool.h), then the nodes' in index order. No path takes an earlier one
 * while holding a later one. */
#ifndef BX_THREAD_H
#define BX_THREAD_H

#include "heap/retention.h"

extern BX_TLS bx_heap_t *bx_tls_heap;
/* The heap the inline fast path of free uses: the thread's heap, or NULL in checked mode,
 * so that every call takes the checked slow path at no cost to the default. */
extern BX_TLS bx_heap_t *bx_tls_fast;
/* What malloc's inline fast path reads of its thread, in one block (one address to load).
 * bin_for: the table it finds its bin in, by 16-byte step: the thread's heap's, or one whose
 * entries all name bx_heap_bin_none (no heap yet, after the thread's teardown, checked
 * mode), so that every allocation from it fails into the slow path and the fast path tests
 * no heap pointer. A table per heap, not one shared table of offsets: the thread's pointer
 * is its base, so a step's bin is one load.
 * sample_left: bytes the thread may allocate before the heap profiler's next sample (prof.h);
 * INT64_MAX when it is off. Every malloc subtracts its size; below zero, the slow path. */
typedef struct {
    bx_bin_t **bin_for;
    int64_t sample_left;
} bx_tls_alloc_t;
extern BX_TLS bx_tls_alloc_t bx_tls_alloc;
/* Where a new heap's countdown starts (the profiler registers its random interval; none:
 * INT64_MAX, never due). */
void bx_thread_set_countdown_start(int64_t (*fn)(void));

void bx_thread_global_init(void);
/* Registers the fork handlers; may allocate, so it runs once the allocator works. */
void bx_thread_register_fork_handlers(void);

/* The calling thread's heap, created or adopted on first use; NULL for a thread past its
 * own teardown (it then goes through the orphan heap) or when memory cannot be had. */
bx_heap_t *bx_thread_acquire(void);
static inline bx_heap_t *bx_thread_heap(void) { return bx_tls_heap ? bx_tls_heap : bx_thread_acquire(); }
/* Allocation for a thread past its own teardown: the shared orphan heap, under its lock. */
void *bx_thread_alloc_orphan(size_t size);

/* malloc_trim and out of memory: the caller's heap and every ownerless one give back what
 * is free; every other live heap is asked to at its owner's next malloc. */
void bx_thread_release_all(enum bx_release_level level);
/* Waits, up to `max_ns`, until every live heap of another thread has done what the last
 * bx_thread_release_all asked; true if one still had a request pending at the start (a
 * retry may then find memory). */
bool bx_thread_await_releases(uint64_t max_ns);

/* Walks every heap (stats); the callback must not allocate. */
void bx_thread_for_each_heap(void (*fn)(bx_heap_t *, void *), void *arg);

#endif
