/* thread.c - heaps and threads: acquire, adopt, abandon, the shared heaps, fork. */
#define _GNU_SOURCE
#include "thread/thread.h"

#include <pthread.h>
#include <sched.h>
#include <stddef.h>

#include "mem/blockcache.h"
#include "mem/large.h"
#include "base/lock.h"
#include "mem/node.h"
#include "os/options.h"
#include "thread/reclaimer.h"

BX_TLS bx_heap_t *bx_tls_heap;
BX_TLS bx_heap_t *bx_tls_fast;
static bx_bin_t *bin_for_none[BX_SMALL_STEPS] = {[0 ... BX_SMALL_STEPS - 1] = &bx_heap_bin_none};
BX_TLS bx_tls_alloc_t bx_tls_alloc = {bin_for_none, INT64_MAX};
static BX_TLS bool tls_torn_down; /* past our own per-thread teardown */
/* A thread without a heap of its own: its mallocs and frees in the current window. */
static BX_TLS struct {
    uint32_t ops;
    bool counting; /* past its first call: the profiler's countdown is set, adoption was tried */
    uint64_t window_start_ns;
    /* The exited thread's heap whose objects it freed last, and how many in a row this window. */
    bx_heap_t *freeing_from;
    uint32_t frees_from;
} tls_light;
static int64_t (*countdown_start)(void);
void bx_thread_set_countdown_start(int64_t (*fn)(void)) { countdown_start = fn; }

static bx_lock_t registry_lock = BX_LOCK_INIT; /* every heap list and the abandoned list */
static bx_heap_t *all_heaps, *abandoned;
/* The shared heaps, one per CPU (by index; created at its first use). */
#define SHARED_SLOTS BX_MAX_CPUS
static _Atomic(bx_heap_t *) shared[SHARED_SLOTS];
/* Their locks: whoever holds one is its heap's owner. Kept here, not in the heaps' own
 * mappings, so that a write past an object that ends next to a heap cannot leave a lock held
 * for ever (a program that then exits would hang in the check at exit). */
static struct {
    bx_lock_t lock;
} __attribute__((aligned(64))) shared_lock[SHARED_SLOTS];

/* A shared heap's lock; NULL for any other heap. */
static bx_lock_t *lock_of(const bx_heap_t *h) {
    unsigned slot = h->shared_slot;
    return bx_heap_is_shared(h) && slot < SHARED_SLOTS &&
                   atomic_load_explicit(&shared[slot], memory_order_acquire) == h
               ? &shared_lock[slot].lock
               : NULL;
}

bool bx_thread_lock_shared(bx_heap_t *h, bool wait) {
    bx_lock_t *l = lock_of(h);
    if (!l) return false;
    if (!wait && !bx_trylock(l)) return false;
    if (wait) bx_lock(l);
    /* A busy thread may have taken the heap over while we waited (take_over_shared, under
     * this lock): it is then that thread's own. */
    if (atomic_load_explicit(&shared[h->shared_slot], memory_order_relaxed) == h) return true;
    bx_unlock(l);
    return false;
}

void bx_thread_unlock_shared(bx_heap_t *h) { bx_unlock(lock_of(h)); }
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

/* Takes h off the abandoned list, if it is there, into `state`. Called with the registry lock. */
static bool unlink_abandoned(bx_heap_t *h, int state) {
    if (h->state != BX_HEAP_ABANDONED) return false;
    for (bx_heap_t **link = &abandoned; *link; link = &(*link)->next_abandoned)
        if (*link == h) {
            *link = h->next_abandoned;
            bx_heap_set_state(h, state);
            return true;
        }
    return false;
}

/* Takes an ownerless heap for exclusive use (off the abandoned list, or a shared heap's lock). */
static bool take_ownerless(bx_heap_t *h, bool wait) {
    if (bx_heap_is_shared(h)) return bx_thread_lock_shared(h, wait);
    if (wait)
        bx_lock(&registry_lock);
    else if (!bx_trylock(&registry_lock))
        return false;
    bool taken = unlink_abandoned(h, BX_HEAP_RECLAIMING);
    bx_unlock(&registry_lock);
    return taken;
}

static void return_ownerless(bx_heap_t *h) {
    if (bx_heap_is_shared(h)) {
        bx_thread_unlock_shared(h);
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
    if ((state == BX_HEAP_ABANDONED || state == BX_HEAP_SHARED) && take_ownerless(h, false)) {
        bx_retention_release_heap(h, BX_RELEASE_THREAD_EXIT);
        return_ownerless(h);
    }
}

/* ---- a thread's start and end ----------------------------------------------------------- */

/* The calling thread gives up its heap h: its frees so far stay, other threads' frees of
 * its objects pile up there and are drained by whoever notices (drain_pile), its caches
 * keep their pages for whoever adopts it. */
static void leave(bx_heap_t *h) {
    bx_retention_release_heap(h, BX_RELEASE_THREAD_EXIT);
    h->idle_since_ns = bx_now_ns();
    bx_reclaimer_pages_left();
    bx_lock(&registry_lock);
    push_abandoned(h);
    bx_unlock(&registry_lock);
}

static void thread_exit(void *arg) {
    bx_heap_t *h = arg;
    bx_tls_heap = bx_tls_fast = NULL;
    bx_tls_alloc.bin_for = bin_for_none;
    tls_torn_down = true; /* later mallocs of this thread go to a shared heap */
    if (h && h->state == BX_HEAP_LIVE) leave(h);
}

/* Whether a heap holds objects its threads allocated and nobody freed yet. */
static bool holds_live(const bx_heap_t *h) {
    if (h->counters.medium_live_bytes || h->mixed_blocks) return true;
    for (unsigned i = 0; i < BX_SMALL_BINS; i++)
        if (bx_bin_allocated(&h->small[i])) return true;
    return false;
}

/* Abandoned heaps a search for one that holds live objects, or one that holds none, looks
 * at (newest first: a starting thread's predecessor's is among them): each costs a scan of
 * its bins under the registry lock, which every thread start would otherwise pay for every
 * heap left by a past burst of busy threads. */
#define ADOPT_LIVE_LOOKS 8

enum adopt_which { ADOPT_ANY, ADOPT_LIVE, ADOPT_IDLE };

/* Gets a heap ready for its next owner: keeping follows the sizes it allocates, not the ones
 * the heap's last thread did (the keep blocks were emptied when that thread exited, or were
 * never filled on a shared heap), and a release asked of the last owner was done (at its
 * exit) or no longer applies. */
static bx_heap_t *restart(bx_heap_t *h) {
    for (unsigned i = 0; i < BX_SMALL_BINS; i++) bx_keep_restart(&h->keep[i]);
    atomic_store_explicit(&h->release_requested, false, memory_order_relaxed);
    h->released_at = 0; /* what it frees from now on is its new owner's to give back */
    bx_blockcache_new_owner(&h->small_blocks); /* its sizes take back their own blocks */
    bx_heap_reset_bin_table(h);
    return h;
}

/* An abandoned heap of `node`, now in `state`; with ADOPT_LIVE (ADOPT_IDLE), only one that
 * still holds live objects (that holds none), among the newest ADOPT_LIVE_LOOKS of the node. */
static bx_heap_t *adopt(int node, enum adopt_which which, int state) {
    bx_heap_t *h = NULL;
    unsigned looks = 0;
    bx_lock(&registry_lock);
    for (bx_heap_t **link = &abandoned; *link; link = &(*link)->next_abandoned) {
        if ((*link)->node != node || (*link)->parked) continue;
        if (which != ADOPT_ANY && holds_live(*link) != (which == ADOPT_LIVE)) {
            if (++looks == ADOPT_LIVE_LOOKS) break;
            continue;
        }
        h = *link;
        *link = h->next_abandoned;
        bx_heap_set_state(h, state);
        break;
    }
    bx_unlock(&registry_lock);
    return h ? restart(h) : NULL;
}

/* Whether a thread without a heap has proven busy: BX_BUSY_OPS operations in one window. */
static bool proven_busy(void) {
    if (tls_torn_down) return false;
    if (BX_LIKELY(++tls_light.ops < BX_BUSY_OPS)) {
        if (tls_light.ops == 1) tls_light.window_start_ns = bx_now_ns();
        return false;
    }
    tls_light.ops = 0;
    return bx_now_ns() - tls_light.window_start_ns < BX_BUSY_WINDOW_MS * (uint64_t)1000000;
}

/* h, an abandoned heap of this node, for the calling thread, unless another took it first. */
static bx_heap_t *adopt_this(bx_heap_t *h, bool parked) {
    if (h->node != bx_node_current()) return NULL;
    bx_lock(&registry_lock);
    bool taken = h->parked == parked && unlink_abandoned(h, BX_HEAP_LIVE);
    if (taken) h->parked = false;
    bx_unlock(&registry_lock);
    return taken ? restart(h) : NULL;
}

/* The exited thread's heap a thread that proves busy has mostly been freeing objects of:
 * it works on that thread's objects (a main thread freeing its workers' results), which
 * then come back to it as its own frees, not as a stream of remote frees to a heap nobody
 * drains but their sender (each pile of it a full release: powerlaw's end, 314 of them). */
static bx_heap_t *adopt_freed_from(void) {
    bx_heap_t *h = tls_light.freeing_from;
    bool mostly = tls_light.frees_from >= BX_BUSY_OPS / 2;
    tls_light.freeing_from = NULL;
    tls_light.frees_from = 0;
    return mostly ? adopt_this(h, false) : NULL;
}

bx_heap_t *bx_thread_heap_slow(void) {
    /* Checked mode gives every thread a heap at once: its registry and checks follow owners. */
    return bx_options.check ? bx_thread_acquire() : NULL;
}

/* h becomes the calling thread's heap. */
static bx_heap_t *install(bx_heap_t *h) {
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

bx_heap_t *bx_thread_park(void) {
    bx_heap_t *h = bx_tls_heap;
    /* Checked mode follows each object's owner: every thread keeps its heap. */
    if (!h || bx_options.check || h->state != BX_HEAP_LIVE) return NULL;
    bx_tls_heap = bx_tls_fast = NULL;
    bx_tls_alloc.bin_for = bin_for_none;
    /* Its exit must not abandon the heap again once another thread has adopted it. */
    pthread_setspecific(exit_key, NULL);
    h->parked = true; /* before it is on the abandoned list */
    leave(h);
    return h;
}

void bx_thread_unpark(bx_heap_t *h) {
    if (!h || bx_tls_heap) return;
    /* A sender may be draining its pile this moment (drain_pile): it gives it back soon. */
    for (int tries = 0; tries < 1000 && atomic_load(&h->state) == BX_HEAP_RECLAIMING; tries++) sched_yield();
    bx_heap_t *taken = adopt_this(h, true);
    if (taken) {
        install(taken);
        return;
    }
    /* This thread moved to another node meanwhile: the heap is any thread's to adopt. */
    bx_lock(&registry_lock);
    h->parked = false;
    bx_unlock(&registry_lock);
}

bx_heap_t *bx_thread_count_op(bx_heap_t *freed_from) {
    /* A thread's first call: a heap an exited thread left on this node with objects still
     * live is most likely its predecessor's, whose work (and objects) it takes over: the
     * heap of the object it frees, if that is one (`handoff`: 3.4 M of its 15 M frees were
     * remote when a successor took the newest such heap, often the other lineage's, and
     * 0.1-0.4 M now), else the newest. Taken at once, it costs no memory not already held,
     * the thread's frees of those objects are its own, and it skips the shared heap's lock
     * (a thread that hands its work to a successor every 8,000 calls spent its first 1,024
     * there: `handoff` 1.5x the time). A heap with nothing live waits: its pages go back if
     * no thread takes it for a decay delay, and a thread that allocates a little and ends
     * runs on the shared heap's warm pages (`memchurn`, adopting any heap: 1.7x the time,
     * 1.4x the peak). */
    if (BX_UNLIKELY(!tls_light.counting) && !tls_torn_down) { /* proven_busy counts from here */
        tls_light.counting = true;
        bx_heap_t *h = freed_from && freed_from->state == BX_HEAP_ABANDONED ? adopt_this(freed_from, false) : NULL;
        if (!h) h = adopt(bx_node_current(), ADOPT_LIVE, BX_HEAP_LIVE);
        if (h) return install(h);
        bx_tls_alloc.sample_left = countdown_start ? countdown_start() : INT64_MAX;
    }
    if (freed_from && freed_from->state == BX_HEAP_ABANDONED) {
        if (freed_from != tls_light.freeing_from) tls_light.frees_from = 0;
        tls_light.freeing_from = freed_from;
        tls_light.frees_from++;
    }
    if (!proven_busy()) {
        if (tls_light.ops == 0) tls_light.frees_from = 0; /* a window ended */
        return NULL;
    }
    bx_heap_t *h = adopt_freed_from();
    return h ? install(h) : bx_thread_acquire();
}

/* The shared heap slot of the CPU the thread runs on (rseq), and that CPU's node. Without
 * rseq, a slot of the thread's node picked by its TLS address. */
static unsigned shared_slot_here(int *node) {
    int cpu = bx_os_rseq_cpu();
    if (BX_LIKELY(cpu >= 0)) {
        *node = bx_node_of_cpu(cpu);
        return (unsigned)cpu % SHARED_SLOTS;
    }
    *node = bx_node_current();
    uint64_t spread = ((uintptr_t)&tls_light >> 12) * 0x9E3779B97F4A7C15ULL >> 60;
    return (unsigned)((uint64_t)*node * 16 + spread) % SHARED_SLOTS;
}

/* A thread that proves busy takes its CPU's shared heap for its own: the objects it has
 * allocated so far, and the blocks they lie in, are then its own, not a second partly used
 * block of each size beside the shared heap's (a program's single thread: 0.4-0.6 MB). The
 * threads not yet busy get a new shared heap at their next malloc; their frees of objects
 * there go to it as any thread's remote frees. Taken under the registry lock (fork sees the
 * slots unchanged) and the slot's lock (no one is inside the heap; a waiter re-checks). */
static bx_heap_t *take_over_shared(int node) {
    int cpu_node; /* the heap's own node decides: the CPU's may have changed since */
    unsigned slot = shared_slot_here(&cpu_node);
    bx_lock(&registry_lock);
    bx_heap_t *h = atomic_load_explicit(&shared[slot], memory_order_acquire);
    if (h && h->node != node) h = NULL; /* the thread moved between nodes: not its memory */
    if (h) {
        bx_lock(&shared_lock[slot].lock);
        atomic_store_explicit(&shared[slot], NULL, memory_order_relaxed);
        bx_heap_set_state(h, BX_HEAP_LIVE);
        bx_unlock(&shared_lock[slot].lock);
    }
    bx_unlock(&registry_lock);
    return h ? restart(h) : NULL;
}

bx_heap_t *bx_thread_acquire(void) {
    if (tls_torn_down) return NULL;
    int node = bx_node_current();
    bx_heap_t *h = take_over_shared(node);
    if (!h) h = adopt(node, ADOPT_ANY, BX_HEAP_LIVE);
    if (!h) h = create_registered(node, BX_HEAP_LIVE);
    if (!h) return NULL;
    return install(h);
}

/* The heap of the CPU the thread runs on, made at its first use, or after a busy thread took
 * the last one: an abandoned heap that holds no live object (one that does is kept for a
 * thread that starts in its predecessor's place), else a new one. */
static bx_heap_t *shared_heap(void) {
    int node;
    unsigned slot = shared_slot_here(&node);
    bx_heap_t *h = atomic_load_explicit(&shared[slot], memory_order_acquire);
    if (BX_LIKELY(h != NULL)) return h;
    h = adopt(node, ADOPT_IDLE, BX_HEAP_SHARED);
    if (!h) h = create_registered(node, BX_HEAP_SHARED);
    if (!h) return NULL;
    /* Set under the registry lock, which fork holds throughout: the shared locks it takes and
     * gives back are the same. */
    bx_lock(&registry_lock);
    bx_heap_t *first = atomic_load_explicit(&shared[slot], memory_order_acquire);
    if (first) {
        h->idle_since_ns = bx_now_ns();
        push_abandoned(h); /* another thread's came first: this one waits for adoption */
        h = first;
    } else {
        h->shared_slot = slot;
        atomic_store_explicit(&shared[slot], h, memory_order_release);
    }
    bx_unlock(&registry_lock);
    return h;
}

/* Slot i's shared heap with its lock held, or NULL (no heap there). */
static bx_heap_t *lock_slot(unsigned i) {
    if (!atomic_load_explicit(&shared[i], memory_order_acquire)) return NULL;
    bx_lock(&shared_lock[i].lock);
    bx_heap_t *h = atomic_load_explicit(&shared[i], memory_order_relaxed); /* taken over meanwhile? */
    if (!h) bx_unlock(&shared_lock[i].lock);
    return h;
}

void *bx_thread_alloc_shared(size_t size) {
    bx_heap_t *h = bx_thread_count_op(NULL);
    if (h) return bx_heap_alloc(h, size); /* busy from now on */
    h = shared_heap();
    if (!h) return NULL;
    if (size > BX_MEDIUM_MAX) { /* a mapping of its own: no lock held over the system call */
        bool fresh;
        return bx_large_alloc(size, BX_ALIGNMENT, h->node, &fresh);
    }
    unsigned slot;
    for (;;) {
        slot = h->shared_slot;
        bx_heap_t *locked = lock_slot(slot);
        if (locked == h) break;
        if (locked) bx_unlock(&shared_lock[slot].lock);
        if (!(h = shared_heap())) return NULL; /* taken over while we waited: the one in its place */
    }
    uint64_t tick = h->next_tick_ns;
    if (bx_heap_remote_pending(h)) bx_heap_drain(h);
    h->shared_allocs++;
    void *p = bx_heap_alloc(h, size);
    bool ticked = h->next_tick_ns != tick;
    bx_unlock(&shared_lock[slot].lock);
    /* What a running thread's tick may do (start the reclaimer) mallocs: not under the lock. */
    if (ticked) bx_retention_after_tick();
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
    /* Ownerless heaps: take each in turn off the abandoned list, then the shared ones. */
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
    for (unsigned i = 0; i < SHARED_SLOTS; i++) {
        bx_heap_t *s = lock_slot(i);
        if (!s) continue;
        bx_retention_release_heap(s, level);
        bx_unlock(&shared_lock[i].lock);
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

bool bx_thread_check_shared(void) {
    bool ok = true;
    for (unsigned i = 0; i < SHARED_SLOTS; i++) {
        bx_heap_t *s = lock_slot(i);
        if (!s) continue;
        ok = bx_heap_check(s) && ok;
        bx_unlock(&shared_lock[i].lock);
    }
    return ok;
}

void bx_thread_check_heads_shared(const char *op) {
    for (unsigned i = 0; i < SHARED_SLOTS; i++) {
        bx_heap_t *s = lock_slot(i);
        if (!s) continue;
        bx_heap_check_heads(s, op); /* aborts on a corrupted head: the lock dies with the process */
        bx_unlock(&shared_lock[i].lock);
    }
}

/* ---- fork ---------------------------------------------------------------------------------- */

/* Every shared heap's lock, in slot order. */
static void shared_locks(void (*fn)(bx_lock_t *)) {
    for (unsigned i = 0; i < SHARED_SLOTS; i++) {
        bx_heap_t *s = atomic_load_explicit(&shared[i], memory_order_acquire);
        if (s) fn(&shared_lock[i].lock);
    }
}

static void fork_prepare(void) {
    bx_lock(&registry_lock);
    shared_locks(bx_lock);
    /* Before the node's: a cache's lock is held over its node's. A child gives lent blocks
     * back to their caches, other threads' heaps' included. */
    bx_blockcache_lock_lenders();
    bx_large_lock();
    bx_node_lock_all();
    bx_mixed_lock_all();
}

static void fork_parent(void) {
    bx_mixed_unlock_all();
    bx_node_unlock_all();
    bx_large_unlock();
    bx_blockcache_unlock_lenders();
    shared_locks(bx_unlock);
    bx_unlock(&registry_lock);
}

static void fork_child(void) {
    bx_mixed_reset_locks();
    bx_node_reset_locks();
    bx_large_reset_lock();
    bx_blockcache_reset_lenders();
    shared_locks(bx_lock_reset);
    bx_lock_reset(&registry_lock);
    /* Other threads' heaps may be mid-update: never touch them again (their memory
     * stays with them; frees into them still go to their remote lists safely). */
    for (bx_heap_t *h = all_heaps; h; h = h->next_all) {
        bx_remote_after_fork(&h->remote);
        h->parked = false; /* its thread is not in the child: any thread may adopt it */
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
