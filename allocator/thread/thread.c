/* thread.c - heaps and threads: acquire, adopt, abandon, the orphan heap, fork. */
#define _GNU_SOURCE
#include "thread/thread.h"

#include <pthread.h>
#include <sched.h>
#include <stddef.h>

#include "mem/large.h"
#include "base/lock.h"
#include "mem/node.h"
#include "os/options.h"

BX_TLS bx_heap_t *bx_tls_heap;
BX_TLS bx_heap_t *bx_tls_fast;
static bx_bin_t *bin_for_none[BX_SMALL_STEPS] = {[0 ... BX_SMALL_STEPS - 1] = &bx_heap_bin_none};
BX_TLS bx_tls_alloc_t bx_tls_alloc = {bin_for_none, INT64_MAX};
static BX_TLS bool tls_torn_down; /* past our own per-thread teardown */
static int64_t (*countdown_start)(void);
void bx_thread_set_countdown_start(int64_t (*fn)(void)) { countdown_start = fn; }

static bx_lock_t registry_lock = BX_LOCK_INIT; /* every heap list and the abandoned list */
static bx_heap_t *all_heaps, *abandoned;
static bx_lock_t orphan_lock = BX_LOCK_INIT;
static _Atomic(bx_heap_t *) orphan;
static pthread_key_t exit_key;

static bx_heap_t *create_registered(int node, int state) {
    bx_heap_t *h = bx_heap_create(node, state);
    if (!h) return NULL;
    bx_lock(&registry_lock);
    h->next_all = all_heaps;
    all_heaps = h;
    bx_unlock(&registry_lock);
    return h;
}

/* Called with the registry lock held. */
static void push_abandoned(bx_heap_t *h) {
    bx_heap_set_state(h, BX_HEAP_ABANDONED);
    h->next_abandoned = abandoned;
    abandoned = h;
}

/* ---- ownerless heaps -------------------------------------------------------------------- */

/* Takes an ownerless heap for exclusive use (off the abandoned list, or the orphan lock). */
static bool take_ownerless(bx_heap_t *h, bool wait) {
    if (h->state == BX_HEAP_ORPHAN) {
        if (wait) {
            bx_lock(&orphan_lock);
            return true;
        }
        return bx_trylock(&orphan_lock);
    }
    if (wait)
        bx_lock(&registry_lock);
    else if (!bx_trylock(&registry_lock))
        return false;
    bool taken = false;
    if (h->state == BX_HEAP_ABANDONED) {
        for (bx_heap_t **link = &abandoned; *link; link = &(*link)->next_abandoned)
            if (*link == h) {
                *link = h->next_abandoned;
                bx_heap_set_state(h, BX_HEAP_RECLAIMING);
                taken = true;
                break;
            }
    }
    bx_unlock(&registry_lock);
    return taken;
}

static void return_ownerless(bx_heap_t *h) {
    if (h->state == BX_HEAP_ORPHAN) {
        bx_unlock(&orphan_lock);
        return;
    }
    bx_lock(&registry_lock);
    if (h->state == BX_HEAP_RECLAIMING) push_abandoned(h);
    bx_unlock(&registry_lock);
}

/* Remote frees pile up at a heap nobody drains: the sender that notices drains it, if it can
 * take the heap at once (remote.h). */
static void drain_pile(bx_remote_t *r) {
    bx_heap_t *h = (bx_heap_t *)((char *)r - offsetof(bx_heap_t, remote));
    int state = h->state;
    if ((state == BX_HEAP_ABANDONED || state == BX_HEAP_ORPHAN) && take_ownerless(h, false)) {
        bx_retention_release_heap(h, BX_RELEASE_THREAD_EXIT);
        return_ownerless(h);
    }
}

/* ---- a thread's start and end ----------------------------------------------------------- */

static void thread_exit(void *arg) {
    bx_heap_t *h = arg;
    bx_tls_heap = bx_tls_fast = NULL;
    bx_tls_alloc.bin_for = bin_for_none;
    tls_torn_down = true; /* later mallocs of this thread go to the orphan heap */
    if (!h || h->state != BX_HEAP_LIVE) return;
    bx_retention_release_heap(h, BX_RELEASE_THREAD_EXIT);
    bx_lock(&registry_lock);
    push_abandoned(h);
    bx_unlock(&registry_lock);
}

static bx_heap_t *adopt(int node) {
    bx_heap_t *h = NULL;
    bx_lock(&registry_lock);
    for (bx_heap_t **link = &abandoned; *link; link = &(*link)->next_abandoned)
        if ((*link)->node == node) {
            h = *link;
            *link = h->next_abandoned;
            bx_heap_set_state(h, BX_HEAP_LIVE);
            break;
        }
    bx_unlock(&registry_lock);
    /* Keeping follows the sizes the new thread allocates, not the ones its heap's last
     * thread did (the keep blocks were emptied when that thread exited). */
    if (!h) return NULL;
    for (unsigned i = 0; i < BX_SMALL_BINS; i++) bx_keep_restart(&h->keep[i]);
    /* A release asked of the thread that exited was done at its exit. */
    atomic_store_explicit(&h->release_requested, false, memory_order_relaxed);
    bx_heap_reset_bin_table(h);
    return h;
}

bx_heap_t *bx_thread_acquire(void) {
    if (tls_torn_down) return NULL;
    int node = bx_node_current();
    bx_heap_t *h = adopt(node);
    if (!h) h = create_registered(node, BX_HEAP_LIVE);
    if (!h) return NULL;
    bx_tls_heap = h;
    if (!bx_options.check) {
        bx_tls_fast = h;
        bx_tls_alloc.bin_for = h->bin_for;
        bx_tls_alloc.sample_left = countdown_start ? countdown_start() : INT64_MAX;
    }
    /* May allocate (keys past the first 32): this thread already has its heap. */
    pthread_setspecific(exit_key, h);
    if (bx_heap_remote_pending(h)) bx_heap_drain(h);
    return h;
}

void *bx_thread_alloc_orphan(size_t size) {
    bx_heap_t *h = atomic_load_explicit(&orphan, memory_order_acquire);
    if (!h) {
        /* Made before the orphan lock is taken: creating takes the registry lock. */
        h = create_registered(0, BX_HEAP_ORPHAN);
        if (!h) return NULL;
        bx_heap_t *expected = NULL;
        if (!atomic_compare_exchange_strong_explicit(&orphan, &expected, h, memory_order_acq_rel,
                                                     memory_order_acquire)) {
            bx_lock(&registry_lock); /* another thread's came first: this one waits for adoption */
            push_abandoned(h);
            bx_unlock(&registry_lock);
            h = expected;
        }
    }
    bx_lock(&orphan_lock);
    if (bx_heap_remote_pending(h)) bx_heap_drain(h);
    void *p = bx_heap_alloc(h, size);
    bx_unlock(&orphan_lock);
    return p;
}

/* ---- every heap ----------------------------------------------------------------------------- */

void bx_thread_release_all(enum bx_release_level level) {
    bx_heap_t *self = bx_tls_heap;
    if (self) bx_retention_release_heap(self, level);
    /* Live heaps of other threads: at their owner's next malloc. */
    bx_lock(&registry_lock);
    for (bx_heap_t *h = all_heaps; h; h = h->next_all)
        if (h != self && h->state == BX_HEAP_LIVE) bx_retention_request(h);
    bx_unlock(&registry_lock);
    /* Ownerless heaps: take each in turn off the abandoned list, then the orphan. */
    for (;;) {
        bx_lock(&registry_lock);
        bx_heap_t *h = NULL;
        for (bx_heap_t *a = abandoned; a; a = a->next_abandoned)
            if (bx_heap_remote_pending(a) || a->small_blocks.count) {
                h = a;
                break;
            }
        bx_unlock(&registry_lock);
        if (!h || !take_ownerless(h, true)) break;
        bx_retention_release_heap(h, level);
        return_ownerless(h);
    }
    bx_heap_t *o = atomic_load_explicit(&orphan, memory_order_acquire);
    if (o) {
        bx_lock(&orphan_lock);
        bx_retention_release_heap(o, level);
        bx_unlock(&orphan_lock);
    }
}

static bool release_pending(void) {
    bool pending = false;
    bx_lock(&registry_lock);
    for (bx_heap_t *h = all_heaps; h && !pending; h = h->next_all)
        pending = h != bx_tls_heap && h->state == BX_HEAP_LIVE &&
                  atomic_load_explicit(&h->release_requested, memory_order_acquire);
    bx_unlock(&registry_lock);
    return pending;
}

bool bx_thread_await_releases(uint64_t max_ns) {
    /* A thread that sleeps never answers: after a wait that timed out, none for a while, so
     * that a program failing malloc after malloc beside it does not wait each time. */
    static _Atomic uint64_t timed_out_at;
    uint64_t now = bx_now_ns(), last = atomic_load_explicit(&timed_out_at, memory_order_relaxed);
    if ((last && now - last < 10 * max_ns) || !release_pending()) return false;
    uint64_t end = now + max_ns;
    while (release_pending()) {
        if (bx_now_ns() >= end) {
            atomic_store_explicit(&timed_out_at, end, memory_order_relaxed);
            break;
        }
        sched_yield();
    }
    return true;
}

void bx_thread_for_each_heap(void (*fn)(bx_heap_t *, void *), void *arg) {
    bx_lock(&registry_lock);
    for (bx_heap_t *h = all_heaps; h; h = h->next_all) fn(h, arg);
    bx_unlock(&registry_lock);
}

/* ---- fork ---------------------------------------------------------------------------------- */

static void fork_prepare(void) {
    bx_lock(&registry_lock);
    bx_lock(&orphan_lock);
    bx_large_lock();
    bx_node_lock_all();
}

static void fork_parent(void) {
    bx_node_unlock_all();
    bx_large_unlock();
    bx_unlock(&orphan_lock);
    bx_unlock(&registry_lock);
}

static void fork_child(void) {
    bx_node_reset_locks();
    bx_large_reset_lock();
    bx_lock_reset(&orphan_lock);
    bx_lock_reset(&registry_lock);
    /* Other threads' heaps may be mid-update: never touch them again (their memory
     * stays with them; frees into them still go to their remote lists safely). */
    for (bx_heap_t *h = all_heaps; h; h = h->next_all) {
        bx_remote_after_fork(&h->remote);
        if (h != bx_tls_heap && (h->state == BX_HEAP_LIVE || h->state == BX_HEAP_RECLAIMING))
            bx_heap_set_state(h, BX_HEAP_LOST);
    }
    if (bx_tls_heap && bx_tls_heap->state == BX_HEAP_LIVE) {
        bx_tls_heap->follow_cpu = true;
        bx_tls_heap->next_tick_ns = 0; /* the next slow path ticks */
    }
}

void bx_thread_global_init(void) {
    pthread_key_create(&exit_key, thread_exit);
    bx_remote_set_pile_handler(drain_pile);
}

void bx_thread_register_fork_handlers(void) { pthread_atfork(fork_prepare, fork_parent, fork_child); }
