/* remote.c - the lock-free inbox and list of a heap. */
#include "remote.h"

/* Bytes are counted before the objects are published, so the drain never subtracts
 * what was not added yet. */
static void push_chain(bx_heap_t *h, void *first, void *last) {
    void *head = atomic_load_explicit(&h->remote, memory_order_relaxed);
    do {
        bx_link_set(last, head);
    } while (!atomic_compare_exchange_weak_explicit(&h->remote, &head, first, memory_order_release,
                                                    memory_order_relaxed));
}

size_t bx_remote_push(bx_heap_t *h, void *obj, size_t size) {
    size_t waiting = atomic_fetch_add_explicit(&h->remote_bytes, size, memory_order_relaxed) + size;
    push_chain(h, obj, obj);
    return waiting;
}

/* Reserves n consecutive slots; false if the inbox has no room for them. */
static bool inbox_reserve(bx_heap_t *h, uint32_t n, uint32_t *start) {
    uint32_t tail = atomic_load_explicit(&h->inbox_tail, memory_order_relaxed);
    do {
        /* Acquire: the drain emptied the slots below head before publishing it. */
        uint32_t head = atomic_load_explicit(&h->inbox_head, memory_order_acquire);
        if (tail - head > BX_INBOX_SLOTS - n) return false;
    } while (!atomic_compare_exchange_weak_explicit(&h->inbox_tail, &tail, tail + n, memory_order_relaxed,
                                                    memory_order_relaxed));
    *start = tail;
    return true;
}

size_t bx_remote_push_batch(bx_heap_t *h, void *const *objs, uint32_t n, size_t bytes) {
    size_t waiting = atomic_fetch_add_explicit(&h->remote_bytes, bytes, memory_order_relaxed) + bytes;
    uint32_t start;
    if (inbox_reserve(h, n, &start)) {
        for (uint32_t i = 0; i < n; i++)
            atomic_store_explicit(&h->inbox[(start + i) & (BX_INBOX_SLOTS - 1)], objs[i], memory_order_release);
        return waiting;
    }
    for (uint32_t i = 0; i + 1 < n; i++) bx_link_set(objs[i], objs[i + 1]);
    push_chain(h, objs[0], objs[n - 1]);
    return waiting;
}

void *bx_remote_take(bx_heap_t *h) {
    if (!atomic_load_explicit(&h->remote, memory_order_relaxed)) return NULL;
    return atomic_exchange_explicit(&h->remote, NULL, memory_order_acquire);
}

uint32_t bx_remote_take_inbox(bx_heap_t *h, void **out, uint32_t max) {
    uint32_t head = atomic_load_explicit(&h->inbox_head, memory_order_relaxed);
    uint32_t n = 0;
    /* Stops at the first empty slot: past the tail, or reserved and not filled yet. */
    while (n < max) {
        _Atomic(void *) *slot = &h->inbox[head & (BX_INBOX_SLOTS - 1)];
        void *obj = atomic_load_explicit(slot, memory_order_acquire);
        if (!obj) break;
        atomic_store_explicit(slot, NULL, memory_order_relaxed);
        out[n++] = obj;
        head++;
    }
    if (n) atomic_store_explicit(&h->inbox_head, head, memory_order_release);
    return n;
}

void bx_remote_after_fork(bx_heap_t *h) {
    uint32_t head = atomic_load_explicit(&h->inbox_head, memory_order_relaxed);
    uint32_t tail = atomic_load_explicit(&h->inbox_tail, memory_order_relaxed);
    for (; head != tail; head++) {
        _Atomic(void *) *slot = &h->inbox[head & (BX_INBOX_SLOTS - 1)];
        void *obj = atomic_load_explicit(slot, memory_order_relaxed);
        atomic_store_explicit(slot, NULL, memory_order_relaxed);
        if (obj) push_chain(h, obj, obj);
    }
    atomic_store_explicit(&h->inbox_head, head, memory_order_relaxed);
}
