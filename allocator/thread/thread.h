/* thread.h - which thread owns which heap: the shared heaps of threads not yet busy,
 * creation or adoption once a thread proves busy, abandonment at its exit, and fork.
 *
 * A thread starts without a heap of its own: it allocates from the heap its CPU shares with
 * other threads, under that heap's lock, and frees an object of a shared heap under the
 * object's heap's lock. Once it makes BX_BUSY_OPS mallocs and frees within
 * BX_BUSY_WINDOW_MS (base/bounds.h), it takes its CPU's shared heap for its own (a new one
 * serves the others), where its malloc and free take no lock and no atomic operation. So a thread that holds a few objects costs no
 * block per size and no superblock; a thread past its own teardown uses the shared heaps
 * too.
 *
 * Heaps are never unmapped: a thread that exits abandons its heap (after giving back what
 * it can) and the next thread on the same node adopts it, so memory is neither lost nor
 * leaked and short-lived threads cost no superblock traffic.
 *
 * Lock order (fork_prepare takes them all in it): the registry lock (every heap, the
 * abandoned list, the shared heaps' slots), then the shared heaps' locks in slot order, then the large cache's and the samples'
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

/* Gives the calling thread a heap of its own, adopted or created; NULL for a thread past its
 * own teardown or when memory cannot be had. */
bx_heap_t *bx_thread_acquire(void);
/* The calling thread's heap; NULL for a thread not yet busy or past its own teardown (it
 * goes through a shared heap). In checked mode every thread has one from its first call. */
bx_heap_t *bx_thread_heap_slow(void);
static inline bx_heap_t *bx_thread_heap(void) { return bx_tls_heap ? bx_tls_heap : bx_thread_heap_slow(); }
/* Counts a malloc or free (of an object of `freed_from`'s) of a thread without a heap: its
 * own heap once it proves busy. */
bx_heap_t *bx_thread_count_op(bx_heap_t *freed_from);
/* Takes a shared heap's lock (or tries, without `wait`): the caller is its owner until
 * bx_thread_unlock_shared. False, and nothing taken, for a heap that is not shared. */
bool bx_thread_lock_shared(bx_heap_t *h, bool wait);
void bx_thread_unlock_shared(bx_heap_t *h);
/* Allocation for a thread without a heap: its CPU's shared heap, under its lock. */
void *bx_thread_alloc_shared(size_t size);

/* A thread about to wait long (front/join.c) leaves its heap as at its exit, so that other
 * threads' frees of its objects are drained and reused meanwhile, not held until it runs
 * again; the heap, or NULL if it had none to leave. Unpark takes it back, if no thread
 * adopted it meanwhile (else the thread's next malloc finds a heap as a new thread does). */
bx_heap_t *bx_thread_park(void);
void bx_thread_unpark(bx_heap_t *h);

/* malloc_trim and out of memory: the caller's heap and every ownerless one give back what
 * is free; every other live heap is asked to at its owner's next malloc. */
void bx_thread_release_all(enum bx_release_level level);
/* Waits, up to `max_ns`, until every live heap of another thread has done what the last
 * bx_thread_release_all asked; true if one still had a request pending at the start (a
 * retry may then find memory). */
bool bx_thread_await_releases(uint64_t max_ns);

/* bx_heap_check of every shared heap, each under its lock; false on any inconsistency. */
bool bx_thread_check_shared(void);
/* bx_heap_check_heads of every shared heap, each under its lock. */
void bx_thread_check_heads_shared(const char *op);

/* Walks every heap (stats); the callback must not allocate. */
void bx_thread_for_each_heap(void (*fn)(bx_heap_t *, void *), void *arg);

#endif
