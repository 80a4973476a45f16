/* retention.c - the release points of retention.h. */
#include "heap/retention.h"

#include "mem/arena.h"
#include "mem/large.h"
#include "mem/node.h"
#include "os/options.h"

/* Each bin sends home the kept objects no chain counts (all, when it has no chain). At a
 * tick (idle_only), only a bin that allocated nothing since the last one: they are of no use
 * to it, and it also gives back the pages its blocks hold no live object in
 * (bx_heap_purge_idle_bin). */
static void release_bins(bx_heap_t *h, bool idle_only) {
    bool shared = bx_heap_is_shared(h);
    for (unsigned i = 0; i < BX_SMALL_BINS; i++) {
        bx_bin_t *b = &h->small[i];
        if (!idle_only) {
            bx_bin_release_kept(b);
        } else if (bx_bin_allocs(b) == h->allocs_at_tick[i] && !bx_heap_purge_idle_bin(h, i, false)) {
            if (h->mixable_growth >= BX_MIX_GROWTH_BLOCKS) bx_heap_mix_idle_bin(h, i);
            /* No frees to purge pages for: the front cache still goes into its blocks, which
             * can then drain, and a shared heap's idle size drops its chains too (the threads
             * that used it may have ended; its emptied blocks go back with the cache's decay). */
            if (shared && bx_bin_formatted(b))
                bx_bin_flush(b);
            else
                bx_bin_empty_front(b);
            bx_bin_release_kept(b);
        }
        h->allocs_at_tick[i] = bx_bin_allocs(b);
    }
    /* Mixed only for growth in sizes that can use the gaps, since the last tick. */
    if (idle_only) h->mixable_growth = 0;
}

void bx_retention_release_heap(bx_heap_t *h, enum bx_release_level level) {
    if (level == BX_RELEASE_TICK) {
        bx_node_giving_idle = true; /* all of it idle for a delay */
        release_bins(h, true);
        bx_heap_mixed_tick(h);
        bx_outbox_flush(&h->outbox);
        bx_blockcache_decay(&h->small_blocks);
        for (unsigned i = 0; i < BX_MEDIUM_BINS; i++) bx_blockcache_decay(&h->medium[i]);
        bx_node_giving_idle = false;
        return;
    }
    /* Everything free: remote frees in, chains dropped, kept objects home, caches empty
     * (but at a thread's exit, below). */
    bx_outbox_flush(&h->outbox);
    bx_heap_drain(h);
    for (unsigned i = 0; i < BX_SMALL_BINS; i++) bx_bin_flush(&h->small[i]);
    release_bins(h, false);
    bx_heap_mixed_tick(h);
    bx_outbox_flush(&h->outbox); /* the kept objects just sent home */
    /* A thread's exit keeps the pages: the next thread to take the heap over (its
     * successor, most often) writes them again at once (`handoff`: 4x the page faults, 1.17x
     * the time); the reclaimer gives them back if none comes for a decay delay. */
    bool give_pages = level != BX_RELEASE_THREAD_EXIT || !bx_options.decay_ms;
    /* Kept, the small block cache keeps each block on its bin's list: the next thread's
     * sizes take back the blocks (and pages) they had, not each other's (blockcache.h). */
    if (give_pages) bx_blockcache_flush(&h->small_blocks, true);
    for (unsigned i = 0; i < BX_MEDIUM_BINS; i++) bx_blockcache_flush(&h->medium[i], give_pages);
    /* Superblocks a few live objects keep: their free blocks' pages go back too (Redis's
     * MEMORY PURGE after deleting keys frees nothing otherwise). Only at malloc_trim: thread
     * exit is frequent and leaves the blocks to the next thread, and out of memory may come
     * from inside a block allocator, in the middle of its update, with its cache locked. */
    if (level == BX_RELEASE_TRIM) {
        /* And the pages of its blocks that hold no live object: an ownerless heap's last
         * objects are scattered over blocks no thread allocates from (a main thread that
         * waits while workers replace what it built: 5 MB in 86 blocks). */
        for (unsigned i = 0; i < BX_SMALL_BINS; i++)
            if (bx_bin_formatted(&h->small[i])) bx_bin_purge_pages(&h->small[i], false);
        bx_blockcache_discard_free(&h->small_blocks);
        for (unsigned i = 0; i < BX_MEDIUM_BINS; i++) bx_blockcache_discard_free(&h->medium[i]);
    }
}

size_t bx_retention_release_shared(enum bx_release_level level) {
    bool all = level != BX_RELEASE_TICK;
    /* A limit on address space set after start-up: the arena's unused slots count against it. */
    if (level == BX_RELEASE_TRIM || level == BX_RELEASE_OOM) bx_arena_shrink();
    return bx_node_purge(all) + bx_large_purge(all);
}

void bx_retention_init(void) { bx_heap_set_tick_handler(bx_retention_tick_due); }

static void (*tick_hook)(void);
void bx_retention_set_tick_hook(void (*fn)(void)) { tick_hook = fn; }
void bx_retention_after_tick(void) {
    if (tick_hook) tick_hook();
}

void bx_retention_reclaim_idle(bx_heap_t *h) {
    bx_blockcache_reclaim(&h->small_blocks);
    for (unsigned i = 0; i < BX_MEDIUM_BINS; i++) bx_blockcache_reclaim(&h->medium[i]);
}

void bx_retention_tick_due(bx_heap_t *h, uint64_t now_ns) {
    if (BX_UNLIKELY(h->follow_cpu)) bx_heap_follow_cpu(h);
    __atomic_store_n(&h->next_tick_ns, now_ns + (bx_options.decay_ms ? bx_options.decay_ms : 1) * (uint64_t)1000000,
                     __ATOMIC_RELAXED);
    if (atomic_load_explicit(&h->release_requested, memory_order_relaxed) &&
        atomic_exchange_explicit(&h->release_requested, false, memory_order_acquire)) {
        bx_heap_reset_bin_table(h);
        bx_retention_release_heap(h, BX_RELEASE_TRIM);
        bx_retention_release_shared(BX_RELEASE_TRIM); /* what the heap just gave its node */
        return;
    }
    bx_retention_release_heap(h, BX_RELEASE_TICK);
    bx_retention_release_shared(BX_RELEASE_TICK);
    /* Only a running thread's own heap: a shared heap ticks under its lock, and the hook may
     * start a thread, whose creation mallocs (it would wait for that lock for ever); its
     * thread calls bx_retention_after_tick once the lock is given back. */
    if (tick_hook && atomic_load_explicit(&h->state, memory_order_relaxed) == BX_HEAP_LIVE) tick_hook();
}

void bx_retention_request(bx_heap_t *h) {
    /* The owner's next malloc fails into the slow path (the stand-in bin has an empty stack)
     * and ticks there; it sees the flag once every entry is redirected. */
    for (unsigned step = 0; step < BX_SMALL_STEPS; step++)
        __atomic_store_n(&h->bin_for[step], &bx_heap_bin_none, __ATOMIC_RELAXED);
    __atomic_store_n(&h->next_tick_ns, 0, __ATOMIC_RELAXED);
    atomic_store_explicit(&h->release_requested, true, memory_order_release);
}
