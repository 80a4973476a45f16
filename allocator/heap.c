/* heap.c - thread heaps: creation, adoption, teardown, drains, fork. */
#define _GNU_SOURCE
#include "heap.h"

#include <pthread.h>
#include <string.h>

#include "checked.h"
#include "large.h"
#include "lock.h"
#include "node.h"
#include "os.h"
#include "pagemap.h"
#include "options.h"
#include "remote.h"

BX_TLS bx_heap_t *bx_tls_heap;
BX_TLS bx_heap_t *bx_tls_fast;
static bx_bin_t bin_none = {.chains.top = {.block = &bx_block_none}};
static bx_bin_t *bin_for_none[BX_SMALL_STEPS] = {[0 ... BX_SMALL_STEPS - 1] = &bin_none};
BX_TLS bx_bin_t **bx_tls_bin_for = bin_for_none;
static BX_TLS bool tls_torn_down; /* past our own per-thread teardown */

static bx_lock_t registry_lock = BX_LOCK_INIT; /* every heap list and the abandoned list */
static bx_heap_t *all_heaps, *abandoned;
static bx_lock_t orphan_lock = BX_LOCK_INIT;
static bx_heap_t *orphan;
static pthread_key_t exit_key;

/* ---- creation ----------------------------------------------------------------------- */

static size_t rings_records(void) {
    size_t records = 0;
    for (unsigned i = 0; i < bx_small_bins; i++) records += bx_bin_ring_size(bx_small_size[i]);
    return records;
}

static bx_heap_t *heap_create(int node, int state) {
    size_t head = bx_align_up(sizeof(bx_heap_t), 64);
    size_t size = bx_align_up(head + rings_records() * sizeof(bx_chain_t), bx_os_page_size());
    bx_heap_t *h = bx_os_map(size); /* zero-filled; ring pages are touched only when used */
    if (!h) return NULL;
    h->map_size = size;
    h->node = node;
    h->state = state;
    h->outbox_last = &h->outbox[0];
    bx_chain_t *ring = (bx_chain_t *)((char *)h + head);
    for (unsigned i = 0; i < bx_small_bins; i++) {
        uint32_t n = bx_bin_ring_size(bx_small_size[i]);
        bx_bin_init(&h->small[i], i, bx_small_size[i], ring, n, &h->small_blocks);
        ring += n;
        bx_block_t *k = h->small[i].keep = &h->keep[i];
        k->heap = BX_BLOCK_NO_OWNER;
        k->size = bx_small_size[i];
        k->bin = (uint8_t)i;
        k->capacity = k->used = 0; /* keeps nothing until the bin allocates (keep_enable) */
        k->list = BX_LIST_QUEUE;   /* never on a block list */
    }
    for (unsigned step = 0; step < BX_SMALL_STEPS; step++) h->bin_for[step] = &h->small[bx_small_bin(step * 16)];
    bx_blockcache_init(&h->small_blocks, h, BX_TAG_SMALL, BX_BLOCK_SIZE, BX_SMALL_BLOCK_CACHE_SUPERBLOCKS,
                       UINT32_MAX, node);
    for (unsigned i = 0; i < bx_medium_bins; i++) {
        uint32_t max_blocks = (uint32_t)(BX_MEDIUM_BLOCK_CACHE_BYTES / bx_medium_size[i]);
        bx_blockcache_init(&h->medium[i], h, BX_TAG_MEDIUM, bx_medium_size[i], BX_MEDIUM_BLOCK_CACHE_SUPERBLOCKS,
                           max_blocks < 2 ? 2 : max_blocks, node);
    }
    bx_lock(&registry_lock);
    h->next_all = all_heaps;
    all_heaps = h;
    bx_unlock(&registry_lock);
    return h;
}

/* ---- frees that bypass the chain stack ----------------------------------------------- */

void bx_heap_free_medium(bx_heap_t *h, void *sbp, uint32_t index) {
    bx_superblock_t *sb = sbp;
    h->counters.medium_live_bytes -= sb->block_size;
    bx_blockcache_free((bx_blockcache_t *)sb->owner, sb, bx_sb_block(sb, index));
}

/* Returns the object's size, read before the free may give its block away. */
static inline size_t drain_small(bx_heap_t *h, void *obj) {
    bx_block_t *blk = bx_block_of(obj);
    size_t size = blk->size;
    bx_bin_free_direct(&h->small[blk->bin], blk, obj);
    return size;
}

static size_t drain_one(bx_heap_t *h, void *obj) {
    if (BX_LIKELY(bx_in_small_region(obj))) return drain_small(h, obj); /* as free asks */
    uintptr_t entry = bx_pagemap_get(obj);
    if (bx_tag_of(entry) == BX_TAG_SMALL) return drain_small(h, obj);
    bx_superblock_t *sb = bx_span_of(entry);
    size_t size = sb->block_size;
    bx_heap_free_medium(h, sb, bx_sb_index(sb, obj));
    return size;
}

void bx_heap_free_new_chain(bx_heap_t *h, bx_bin_t *b, bx_block_t *blk) {
    bx_bin_new_chain(b, blk);
    if (BX_UNLIKELY(atomic_load_explicit(&h->remote_bytes, memory_order_relaxed) >= BX_REMOTE_DRAIN_BYTES))
        bx_heap_drain(h);
}

#define DRAIN_STEP 64
#define DRAIN_AHEAD 8

void bx_heap_drain(bx_heap_t *h) {
    size_t bytes = 0;
    void *buf[DRAIN_STEP];
    uint32_t n;
    /* Bounded by one inbox's worth, so senders that keep refilling it cannot hold us. */
    for (uint32_t taken = 0; taken < BX_INBOX_SLOTS && (n = bx_remote_take_inbox(h, buf, DRAIN_STEP)); taken += n) {
        /* The addresses are known up front: fetch objects and their block headers ahead,
         * so that the misses overlap instead of coming one after another. */
        for (uint32_t i = 0; i < n + DRAIN_AHEAD; i++) {
            if (i < n) {
                __builtin_prefetch(buf[i], 1);
                __builtin_prefetch(bx_block_of(buf[i]), 1);
            }
            if (i >= DRAIN_AHEAD) bytes += drain_one(h, buf[i - DRAIN_AHEAD]);
        }
    }
    void *obj = bx_remote_take(h);
    while (obj) {
        void *next = bx_link_get(obj);
        bytes += drain_one(h, obj);
        obj = next;
    }
    if (bytes) atomic_fetch_sub_explicit(&h->remote_bytes, bytes, memory_order_relaxed);
}

static void keep_release(bx_heap_t *h, unsigned bin);

void bx_heap_release_free(bx_heap_t *h) {
    bx_heap_flush_outbox(h);
    bx_heap_drain(h);
    for (unsigned i = 0; i < bx_small_bins; i++) {
        bx_bin_flush(&h->small[i]);
        keep_release(h, i);
    }
    bx_heap_flush_outbox(h); /* the kept objects just sent home */
    bx_blockcache_flush(&h->small_blocks);
    for (unsigned i = 0; i < bx_medium_bins; i++) bx_blockcache_flush(&h->medium[i]);
}

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
                h->state = BX_HEAP_RECLAIMING;
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
    if (h->state == BX_HEAP_RECLAIMING) {
        h->state = BX_HEAP_ABANDONED;
        h->next_abandoned = abandoned;
        abandoned = h;
    }
    bx_unlock(&registry_lock);
}

/* Nobody drains a heap whose thread is gone: whoever notices the pile does. */
static void after_push(bx_heap_t *owner, size_t waiting) {
    int state = owner->state;
    if ((state == BX_HEAP_ABANDONED || state == BX_HEAP_ORPHAN) && waiting >= BX_REMOTE_RECLAIM_BYTES &&
        take_ownerless(owner, false)) {
        bx_heap_release_free(owner);
        return_ownerless(owner);
    }
}

/* Sends the slot's batch. The slot stays its owner's: releasing it after a full batch made
 * the owner's next free evict another owner's half-filled batch. */
static BX_NOINLINE void flush_slot(bx_outbox_slot_t *slot) {
    if (!slot->count) return;
    after_push(slot->to, bx_remote_push_batch(slot->to, slot->objs, slot->count, slot->bytes));
    slot->count = 0;
    slot->bytes = 0;
}

void bx_heap_flush_outbox(bx_heap_t *h) {
    for (unsigned i = 0; i < BX_OUTBOX_SLOTS; i++) flush_slot(&h->outbox[i]);
}

static inline void outbox_append(bx_outbox_slot_t *slot, void *obj, size_t size) {
    slot->objs[slot->count] = obj;
    slot->bytes += size;
    if (++slot->count >= BX_OUTBOX_BATCH || slot->bytes >= BX_OUTBOX_BYTES) flush_slot(slot);
}

/* A free for an owner with no slot: an unused slot, else the victim's, flushed first. */
static BX_NOINLINE void outbox_claim_add(bx_heap_t *self, bx_heap_t *owner, void *obj, size_t size) {
    bx_outbox_slot_t *slot = NULL;
    for (unsigned i = 0; i < BX_OUTBOX_SLOTS && !slot; i++)
        if (!self->outbox[i].to) slot = &self->outbox[i];
    if (!slot) {
        slot = &self->outbox[self->outbox_victim++ % BX_OUTBOX_SLOTS];
        flush_slot(slot);
    }
    slot->to = owner;
    self->outbox_last = slot;
    outbox_append(slot, obj, size);
}

/* A free for another owner than the last one. Only tail calls, so no stack frame: in
 * pipeline's frees the owner changes on about one free in eight. */
static BX_NOINLINE void outbox_switch_add(bx_heap_t *self, bx_heap_t *owner, void *obj, size_t size) {
    bx_outbox_slot_t *slot = NULL;
    for (unsigned i = 0; i < BX_OUTBOX_SLOTS; i++)
        if (self->outbox[i].to == owner) slot = &self->outbox[i];
    if (BX_UNLIKELY(!slot)) {
        outbox_claim_add(self, owner, obj, size);
        return;
    }
    self->outbox_last = slot;
    outbox_append(slot, obj, size);
}

/* Batches a free for `owner` in the outbox of `self`. Frees come in runs per owner, so the
 * slot used last is tried first, and that path has no calls but tail calls (no frame). */
static inline void outbox_add(bx_heap_t *self, bx_heap_t *owner, void *obj, size_t size) {
    bx_outbox_slot_t *slot = self->outbox_last;
    if (BX_LIKELY(slot->to == owner))
        outbox_append(slot, obj, size);
    else
        outbox_switch_add(self, owner, obj, size);
}

/* One object straight onto the owner's list (no outbox: the owner is gone, or we are). */
static BX_NOINLINE void send_home_unbatched(bx_heap_t *owner, void *obj, size_t size) {
    after_push(owner, bx_remote_push(owner, obj, size));
}

void bx_heap_free_foreign(bx_heap_t *owner, void *obj, size_t size, uintptr_t key) {
    bx_object_mark_free(obj, key); /* a second free of it is caught before the owner drains it */
    /* A thread that only frees gets a heap too: its outbox batches the frees. */
    bx_heap_t *self = bx_tls_heap ? bx_tls_heap : bx_heap_acquire();
    if (self) self->counters.remote_frees++;
    if (!self || owner->state != BX_HEAP_LIVE) {
        send_home_unbatched(owner, obj, size);
        return;
    }
    outbox_add(self, owner, obj, size);
}

/* A freed small object of another heap goes to its owner: batched while the owner lives. */
static inline void send_home(bx_heap_t *self, bx_heap_t *owner, void *obj, size_t size) {
    if (BX_UNLIKELY(owner->state != BX_HEAP_LIVE))
        send_home_unbatched(owner, obj, size);
    else
        outbox_add(self, owner, obj, size);
}

/* Out of line, so that keeping an object needs no stack frame. */
static BX_NOINLINE void send_home_small(bx_heap_t *self, bx_block_t *blk, void *obj) {
    bx_object_mark_free(obj, bx_block_key(blk)); /* a second free of it is caught before the owner drains it */
    send_home(self, blk->heap, obj, blk->size);
}

void bx_heap_free_foreign_small(bx_heap_t *self, bx_block_t *blk, void *obj) {
    bx_heap_t *owner = blk->heap;
    self->counters.remote_frees++;
    bx_bin_t *b = &self->small[blk->bin];
    bx_block_t *keep = b->keep;
    /* used is the room left (keep_enable); none for a size this thread never allocated. */
    if (BX_LIKELY(keep->used && owner->node == self->node)) {
        /* Off the top chain it is counted by none (starting one per object would churn the
         * stack): a malloc takes them all at once when the bin's chains run out. */
        bool on_top = b->chains.top.block == keep;
        if (BX_LIKELY(on_top || self->kept_bytes < BX_KEEP_HEAP_BYTES)) {
            bx_block_push_keyed(keep, obj, bx_block_key(blk));
            b->frees++;
            if (on_top)
                b->chains.top.count++;
            else
                self->kept_bytes += blk->size;
            return;
        }
    }
    send_home_small(self, blk, obj);
}

/* Takes n objects off a keep block and sends them to their owners. */
static void keep_send_home(bx_bin_t *b, bx_block_t *keep, uint32_t n) {
    bx_heap_t *self = bx_tls_heap; /* NULL during the thread's own teardown */
    b->frees -= n; /* they were never this bin's */
    while (n--) {
        void *obj = bx_block_pop(keep);
        /* Read once, before the push: the owner may drain the object, empty the block and
         * give it back (its owner field then reads NO_OWNER) before the push returns. */
        bx_block_t *blk = bx_block_of(obj);
        bx_heap_t *owner = blk->heap;
        size_t size = blk->size;
        bx_object_mark_free(obj, bx_block_key(blk)); /* still free: a second free of it must be caught */
        if (self)
            send_home(self, owner, obj, size);
        else
            send_home_unbatched(owner, obj, size);
    }
}

static bx_heap_t *heap_of_bin(bx_bin_t *b) { return (bx_heap_t *)((char *)(b - b->index) - offsetof(bx_heap_t, small)); }

/* The kept objects no chain counts, which the caller is about to count or send home: they
 * leave the heap's total. */
static uint32_t uncount_kept(bx_heap_t *h, bx_bin_t *b) {
    uint32_t n = bx_block_free_count(b->keep);
    h->kept_bytes -= (size_t)n * b->keep->size;
    return n;
}

void bx_bin_take_kept(bx_bin_t *b) { bx_bin_push_chain(b, b->keep, uncount_kept(heap_of_bin(b), b)); }

void bx_bin_keep_dropped(bx_bin_t *b, uint32_t count) {
    bx_heap_t *h = heap_of_bin(b);
    if (h->kept_bytes < BX_KEEP_HEAP_BYTES && h->state == BX_HEAP_LIVE) {
        h->kept_bytes += (size_t)count * b->keep->size;
        return;
    }
    keep_send_home(b, b->keep, count);
}

/* Sends home the kept objects of a bin that no chain counts (all of them when the bin has
 * no chain). */
static void keep_release(bx_heap_t *h, unsigned bin) {
    bx_bin_t *b = &h->small[bin];
    if (bx_bin_has_uncounted_kept(b)) keep_send_home(b, b->keep, uncount_kept(h, b));
}

/* ---- allocation ------------------------------------------------------------------------ */

/* A forked child may run on another node than its parent's thread (the pinning shim spreads a
 * process tree over the CPUs): new superblocks and large objects then come from the node it
 * runs on. Checked at the first tick after fork, when the shim's fork handler has run. */
static void follow_cpu_node(bx_heap_t *h) {
    h->follow_cpu = false;
    int node = bx_node_current();
    if (node == h->node) return;
    h->node = node;
    h->small_blocks.alloc.node = node;
    for (unsigned i = 0; i < bx_medium_bins; i++) h->medium[i].alloc.node = node;
}

void bx_heap_tick_due(bx_heap_t *h, uint64_t now_ns) {
    if (BX_UNLIKELY(h->follow_cpu)) follow_cpu_node(h);
    h->next_purge_ns = now_ns + (bx_options.decay_ms ? bx_options.decay_ms : 1) * (uint64_t)1000000;
    for (unsigned i = 0; i < bx_small_bins; i++) {
        /* Kept objects of a size the thread stopped allocating are of no use here. */
        if (h->small[i].allocs == h->allocs_at_tick[i]) keep_release(h, i);
        h->allocs_at_tick[i] = h->small[i].allocs;
    }
    bx_heap_flush_outbox(h);
    bx_blockcache_decay(&h->small_blocks);
    for (unsigned i = 0; i < bx_medium_bins; i++) bx_blockcache_decay(&h->medium[i]);
    bx_node_purge(false);
    bx_large_purge(false);
}

/* A bin that frees into one block never starts a new chain, so when that block empties it
 * stays the bin's top chain. Before a refill cuts fresh memory, such blocks of other bins go
 * back to the cache for it: a scan of the bins, paid only when the heap would touch new
 * pages. */
static void reclaim_empty_tops(bx_heap_t *h, bx_bin_t *except) {
    for (unsigned i = 0; i < bx_small_bins; i++) {
        bx_bin_t *b = &h->small[i];
        /* Only bins that allocated nothing since the previous scan: the empty top of a bin
         * that allocates and frees one object at a time is in use, and taking it would cycle
         * blocks through the cache on every refill (merge sort: 1.17 s -> 1.55 s). */
        bool idle = b->allocs == h->allocs_at_reclaim[i];
        h->allocs_at_reclaim[i] = b->allocs;
        if (b != except && idle) bx_bin_release_empty_top(b);
    }
}

/* A keep block's capacity is its bound, so that its used count is the room left and the
 * foreign free tests one field. Zero until the thread's first allocation of the size (an
 * adopted heap starts over): a thread that only frees a size keeps none of it. */
static void keep_enable(bx_block_t *keep) {
    uint32_t limit = (uint32_t)(BX_KEEP_BYTES / keep->size);
    keep->capacity = keep->used = (uint16_t)(limit < BX_KEEP_MIN ? BX_KEEP_MIN : limit > BX_KEEP_MAX ? BX_KEEP_MAX : limit);
}

void *bx_heap_alloc_small_slow(bx_heap_t *h, unsigned bin) {
    bx_heap_tick(h);
    bx_bin_t *b = &h->small[bin];
    if (BX_UNLIKELY(!b->keep->capacity)) keep_enable(b->keep);
    if (bx_remote_pending(h)) {
        bx_heap_drain(h);
        void *p = bx_bin_alloc(b);
        if (p) return p;
    }
    /* Objects kept since the bin's chains ran out. */
    if (bx_bin_has_uncounted_kept(b)) {
        bx_bin_take_kept(b);
        return bx_bin_alloc(b);
    }
    if (!b->lists[bx_bin_list_slot(BX_LIST_ALMOST_FULL)] && !b->lists[bx_bin_list_slot(BX_LIST_ALMOST_EMPTY)] &&
        bx_blockcache_would_grow(&h->small_blocks))
        reclaim_empty_tops(h, b);
    void *p = bx_bin_refill_alloc(b, h);
    /* Checked mode: the whole block a new chain starts on, once per refill. */
    if (BX_UNLIKELY(bx_options.check) && p) bx_checked_block(bx_block_of(p));
    return p;
}

void *bx_heap_alloc_medium(bx_heap_t *h, unsigned bin) {
    bx_heap_tick(h);
    if (bx_remote_pending(h)) bx_heap_drain(h);
    bx_blockcache_t *bc = &h->medium[bin];
    /* Rather than fresh pages, a free block of the next sizes up (blockcache.h). */
    for (unsigned j = bin + 1; bx_blockcache_would_grow(bc) && j <= bin + BX_MEDIUM_BORROW && j < bx_medium_bins; j++)
        if (!bx_blockcache_would_grow(&h->medium[j])) bc = &h->medium[j];
    bx_superblock_t *sb;
    void *p = bx_blockcache_alloc(bc, &sb);
    if (!p) return NULL;
    ((uintptr_t *)p)[1] = 0; /* no stale free or aligned mark from the block's last use */
    bx_sb_set_live(sb, bx_sb_index(sb, p));
    h->counters.medium++;
    h->counters.medium_live_bytes += sb->block_size;
    return p;
}

void *bx_heap_alloc(bx_heap_t *h, size_t size) {
    if (size <= BX_SMALL_MAX) {
        unsigned bin = bx_small_bin(size);
        void *p = bx_bin_alloc(&h->small[bin]);
        return p ? p : bx_heap_alloc_small_slow(h, bin);
    }
    if (size <= BX_MEDIUM_MAX) return bx_heap_alloc_medium(h, bx_medium_bin(size));
    bool fresh;
    h->counters.large++;
    bx_heap_tick(h);
    return bx_large_alloc(size, BX_ALIGNMENT, h->node, &fresh);
}

/* ---- threads ----------------------------------------------------------------------------- */

static void thread_exit(void *arg) {
    bx_heap_t *h = arg;
    bx_tls_heap = bx_tls_fast = NULL;
    bx_tls_bin_for = bin_for_none;
    tls_torn_down = true; /* later mallocs of this thread go to the orphan heap */
    if (!h || h->state != BX_HEAP_LIVE) return;
    bx_heap_release_free(h);
    bx_lock(&registry_lock);
    h->state = BX_HEAP_ABANDONED;
    h->next_abandoned = abandoned;
    abandoned = h;
    bx_unlock(&registry_lock);
}

static bx_heap_t *adopt(int node) {
    bx_heap_t *h = NULL;
    bx_lock(&registry_lock);
    for (bx_heap_t **link = &abandoned; *link; link = &(*link)->next_abandoned)
        if ((*link)->node == node) {
            h = *link;
            *link = h->next_abandoned;
            h->state = BX_HEAP_LIVE;
            break;
        }
    bx_unlock(&registry_lock);
    /* Keeping follows the sizes the new thread allocates, not the ones its heap's last
     * thread did (the keep blocks were emptied when that thread exited). */
    for (unsigned i = 0; h && i < bx_small_bins; i++)
        if (!bx_block_free_count(&h->keep[i])) h->keep[i].capacity = h->keep[i].used = 0;
    return h;
}

bx_heap_t *bx_heap_acquire(void) {
    if (tls_torn_down) return NULL;
    int node = bx_node_current();
    bx_heap_t *h = adopt(node);
    if (!h) h = heap_create(node, BX_HEAP_LIVE);
    if (!h) return NULL;
    bx_tls_heap = h;
    if (!bx_options.check) {
        bx_tls_fast = h;
        bx_tls_bin_for = h->bin_for;
    }
    /* May allocate (keys past the first 32): this thread already has its heap. */
    pthread_setspecific(exit_key, h);
    if (bx_remote_pending(h)) bx_heap_drain(h);
    return h;
}

void *bx_heap_alloc_orphan(size_t size) {
    bx_lock(&orphan_lock);
    if (!orphan) orphan = heap_create(0, BX_HEAP_ORPHAN);
    void *p = NULL;
    if (orphan) {
        if (bx_remote_pending(orphan)) bx_heap_drain(orphan);
        p = bx_heap_alloc(orphan, size);
    }
    bx_unlock(&orphan_lock);
    return p;
}

void bx_heap_trim_all(void) {
    if (bx_tls_heap) bx_heap_release_free(bx_tls_heap);
    /* Ownerless heaps: take each in turn off the abandoned list, then the orphan. */
    for (;;) {
        bx_lock(&registry_lock);
        bx_heap_t *h = NULL;
        for (bx_heap_t *a = abandoned; a; a = a->next_abandoned)
            if (bx_remote_pending(a) || a->small_blocks.count) {
                h = a;
                break;
            }
        bx_unlock(&registry_lock);
        if (!h || !take_ownerless(h, true)) break;
        bx_heap_release_free(h);
        return_ownerless(h);
    }
    bx_lock(&orphan_lock);
    if (orphan) bx_heap_release_free(orphan);
    bx_unlock(&orphan_lock);
}

bool bx_heap_check(bx_heap_t *h) {
    for (unsigned i = 0; i < bx_small_bins; i++)
        if (!bx_bin_check(&h->small[i])) return false;
    for (unsigned step = 0; step < BX_SMALL_STEPS; step++) /* malloc's table: the bin that fits */
        if (h->bin_for[step] != &h->small[bx_small_index[step]] || h->bin_for[step]->size < step * 16) return false;
    if (!bx_blockalloc_check(&h->small_blocks.alloc)) return false;
    for (unsigned i = 0; i < bx_medium_bins; i++)
        if (!bx_blockalloc_check(&h->medium[i].alloc)) return false;
    return true;
}

void bx_heap_for_each(void (*fn)(bx_heap_t *, void *), void *arg) {
    bx_lock(&registry_lock);
    for (bx_heap_t *h = all_heaps; h; h = h->next_all) fn(h, arg);
    if (orphan) fn(orphan, arg);
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
        bx_remote_after_fork(h);
        if (h != bx_tls_heap && (h->state == BX_HEAP_LIVE || h->state == BX_HEAP_RECLAIMING))
            h->state = BX_HEAP_LOST;
    }
    if (bx_tls_heap && bx_tls_heap->state == BX_HEAP_LIVE) {
        bx_tls_heap->follow_cpu = true;
        bx_tls_heap->next_purge_ns = 0; /* the next slow path ticks */
    }
}

void bx_heap_global_init(void) { pthread_key_create(&exit_key, thread_exit); }

void bx_heap_register_fork_handlers(void) { pthread_atfork(fork_prepare, fork_parent, fork_child); }
