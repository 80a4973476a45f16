/* remote.h - public lists for frees from other threads (DESIGN §4, Adapt).
 *
 * Each heap has an inbox and a list, both lock-free, neither growing with the thread count.
 * The inbox is a ring of object addresses: a sender reserves room for a whole batch with
 * one compare-and-swap and copies the addresses in, so the drain reads them from a few
 * sequential cache lines and its misses on the objects overlap. A list threaded through
 * the objects takes single frees and whatever does not fit; the drain must chase it, one
 * miss after another. Only the owner (or whoever holds an ownerless heap exclusively)
 * drains: the list with one exchange, the inbox by slot. */
#ifndef BX_REMOTE_H
#define BX_REMOTE_H

#include "heap.h"

/* Drain once this much is waiting for a heap whose thread is gone. */
#define BX_REMOTE_RECLAIM_BYTES (64 * BX_KB)

/* Pushes obj (of `size` bytes) onto h's list; returns the bytes now waiting. */
size_t bx_remote_push(bx_heap_t *h, void *obj, size_t size);
/* Pushes n objects of `bytes` in all: into the inbox if it has room, else onto the list.
 * Returns the bytes now waiting. */
size_t bx_remote_push_batch(bx_heap_t *h, void *const *objs, uint32_t n, size_t bytes);
/* Takes the whole list and returns it (NULL if empty), subtracting nothing yet. */
void *bx_remote_take(bx_heap_t *h);
/* Takes up to `max` addresses from the inbox into `out`; returns how many. */
uint32_t bx_remote_take_inbox(bx_heap_t *h, void **out, uint32_t max);
/* In a fork child (one thread): moves what the inbox holds onto the list, so that slots a
 * vanished thread reserved but never filled cannot stall it. */
void bx_remote_after_fork(bx_heap_t *h);

static inline bool bx_remote_pending(bx_heap_t *h) {
    uint32_t head = atomic_load_explicit(&h->inbox_head, memory_order_relaxed);
    return atomic_load_explicit(&h->remote, memory_order_relaxed) != NULL ||
           atomic_load_explicit(&h->inbox[head & (BX_INBOX_SLOTS - 1)], memory_order_relaxed) != NULL;
}

#endif
