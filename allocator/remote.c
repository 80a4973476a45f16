/* remote.c - the lock-free public list of a heap. */
#include "remote.h"

size_t bx_remote_push_chain(bx_heap_t *h, void *first, void *last, size_t bytes) {
    void *head = atomic_load_explicit(&h->remote, memory_order_relaxed);
    do {
        *(void **)last = head;
    } while (!atomic_compare_exchange_weak_explicit(&h->remote, &head, first, memory_order_release,
                                                    memory_order_relaxed));
    return atomic_fetch_add_explicit(&h->remote_bytes, bytes, memory_order_relaxed) + bytes;
}

size_t bx_remote_push(bx_heap_t *h, void *obj, size_t size) { return bx_remote_push_chain(h, obj, obj, size); }

void *bx_remote_take(bx_heap_t *h) {
    if (!atomic_load_explicit(&h->remote, memory_order_relaxed)) return NULL;
    return atomic_exchange_explicit(&h->remote, NULL, memory_order_acquire);
}
