/* A lock-free single-producer single-consumer ring of pointers. Each side keeps its own index
 * and a cached copy of the other's, and reads the other's line only when the cache says the
 * ring is full (or empty): so the two threads share a cache line about once per ring's worth
 * of objects, and the queue costs little beside the allocator being measured. */
#ifndef BENCH_SPSC_RING_H
#define BENCH_SPSC_RING_H
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#define SPSC_RING_SIZE 1024 /* a power of two */

struct spsc_ring {
    _Alignas(64) atomic_size_t head; /* next slot to read: written by the consumer */
    size_t tail_seen;                /* the consumer's copy of tail */
    _Alignas(64) atomic_size_t tail; /* next slot to write: written by the producer */
    size_t head_seen;                /* the producer's copy of head */
    atomic_bool closed;              /* the producer will push nothing more */
    _Alignas(64) void *slot[SPSC_RING_SIZE];
};

/* Waiting yields the CPU after a few spins: the machine may have fewer cores than threads. */
static inline void spsc_wait(unsigned *spins)
{
    if (++*spins < 64) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#elif defined(__aarch64__)
        __asm__ volatile("yield");
#endif
    } else
        sched_yield();
}

static inline void spsc_push(struct spsc_ring *r, void *p)
{
    size_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);
    unsigned spins = 0;
    while (t - r->head_seen == SPSC_RING_SIZE) {
        r->head_seen = atomic_load_explicit(&r->head, memory_order_acquire);
        if (t - r->head_seen == SPSC_RING_SIZE)
            spsc_wait(&spins);
    }
    r->slot[t & (SPSC_RING_SIZE - 1)] = p;
    atomic_store_explicit(&r->tail, t + 1, memory_order_release);
}

static inline void spsc_close(struct spsc_ring *r)
{
    atomic_store_explicit(&r->closed, true, memory_order_release);
}

/* The next pointer, or NULL once the ring is closed and empty. */
static inline void *spsc_pop(struct spsc_ring *r)
{
    size_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
    unsigned spins = 0;
    while (h == r->tail_seen) {
        /* closed is read before tail: a push that precedes the close is then seen. */
        bool closed = atomic_load_explicit(&r->closed, memory_order_acquire);
        r->tail_seen = atomic_load_explicit(&r->tail, memory_order_acquire);
        if (h != r->tail_seen)
            break;
        if (closed)
            return NULL;
        spsc_wait(&spins);
    }
    void *p = r->slot[h & (SPSC_RING_SIZE - 1)];
    atomic_store_explicit(&r->head, h + 1, memory_order_release);
    return p;
}

#endif
