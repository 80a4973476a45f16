/* reclaimer.c - the background reclaimer (reclaimer.h). */
#define _GNU_SOURCE
#include "thread/reclaimer.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <time.h>

#include "mem/node.h"
#include "os/options.h"
#include "os/os.h"
#include "os/sysfile.h"
#include "thread/thread.h"

enum { NOT_STARTED, STARTING, RUNNING };
static atomic_int state;
static void (*pass_hook)(void);
void bx_reclaimer_set_pass_hook(void (*fn)(void)) { pass_hook = fn; }

/* What an idle ownerless heap's frees change: once it is given back, it is given back
 * again only after frees. */
static uint64_t frees_signature(const bx_heap_t *h) {
    uint64_t sig = h->counters.medium_live_bytes;
    for (unsigned i = 0; i < BX_SMALL_BINS; i++) sig += bx_bin_frees(&h->small[i]);
    return sig;
}

/* An ownerless heap no thread allocated from for a decay delay gives back everything free,
 * as malloc_trim would: its free blocks' pages too, in superblocks a few live objects keep
 * (1,000 threads that ended: 7 to 45 MB left 3 s later, by how many such superblocks the
 * main thread's objects and the threads' last ones kept). Once, and again only after frees. */
static void release_if_idle(bx_heap_t *h, uint64_t now) {
    if (now - h->idle_since_ns < bx_options.decay_ms * (uint64_t)1000000 || frees_signature(h) + 1 == h->released_at)
        return;
    bx_node_giving_idle = true;
    bx_retention_release_heap(h, BX_RELEASE_TRIM);
    bx_node_giving_idle = false;
    h->released_at = frees_signature(h) + 1; /* 0: never */
}

/* A shared heap: the threads that used it may all have ended. Every shared heap ticks when
 * its tick is due, so that the sizes of ended threads go back even while a thread still
 * allocates other sizes. Skipped while a thread holds it. */
static void reclaim_shared(bx_heap_t *h, uint64_t now) {
    if (!bx_thread_lock_shared(h, false)) return;
    if (bx_heap_remote_pending(h)) bx_heap_drain(h);
    if (h->shared_allocs != h->shared_allocs_seen) {
        h->shared_allocs_seen = h->shared_allocs;
        h->idle_since_ns = now;
    } else {
        release_if_idle(h, now);
    }
    bx_heap_tick(h); /* if due: sizes no thread allocated for a delay give back their blocks */
    bx_retention_reclaim_idle(h);
    bx_thread_unlock_shared(h);
}

/* Called with the registry lock held: no thread can adopt an abandoned heap meanwhile. */
static void reclaim_heap(bx_heap_t *h, void *arg) {
    uint64_t now = *(const uint64_t *)arg;
    int s = atomic_load_explicit(&h->state, memory_order_relaxed);
    if (s == BX_HEAP_ABANDONED) release_if_idle(h, now);
    if (s == BX_HEAP_LIVE || s == BX_HEAP_ABANDONED)
        bx_retention_reclaim_idle(h);
    else if (s == BX_HEAP_SHARED)
        reclaim_shared(h, now);
}

/* Whether this is the process's last thread: num_threads, the 20th field of /proc/self/stat
 * (counted after the command name, which may hold spaces and parentheses), is 1, or 2 with
 * the main thread a zombie (state Z, the 3rd field: it ended with pthread_exit and still
 * counts). A program whose last thread ends with pthread_exit (a child forked from a thread,
 * say) ends only when every thread has: the reclaimer must not be the one left. */
static bool alone(void) {
    char stat[1024];
    if (!bx_os_read_file("/proc/self/stat", stat, sizeof stat)) return false;
    char *c = stat, *last_paren = NULL;
    for (; *c; c++)
        if (*c == ')') last_paren = c;
    if (!last_paren) return false;
    char state = last_paren[1] == ' ' ? last_paren[2] : 0;
    int field = 2;
    long threads = 0;
    for (c = last_paren + 1; *c && field < 20; c++)
        if (*c == ' ') field++;
    for (; *c >= '0' && *c <= '9'; c++) threads = threads * 10 + (*c - '0');
    return field == 20 && (threads == 1 || (threads == 2 && state == 'Z'));
}

/* Exported so that the pinning shim can tell this thread from the program's. */
BX_API void *bobox_reclaimer(void *arg) {
    (void)arg;
    for (;;) {
        /* Read each time: bobox.decay_ms changes it at run time. 0 (everything given back at
         * once) leaves only the live statistics to refresh: four times a second. */
        uint64_t decay = __atomic_load_n(&bx_options.decay_ms, __ATOMIC_RELAXED);
        uint64_t period_ms = decay ? (decay / 4 ? decay / 4 : 1) : 250;
        struct timespec pause = {(time_t)(period_ms / 1000), (long)(period_ms % 1000) * 1000000};
        clock_nanosleep(CLOCK_MONOTONIC, 0, &pause, NULL);
        if (alone()) break; /* the program's threads are gone: so is the process */
        uint64_t now = bx_now_ns();
        bx_thread_for_each_heap(reclaim_heap, &now);
        bx_retention_release_shared(BX_RELEASE_TICK);
        if (pass_hook) pass_hook();
    }
    return NULL;
}

static atomic_bool pages_left;

/* On the owner's tick: starts the reclaimer once the process is big enough to need it, or
 * once an exited thread left pages for it to give back. */
static void maybe_start(void) {
    int big = __atomic_load_n(&bx_os_big, __ATOMIC_RELAXED);
    /* Seen: every slow path stops ticking for it (bx_heap_tick_wanted), also when the
     * reclaimer runs already (it started small: `handoff` ticked at every slow path, 30x the
     * time). */
    if (BX_UNLIKELY(big == BX_OS_BECAME_BIG)) __atomic_store_n(&bx_os_big, BX_OS_BIG, __ATOMIC_RELAXED);
    if (BX_LIKELY(atomic_load_explicit(&state, memory_order_relaxed) != NOT_STARTED)) return;
    if (big == BX_OS_SMALL && !pass_hook && !atomic_load_explicit(&pages_left, memory_order_relaxed)) return;
    if (!bx_options.decay_ms && !pass_hook) return; /* every tick gives everything back already */
    int expected = NOT_STARTED;
    if (!atomic_compare_exchange_strong(&state, &expected, STARTING)) return;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 64 * BX_KB);
    /* Created with every signal blocked: the program's handlers never run on it. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_t t;
    bool started = pthread_create(&t, &attr, bobox_reclaimer, NULL) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    if (started) pthread_setname_np(t, "bobox-reclaim");
    /* A refusal (no threads in this sandbox, no memory) is tried again at a later tick. */
    atomic_store(&state, started ? RUNNING : NOT_STARTED);
}

void bx_reclaimer_init(void) { bx_retention_set_tick_hook(maybe_start); }

/* At once, not at a later tick: a program whose threads end and whose main thread then
 * waits makes no further slow path (`memchurn` with one thread at a time kept its last
 * threads' 6 MB for good). */
void bx_reclaimer_pages_left(void) {
    atomic_store_explicit(&pages_left, true, memory_order_relaxed);
    maybe_start();
}
void bx_reclaimer_after_fork(void) { atomic_store_explicit(&state, NOT_STARTED, memory_order_relaxed); }
bool bx_reclaimer_running(void) { return atomic_load_explicit(&state, memory_order_relaxed) == RUNNING; }
