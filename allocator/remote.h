/* remote.h - public lists for frees from other threads (DESIGN §4, Adapt).
 *
 * One lock-free list per heap: any thread pushes with a compare-and-swap; only the
 * owner (or whoever holds an ownerless heap exclusively) takes the whole list with one
 * exchange, so there is no ABA and nothing grows with the square of the thread count. */
#ifndef BX_REMOTE_H
#define BX_REMOTE_H

#include "heap.h"

/* Drain once this much is waiting for a heap whose thread is gone. */
#define BX_REMOTE_RECLAIM_BYTES (64 * BX_KB)

/* Pushes obj (of `size` bytes) onto h's list; returns the bytes now waiting. */
size_t bx_remote_push(bx_heap_t *h, void *obj, size_t size);
/* Pushes a chain first..last (linked through their first words) with one compare-and-swap. */
size_t bx_remote_push_chain(bx_heap_t *h, void *first, void *last, size_t bytes);
/* Takes the whole list and returns it (NULL if empty), subtracting nothing yet. */
void *bx_remote_take(bx_heap_t *h);
static inline bool bx_remote_pending(bx_heap_t *h) {
    return atomic_load_explicit(&h->remote, memory_order_relaxed) != NULL;
}

#endif
