/* heap.c - a thread heap: creation, allocation by size range, local and foreign frees, the
 * drain of remote frees. */
#define _GNU_SOURCE
#include "heap/heap.h"

#include <string.h>

#include "mem/arena.h"
#include "mem/large.h"
#include "mem/node.h"
#include "os/options.h"
#include "mem/pagemap.h"

bx_heap_tick_fn *bx_heap_tick_handler;

BX_STATIC_ASSERT(BX_SMALL_BINS <= BX_BLOCKCACHE_LISTS, "a list of cached blocks per small bin");

bx_bin_t bx_heap_bin_none = {.chains.top = {.block = &bx_block_none}};

/* ---- creation ----------------------------------------------------------------------- */

static size_t rings_records(void) {
    size_t records = 0;
    for (unsigned i = 0; i < BX_SMALL_BINS; i++) records += bx_bin_ring_size(bx_small_size[i]);
    return records;
}

/* The keep blocks' arrays, after the rings (keep.h). */
static size_t keep_slots(void) {
    size_t slots = 0;
    for (unsigned i = 0; i < BX_SMALL_BINS; i++) slots += bx_keep_capacity(bx_small_size[i]);
    return slots;
}

/* Bin i's ring and keep array: after every earlier bin's, past the heap's struct. */
static BX_NOINLINE void format_bin(bx_heap_t *h, unsigned i) {
    bx_chain_t *ring = (bx_chain_t *)((char *)h + bx_align_up(sizeof(bx_heap_t), 64));
    void **kept = (void **)(ring + rings_records());
    for (unsigned j = 0; j < i; j++) {
        ring += bx_bin_ring_size(bx_small_size[j]);
        kept += bx_keep_capacity(bx_small_size[j]);
    }
    bx_bin_t *b = &h->small[i];
    bx_bin_init(b, i, bx_small_size[i], ring, bx_bin_ring_size(bx_small_size[i]), &h->small_blocks);
    bx_keep_init(&h->keep[i], bx_small_size[i], i, kept);
    b->keep = &h->keep[i];
    b->keeper = &h->keeper;
    b->home = &h->remote;
}

void bx_heap_reset_bin_table(bx_heap_t *h) {
    for (unsigned step = 0; step < BX_SMALL_STEPS; step++)
        __atomic_store_n(&h->bin_for[step], &h->small[bx_small_index[step]], __ATOMIC_RELAXED);
}

bx_heap_t *bx_heap_create(int node, int state) {
    size_t head = bx_align_up(sizeof(bx_heap_t), 64);
    size_t size =
        bx_align_up(head + rings_records() * sizeof(bx_chain_t) + keep_slots() * sizeof(void *), bx_os_page_size());
    bx_heap_t *h = bx_os_map(size); /* zero-filled; ring pages are touched only when used */
    if (!h) return NULL;
    h->map_size = size;
    h->node = node;
    bx_outbox_init(&h->outbox);
    h->keeper.outbox = &h->outbox;
    bx_heap_set_state(h, state);
    /* Bins are formatted at their first allocation (format_bin): a thread that uses a few
     * sizes writes a few bins' pages, not all 86 bins' and keeps' (40 KB a heap). */
    bx_heap_reset_bin_table(h);
    bx_blockcache_init(&h->small_blocks, h, BX_TAG_SMALL, BX_BLOCK_SIZE, BX_SMALL_BLOCK_CACHE_SUPERBLOCKS, UINT32_MAX,
                       node, h->small_block_lists, BX_SMALL_BINS);
    bx_blockcache_lend(&h->small_blocks);
    for (unsigned i = 0; i < BX_MEDIUM_BINS; i++) {
        uint32_t max_blocks = (uint32_t)(BX_MEDIUM_BLOCK_CACHE_BYTES / bx_medium_size[i]);
        bx_blockcache_init(&h->medium[i], h, BX_TAG_MEDIUM, bx_medium_size[i], BX_MEDIUM_BLOCK_CACHE_SUPERBLOCKS,
                           max_blocks < 2 ? 2 : max_blocks, node, NULL, 1);
    }
    return h;
}

void bx_heap_set_state(bx_heap_t *h, int state) {
    bool live = state == BX_HEAP_LIVE;
    atomic_store_explicit(&h->state, state, memory_order_relaxed);
    /* Only a running thread batches sends for it and drains what keeps coming. */
    atomic_store_explicit(&h->remote.unattended, !live, memory_order_relaxed);
    h->keeper.limit = live ? BX_KEEP_HEAP_BYTES : 0;
}

/* ---- frees ---------------------------------------------------------------------------- */

void bx_heap_free_medium(bx_heap_t *h, void *sbp, uint32_t index) {
    bx_superblock_t *sb = sbp;
    h->counters.medium_live_bytes -= sb->block_size;
    bx_blockcache_free_home(sb, bx_sb_block(sb, index));
}

void bx_heap_free_front_full(bx_heap_t *h, bx_block_t *blk, void *obj) {
    bx_bin_front_full(blk->owner_bin);
    bx_heap_free_small_block(h, blk, obj);
}

static inline void drain_if_due(bx_heap_t *h) {
    if (BX_UNLIKELY(bx_remote_waiting(&h->remote) >= BX_REMOTE_DRAIN_BYTES)) bx_heap_drain(h);
}

void bx_heap_free_new_chain(bx_heap_t *h, bx_bin_t *b, bx_block_t *blk) {
    bx_bin_new_chain(b, blk);
    drain_if_due(h);
}

static inline void send_home(bx_heap_t *self, bx_remote_t *home, void *obj, size_t size, uintptr_t key) {
    bx_object_mark_free(obj, key); /* a second free of it is caught before the owner drains it */
    bx_remote_send(self ? &self->outbox : NULL, home, obj, size);
}

void bx_heap_send_home(bx_heap_t *self, bx_remote_t *home, void *obj, size_t size, uintptr_t key) {
    if (self) self->counters.remote_frees++;
    send_home(self, home, obj, size, key);
}

/* Out of line, so that keeping an object needs no stack frame. Into the run of its block:
 * the owner takes the run back in one step. */
static BX_NOINLINE void send_home_small(bx_heap_t *self, bx_block_t *blk, void *obj) {
    bx_remote_send_small(&self->outbox, blk, obj);
}

/* Bounds what all keeps hold together (bounds.h): a scan of the bins, once per
 * BX_KEEP_BALANCE_FREES foreign frees. */
static BX_NOINLINE void balance_keeps(bx_heap_t *h) {
    size_t held = 0;
    for (unsigned i = 0; i < BX_SMALL_BINS; i++) held += bx_keep_held_bytes(&h->keep[i]);
    bool close = held > BX_KEEP_HELD_BYTES;
    /* Closed again while over (keeps that grew since take no more either); opened once
     * below a quarter: reopened at half, crossfree's keeps filled again at once and held
     * 1 MB more a thread, in the same time (docs/design.md, Kept frees). */
    if (!close && (!h->keeps_closed || held >= BX_KEEP_HELD_BYTES / 4)) return;
    for (unsigned i = 0; i < BX_SMALL_BINS; i++) {
        if (close)
            bx_keep_close(&h->keep[i]);
        else
            bx_keep_open(&h->keep[i]);
    }
    h->keeps_closed = close;
}

void bx_heap_free_foreign_small(bx_heap_t *self, bx_block_t *blk, void *obj) {
    size_t frees = ++self->counters.remote_frees;
    /* The block's run is open: its first object found no room in the keep (or the keep was
     * off), so the rest of a batch of the block follow it without asking again. */
    if (BX_LIKELY(self->outbox.last_run->blk == blk && frees % BX_KEEP_BALANCE_FREES)) {
        bx_remote_send_small(&self->outbox, blk, obj);
        return;
    }
    if (BX_UNLIKELY(frees % BX_KEEP_BALANCE_FREES == 0)) balance_keeps(self);
    /* used is the keep block's room left; none for a size this thread never allocated (its
     * bin may be unformatted), and never objects of another node, nor of a shared heap:
     * kept, such an object would be handed out here and freed here again, foreign each time,
     * and never go home (a thread's first 1,024 objects come from its CPU's shared heap: in
     * a queue of 4,096, a quarter of all frees). */
    const bx_heap_t *owner = blk->heap;
    if (BX_LIKELY(self->keep[blk->bin].used && owner->node == self->node && !bx_heap_is_shared(owner)) &&
        bx_bin_keep_foreign(&self->small[blk->bin], blk, obj))
        return;
    send_home_small(self, blk, obj);
}

/* ---- mixed blocks ---------------------------------------------------------------------- */

static void mixed_link(bx_heap_t *h, bx_block_t *blk) {
    blk->prev = NULL;
    blk->next = h->mixed_blocks;
    if (blk->next) blk->next->prev = blk;
    h->mixed_blocks = blk;
}

static void mixed_give_back(bx_heap_t *h, bx_block_t *blk) {
    if (h->mixed_cursor == blk) h->mixed_cursor = blk->next;
    if (blk->prev)
        blk->prev->next = blk->next;
    else
        h->mixed_blocks = blk->next;
    if (blk->next) blk->next->prev = blk->prev;
    blk->prev = blk->next = NULL;
    bx_mixed_release(blk);
    blk->heap = BX_BLOCK_NO_OWNER; /* stale pointers into it are no longer anyone's */
    bx_blockcache_free_home(bx_superblock_of(blk->mem), blk->mem);
}

void bx_heap_free_mixed(bx_heap_t *self, bx_block_t *blk, void *p) {
    /* Read while p's object is live: once it is freed, the owner may give the block away. */
    bx_heap_t *owner = blk->heap;
    if (bx_mixed_free(blk, p, "free()") == 0 && self && owner == self) mixed_give_back(self, blk);
}

void bx_heap_mixed_tick(bx_heap_t *h) {
    for (bx_block_t *blk = h->mixed_blocks, *next; blk; blk = next) {
        next = blk->next;
        if (bx_mixed_live(blk) == 0)
            mixed_give_back(h, blk);
        else
            bx_mixed_purge(blk);
    }
}

/* A sparse block of an idle size, unchanged since the bin's last pass, mixes (mixed.h): its
 * few live objects pin most of its pages, which other sizes can then fill. Unchanged: a
 * block its objects are still leaving would soon have emptied and gone back whole; mixed, it
 * left its size, which took fresh blocks instead, and in programs where every size comes and
 * goes (crossfree, server) conversions fed the growth that triggers them (crossfree: 11,253
 * blocks mixed, peak RSS 10x). */
/* Mixed blocks a malloc looks at before it takes a fresh block: with the run index a block
 * without a fitting run costs a look at its entries. 8 held 0.3 MB more at the shape
 * change's peak (86.3 MB, 1.41x live; 32: 85.7 MB, 1.39x). */
#define MIXED_PROBES 32

void bx_heap_mix_idle_bin(bx_heap_t *h, unsigned bin) {
    bx_bin_t *b = &h->small[bin];
    /* Its front cache and chains went at that pass; nothing was allocated or freed since. */
    if (bx_options.check || !__atomic_load_n(&bx_options.mixed, __ATOMIC_RELAXED) || !bx_bin_formatted(b) ||
        bx_bin_front_count(b) || b->chains.len || bx_bin_frees(b) != h->frees_at_purge[bin])
        return;
    for (bx_block_t *blk = b->lists[bx_bin_list_slot(BX_LIST_ALMOST_EMPTY)], *next; blk; blk = next) {
        next = blk->next;
        if (blk->chain_refs || !bx_block_sparse(blk)) continue;
        uint32_t live = blk->used;
        bx_bin_detach(b, blk);
        if (!bx_mixed_convert(blk)) {
            bx_bin_attach(b, blk);
            return;
        }
        b->block_frees += live; /* its objects are the mixed block's from now on */
        mixed_link(h, blk);
    }
}

static void *mixed_alloc(bx_heap_t *h, uint32_t size) {
    bx_block_t *blk = h->mixed_cursor ? h->mixed_cursor : h->mixed_blocks;
    for (unsigned probe = 0; blk && probe < MIXED_PROBES; probe++) {
        void *p = bx_mixed_alloc(blk, size);
        if (p) {
            h->mixed_cursor = blk;
            h->counters.mixed++;
            return p;
        }
        blk = blk->next ? blk->next : h->mixed_blocks;
    }
    h->mixed_cursor = blk;
    return NULL;
}

/* ---- the drain ------------------------------------------------------------------------ */

/* Returns the object's size, read before the free may give its block away. */
static inline size_t drain_small(bx_heap_t *h, void *obj) {
    bx_block_t *blk = bx_block_of(obj);
    size_t size = blk->size;
    if (BX_UNLIKELY(bx_block_is_mixed(blk))) /* freed by a thread that saw it before it mixed */
        bx_heap_free_mixed(h, blk, obj);
    else
        bx_bin_free_direct(&h->small[blk->bin], blk, obj);
    return size;
}

static size_t drain_one(bx_heap_t *h, void *obj) {
    if (BX_LIKELY(bx_in_small_arena(obj))) return drain_small(h, obj); /* as free asks */
    uintptr_t entry = bx_pagemap_get(obj);
    if (bx_tag_of(entry) == BX_TAG_SMALL) return drain_small(h, obj);
    bx_superblock_t *sb = bx_span_of(entry);
    size_t size = sb->block_size;
    bx_heap_free_medium(h, sb, bx_sb_index(sb, obj));
    return size;
}

#define DRAIN_STEP 64
#define DRAIN_AHEAD 8

/* Whether obj, read from the link of an object on the remote list, is an object of h that
 * another thread freed: a slot of one of its blocks or superblocks, marked free. A write
 * after free can land on the link while the object is on its way; nothing is written
 * through obj before this says yes. */
static bool remote_link_ok(bx_heap_t *h, const void *obj) {
    uintptr_t entry = bx_pagemap_get(obj);
    if (bx_tag_of(entry) == BX_TAG_SMALL) {
        const bx_block_t *blk = bx_block_of(obj);
        if (BX_UNLIKELY(bx_block_is_mixed(blk))) {
            void *start;
            size_t usable;
            bool freed;
            return blk->heap == h && bx_mixed_lookup(blk, obj, &start, &usable, &freed) && start == obj;
        }
        return blk->heap == h && bx_block_is_own_slot(blk, obj) && bx_object_is_free(obj, bx_block_key(blk));
    }
    if (bx_tag_of(entry) != BX_TAG_MEDIUM) return false;
    bx_superblock_t *sb = bx_span_of(entry);
    uint32_t index = 0;
    return sb->heap == h && bx_sb_object(sb, obj, &index) == obj && !bx_sb_live(sb, index) &&
           bx_object_is_free(obj, sb->free_key);
}

/* A run of a block that became mixed after its objects were sent: each freed alone, from the
 * newest along the links (the bitmaps check each before it goes). */
static BX_NOINLINE size_t drain_mixed_run(bx_heap_t *h, bx_block_t *blk, char *head, uint32_t count) {
    size_t size = blk->size;
    char *obj = head;
    for (uint32_t i = 0; i < count; i++) {
        uintptr_t next = *(const uintptr_t *)obj ^ bx_link_secret;
        bx_heap_free_mixed(h, blk, obj);
        if (i + 1 == count) break;
        if (BX_UNLIKELY(next & BX_FREE_LINK_BAD))
            bx_fatalf("malloc(): corrupted remote frees at %p (a run of objects other threads freed)", (void *)obj);
        obj = bx_block_mem_of(head) + next;
    }
    return size * count;
}

/* A run (remote.h): spliced onto its block's list. What the inbox says is checked before
 * anything is written: the block is h's, both ends are its slots, the count fits. */
static size_t drain_run(bx_heap_t *h, uintptr_t head_word, uintptr_t meta) {
    char *head = (char *)(head_word & ~(uintptr_t)BX_RUN_HEAD);
    bx_block_t *blk = bx_block_of(head);
    char *tail = bx_block_mem_of(head) + bx_run_meta_tail(meta);
    uint32_t count = bx_run_meta_count(meta);
    if (BX_UNLIKELY(bx_block_is_mixed(blk)) && (meta & BX_RUN_META) && blk->heap == h) return drain_mixed_run(h, blk, head, count);
    if (BX_UNLIKELY(!(meta & BX_RUN_META) || blk->heap != h || !count || count > blk->used ||
                    !bx_block_is_own_slot(blk, head) || !bx_block_is_own_slot(blk, tail)))
        bx_fatalf("malloc(): corrupted remote frees at %p (a run of objects other threads freed)", (void *)head);
    size_t size = blk->size;
    bx_bin_free_run(&h->small[blk->bin], blk, head, tail, count);
    return size * count;
}

/* Fetches what draining word i will touch: an object and its block header, or a run's
 * header and oldest object (the only one of the run written). */
static inline void drain_prefetch(void *const *buf, uint32_t i) {
    uintptr_t w = (uintptr_t)buf[i];
    if (w & BX_RUN_META) return;
    __builtin_prefetch(bx_block_of((void *)w), 1);
    if (w & BX_RUN_HEAD)
        __builtin_prefetch(bx_block_mem_of((void *)w) + bx_run_meta_tail((uintptr_t)buf[i + 1]), 1);
    else
        __builtin_prefetch((void *)w, 1);
}

void bx_heap_drain(bx_heap_t *h) {
    size_t bytes = 0;
    void *buf[DRAIN_STEP];
    uint32_t n;
    /* Bounded by one inbox's worth, so senders that keep refilling it cannot hold us. */
    for (uint32_t taken = 0; taken < BX_INBOX_SLOTS && (n = bx_remote_take_inbox(&h->remote, buf, DRAIN_STEP));
         taken += n) {
        /* The addresses are known up front: fetch objects and their block headers ahead,
         * so that the misses overlap instead of coming one after another. */
        for (uint32_t i = 0; i < n && i < DRAIN_AHEAD; i++) drain_prefetch(buf, i);
        for (uint32_t i = 0; i < n; i++) {
            if (i + DRAIN_AHEAD < n) drain_prefetch(buf, i + DRAIN_AHEAD);
            uintptr_t w = (uintptr_t)buf[i];
            if (w & BX_RUN_HEAD) {
                bytes += drain_run(h, w, (uintptr_t)buf[i + 1]);
                i++;
            } else if (!(w & BX_RUN_META)) {
                bytes += drain_one(h, buf[i]);
            }
        }
    }
    void *obj = bx_remote_take(&h->remote);
    while (obj) {
        void *next = bx_link_get(obj);
        if (BX_UNLIKELY(next && !remote_link_ok(h, next)))
            bx_fatalf("malloc(): corrupted free list at %p (objects other threads freed): the free object there was "
                      "written after it was freed",
                      obj);
        bytes += drain_one(h, obj);
        obj = next;
    }
    bx_remote_taken(&h->remote, bytes);
}

/* ---- allocation ------------------------------------------------------------------------ */

/* A forked child may run on another node than its parent's thread (the pinning shim spreads a
 * process tree over the CPUs): new superblocks and large objects then come from the node it
 * runs on. Checked at the first tick after fork, when the shim's fork handler has run. */
void bx_heap_follow_cpu(bx_heap_t *h) {
    h->follow_cpu = false;
    int node = bx_node_current();
    if (node == h->node) return;
    h->node = node;
    h->small_blocks.alloc.node = node;
    for (unsigned i = 0; i < BX_MEDIUM_BINS; i++) h->medium[i].alloc.node = node;
}

/* A bin that frees into one block never starts a new chain, so when that block empties it
 * stays the bin's top chain. Before a refill cuts fresh memory, such blocks of other bins go
 * back to the cache for it: a scan of the bins, paid only when the heap would touch new
 * pages. A bin idle for BX_PURGE_IDLE_SCANS such scans (the heap grew by 1 MB in other
 * sizes meanwhile) also gives back the pages of its blocks that hold no live object: a live
 * set that moved to other sizes reuses them through the kernel, as a coalescing allocator
 * would reuse the gaps. */
#define BX_PURGE_IDLE_SCANS 16

bool bx_heap_purge_idle_bin(bx_heap_t *h, unsigned bin, bool spare_sparse) {
    bx_bin_t *b = &h->small[bin];
    /* Its blocks change only by frees (the bin allocates nothing): none since the last pass,
     * nothing to gain from walking them again, unless that pass spared some. */
    bool unchanged = bx_bin_frees(b) == h->frees_at_purge[bin];
    /* Spared at the last pass: the blocks that did not mix since give their pages back at
     * the first pass not asked to spare them (the size did not stay still, or a tick). */
    if (!bx_bin_formatted(b) || (unchanged && (spare_sparse || !h->purge_spared[bin]))) return false;
    h->frees_at_purge[bin] = bx_bin_frees(b);
    h->purge_spared[bin] = spare_sparse;
    /* Its chains go first: they pin their blocks (entirely free ones go to the cache, where
     * any size takes them), and their counts include the slots a purge takes off. Its kept
     * objects go home, of no use to a size not allocated (they would fill the keeps' bound
     * for the sizes that are). */
    bx_bin_flush(b);
    bx_bin_release_kept(b);
    bx_bin_purge_pages(b, spare_sparse);
    return true;
}
/* How long a size must stay still (no malloc, no free) before its sparse blocks mix: 20 ms,
 * or 2 ms while the heap grew by BX_PURGE_IDLE_SCANS blocks (1 MB) in other sizes. 2 ms
 * alone mixed blocks of sizes in use at a steady state (`mixed`: 1.4x the time); 20 ms alone
 * left the first 20 ms of a shape change's growth to fresh blocks: with the sparse blocks'
 * pages kept (below), 1.54x live at its peak instead of 1.39x (memshapes shape, scale 0.3). */
#define MIX_STILL_NS (20 * 1000 * 1000ull)
#define MIX_STILL_GROWING_NS (2 * 1000 * 1000ull)

/* `mix`: sizes that mixed blocks serve are growing (BX_MIX_GROWTH_BLOCKS). */
static void reclaim_before_growth(bx_heap_t *h, bx_bin_t *except, bool mix) {
    uint64_t now = bx_now_ns();
    for (unsigned i = 0; i < BX_SMALL_BINS; i++) {
        bx_bin_t *b = &h->small[i];
        /* Only bins that allocated nothing since the previous scan: the empty top of a bin
         * that allocates and frees one object at a time is in use, and taking it would cycle
         * blocks through the cache on every refill (merge sort: 1.17 s -> 1.55 s). */
        bool idle = bx_bin_allocs(b) == h->allocs_at_reclaim[i];
        h->allocs_at_reclaim[i] = bx_bin_allocs(b);
        bool still = idle && bx_bin_frees(b) == h->frees_at_scan[i];
        h->frees_at_scan[i] = bx_bin_frees(b);
        if (!still) {
            h->still_since_ns[i] = now;
            h->still_scans[i] = 0;
        } else if (h->still_scans[i] < UINT16_MAX) {
            h->still_scans[i]++;
        }
        if (!idle || b == except) {
            h->idle_scans[i] = 0;
            continue;
        }
        bx_bin_release_empty_top(b);
        /* Neither allocated nor freed for a while as the heap grew: its survivors stay, and
         * the growth elsewhere can use their gaps. A clock, not only a count of scans: where
         * every size comes and goes, scans come in bursts and a size in use looked still for
         * 16 of them (crossfree: 5,317 blocks mixed, most soon empty, peak RSS 7x). */
        uint64_t still_ns = now - h->still_since_ns[i];
        bool mix_due = mix && (still_ns >= MIX_STILL_NS ||
                               (still_ns >= MIX_STILL_GROWING_NS && h->still_scans[i] >= BX_PURGE_IDLE_SCANS));
        /* A size still now, while sizes that could use its gaps grow, keeps the pages of its
         * sparse blocks: they mix soon, and the growth then fills their gaps without a fault
         * (the shape change gave back 2,800 runs of pages and faulted most in again: 1.2x its
         * time). A mix needs a pass since the last free: when due without one, the pass
         * comes first. */
        if (++h->idle_scans[i] == BX_PURGE_IDLE_SCANS || (mix_due && bx_bin_frees(b) != h->frees_at_purge[i])) {
            h->idle_scans[i] = 0;
            bx_heap_purge_idle_bin(h, i, mix && still);
        }
        if (mix_due) {
            h->still_since_ns[i] = now;
            h->still_scans[i] = 0;
            bx_heap_mix_idle_bin(h, i);
        }
    }
}

void *bx_heap_alloc_small_slow(bx_heap_t *h, unsigned bin) {
    bx_heap_tick(h);
    bx_bin_t *b = &h->small[bin];
    if (BX_UNLIKELY(!bx_bin_formatted(b))) format_bin(h, bin);
    if (BX_UNLIKELY(!bx_keep_enabled(b->keep))) {
        bx_keep_enable(b->keep);
        if (h->keeps_closed) bx_keep_close(b->keep); /* opened with the others */
    }
    if (bx_heap_remote_pending(h)) {
        bx_heap_drain(h);
        void *p = bx_bin_alloc(b);
        if (p) return p;
    }
    /* Objects kept since the bin's chains ran out. */
    if (bx_bin_has_uncounted_kept(b)) {
        bx_bin_take_kept(b);
        return bx_bin_alloc(b);
    }
    void *p = bx_bin_refill_listed(b);
    if (!p) {
        /* Decided after the lists, not from their heads: blocks that chains name stay listed
         * until their chains go, and the refill skips them. */
        if (bx_blockcache_would_grow(&h->small_blocks)) {
            /* Rather than fresh pages, a run of a mixed block's free space; the scan only
             * when the heap does grow (once per mixed object, it was 5% of the shape change's
             * time), then again with what it mixed. */
            bool mix = b->size >= BX_MIXED_MIN_SIZE && __atomic_load_n(&bx_options.mixed, __ATOMIC_RELAXED);
            if (mix && h->mixed_blocks && (p = mixed_alloc(h, b->size))) return p;
            if (mix) h->mixable_growth++;
            reclaim_before_growth(h, b, mix && h->mixable_growth >= BX_MIX_GROWTH_BLOCKS);
            if (mix && h->mixed_blocks && bx_blockcache_would_grow(&h->small_blocks) && (p = mixed_alloc(h, b->size)))
                return p;
        }
        p = bx_bin_refill_new(b, h);
    }
    /* Checked mode: the whole block a new chain starts on, once per refill. */
    if (BX_UNLIKELY(bx_options.check) && p && !bx_block_check(bx_block_of(p)))
        bx_fatalf("malloc(): corrupted block %p (header or free list)", (const void *)bx_block_of(p));
    return p;
}

void *bx_heap_alloc_medium(bx_heap_t *h, unsigned bin) {
    bx_heap_tick(h);
    if (bx_heap_remote_pending(h)) bx_heap_drain(h);
    bx_blockcache_t *bc = &h->medium[bin];
    /* Rather than fresh pages, a free block of the next sizes up (blockcache.h). */
    for (unsigned j = bin + 1; bx_blockcache_would_grow(bc) && j <= bin + BX_MEDIUM_BORROW && j < BX_MEDIUM_BINS; j++)
        if (!bx_blockcache_would_grow(&h->medium[j])) bc = &h->medium[j];
    bx_superblock_t *sb;
    void *p = bc == &h->medium[bin] ? bx_blockcache_alloc(bc, &sb) : bx_blockcache_borrow(bc, &sb);
    if (!p) return NULL;
    ((uintptr_t *)p)[1] = 0; /* no stale free or aligned mark from the block's last use */
    bx_sb_set_live(sb, bx_sb_index(sb, p));
    h->counters.medium++;
    h->counters.medium_live_bytes += sb->block_size;
    h->counters.medium_bytes += sb->block_size;
    return p;
}

void *bx_heap_alloc_large(bx_heap_t *h, size_t size, size_t alignment, bool *fresh) {
    bx_heap_tick(h);
    void *p = bx_large_alloc(size, alignment, h->node, fresh);
    if (p) h->counters.large++, h->counters.large_bytes += size;
    return p;
}

void *bx_heap_alloc_sample(bx_heap_t *h, size_t size) {
    bx_heap_tick(h);
    void *p = bx_large_alloc_sample(size, h->node);
    if (p) h->counters.large++, h->counters.large_bytes += size;
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
    return bx_heap_alloc_large(h, size, BX_ALIGNMENT, &fresh);
}

void bx_heap_check_heads(bx_heap_t *h, const char *op) {
    for (unsigned i = 0; i < BX_SMALL_BINS; i++) {
        if (!bx_bin_formatted(&h->small[i])) continue;
        bx_bin_check_front(&h->small[i], op);
        const bx_block_t *top = h->small[i].chains.top.block;
        if (top != &bx_block_none && top->heap == h) bx_block_check_head(top, op);
    }
    for (unsigned i = 0; i < BX_MEDIUM_BINS; i++) bx_blockcache_check_head(&h->medium[i], op);
}

bool bx_heap_check(bx_heap_t *h) {
    for (unsigned i = 0; i < BX_SMALL_BINS; i++)
        if (!bx_bin_check(&h->small[i])) return false;
    for (unsigned step = 0; step < BX_SMALL_STEPS; step++) { /* malloc's table: the bin that fits */
        bx_bin_t *b = __atomic_load_n(&h->bin_for[step], __ATOMIC_RELAXED);
        /* A release request redirects it to the stand-in until the owner's next malloc. */
        unsigned bin = bx_small_index[step];
        if (b == &bx_heap_bin_none) continue;
        if (b != &h->small[bin] || bx_small_size[bin] < step * 16) return false;
        if (bx_bin_formatted(b) && b->size != bx_small_size[bin]) return false;
    }
    if (!bx_blockcache_check(&h->small_blocks)) return false;
    for (const bx_block_t *blk = h->mixed_blocks, *prev = NULL; blk; prev = blk, blk = blk->next)
        if (blk->heap != h || blk->prev != prev || !bx_block_is_mixed(blk) || !bx_mixed_check(blk)) return false;
    for (unsigned i = 0; i < BX_MEDIUM_BINS; i++)
        if (!bx_blockcache_check(&h->medium[i])) return false;
    return true;
}
