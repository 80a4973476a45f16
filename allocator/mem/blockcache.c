/* blockcache.c - the superblock-bounded block cache. */
#include "mem/blockcache.h"

#include "base/bounds.h"
#include "mem/pagemap.h"
#include "os/os.h"

void bx_blockcache_init(bx_blockcache_t *bc, struct bx_heap *owner, unsigned tag, uint32_t block_size, uint32_t bound,
                        uint32_t max_blocks, int node, void **heads, uint32_t lists) {
    bx_blockalloc_init(&bc->alloc, owner, tag, block_size, node);
    if (!heads || lists == 0) {
        heads = &bc->one_head;
        lists = 1;
    }
    if (lists > BX_BLOCKCACHE_LISTS) lists = BX_BLOCKCACHE_LISTS;
    bc->heads = heads;
    bc->lists = lists;
    for (uint32_t i = 0; i < lists; i++) heads[i] = NULL;
    for (unsigned w = 0; w < BX_BLOCKCACHE_LISTS / 64; w++) bc->nonempty[w] = bc->given_this_owner[w] = 0;
    bc->last_list = 0;
    bc->last_given = NULL;
    bc->count = bc->represented = 0;
    bc->bound = bound;
    bc->max_blocks = max_blocks;
    bc->active = 0;
    bc->lock = (bx_lock_t)BX_LOCK_INIT;
    bc->lends = false;
    bc->next_lender = NULL;
}

/* A cached block's first word links the cache, its second names its superblock: no pagemap
 * lookup on the way out. */
static inline bx_superblock_t *cached_sb(void *block) { return ((bx_superblock_t **)block)[1]; }

/* Whether `block`, read from a cached block's link (or the head), is a cached block of bc:
 * a block start below the bump pointer of one of its superblocks, naming that superblock.
 * A medium object starts at its block, so a write after free lands on both words. */
static bool cached_block_ok(const bx_blockcache_t *bc, const void *block) {
    uintptr_t entry = bx_pagemap_get(block);
    if (bx_tag_of(entry) != bc->alloc.tag) return false;
    bx_superblock_t *sb = bx_span_of(entry);
    if (sb->owner != &bc->alloc || (const char *)block < sb->first || (const char *)block >= sb->bump) return false;
    return bx_sb_block(sb, bx_sb_index(sb, block)) == block && cached_sb((void *)(uintptr_t)block) == sb;
}

static __attribute__((noreturn, cold)) void corrupted(const void *block) {
    bx_fatalf("malloc(): corrupted free list at %p (a cached block): the free object there was written after it was freed",
              block);
}

/* The head, a cached block, and its link, NULL or a cached block: what the next take follows. */
static bool head_ok(const bx_blockcache_t *bc, const void *block) {
    return cached_block_ok(bc, block) && (!bx_link_get(block) || cached_block_ok(bc, bx_link_get(block)));
}

static void mark_list(bx_blockcache_t *bc, unsigned list, bool nonempty) {
    uint64_t bit = (uint64_t)1 << (list % 64), word = bc->nonempty[list / 64];
    __atomic_store_n(&bc->nonempty[list / 64], nonempty ? word | bit : word & ~bit, __ATOMIC_RELAXED);
}

static inline void set_head(bx_blockcache_t *bc, unsigned list, void *block) {
    bc->heads[list] = block;
    if (bc->lists > 1) mark_list(bc, list, block != NULL); /* one list: its head says it all */
}

/* Takes the head off a list, checked with its link before either is followed. */
static void *pop_head(bx_blockcache_t *bc, unsigned list) {
    void *block = bc->heads[list];
    if (!head_ok(bc, block)) corrupted(block);
    set_head(bc, list, bx_link_get(block));
    return block;
}

/* Takes the block after the head of a one-list cache (it has two or more), checked with its
 * link before either is followed. */
static void *unlink_second(bx_blockcache_t *bc) {
    void *first = bc->heads[0];
    if (!head_ok(bc, first)) corrupted(first);
    void *second = bx_link_get(first), *third = bx_link_get(second);
    if (third && !cached_block_ok(bc, third)) corrupted(second);
    bx_link_set(first, third);
    return second;
}

static inline bool has_bit(const uint64_t *bits, unsigned list) { return bits[list / 64] >> (list % 64) & 1; }

/* Read without the lock too (would_grow): count is stored atomically, under the lock. */
static bool cache_empty(const bx_blockcache_t *bc) { return __atomic_load_n(&bc->count, __ATOMIC_RELAXED) == 0; }

static void set_count(bx_blockcache_t *bc, uint32_t count) { __atomic_store_n(&bc->count, count, __ATOMIC_RELAXED); }

/* The list nearest `want` that holds a block: want itself, the nearest above, else below. */
static unsigned nearest_list(const bx_blockcache_t *bc, unsigned want) {
    for (unsigned w = want / 64; w < BX_BLOCKCACHE_LISTS / 64; w++) {
        uint64_t bits = bc->nonempty[w];
        if (w == want / 64) bits &= ~(uint64_t)0 << (want % 64);
        if (bits) return w * 64 + (unsigned)__builtin_ctzll(bits);
    }
    for (int w = (int)(want / 64); w >= 0; w--) {
        uint64_t bits = bc->nonempty[w];
        if ((unsigned)w == want / 64) bits &= want % 64 ? ~(uint64_t)0 >> (64 - want % 64) : 0;
        if (bits) return (unsigned)w * 64 + 63 - (unsigned)__builtin_clzll(bits);
    }
    return want; /* the cache is empty: not reached */
}

/* The list a block freed into the cache goes on. */
static unsigned list_of(const bx_blockcache_t *bc, void *block) {
    const bx_block_t *desc = bx_block_of(block);
    return desc->mixed ? bc->lists - 1 : desc->bin % bc->lists;
}

#define ACTIVE_TICK 1
#define ACTIVE_PASS 2

bool bx_blockcache_would_grow(bx_blockcache_t *bc) {
    /* A cached block: no lock needed to say no (only the owner adds to the cache). */
    if (!cache_empty(bc)) return false;
    bx_lock(&bc->lock);
    bool grow = cache_empty(bc) && (bc->alloc.count == 0 || !bc->alloc.heap[0]->free);
    bx_unlock(&bc->lock);
    return grow;
}

/* Every lending cache, newest first; caches are never unlisted (heaps are never unmapped). */
static _Atomic(bx_blockcache_t *) lenders;
/* Where the last borrow found a surplus: tried first. */
static _Atomic(bx_blockcache_t *) lend_hint;

void bx_blockcache_lend(bx_blockcache_t *bc) {
    bc->lends = true;
    bx_blockcache_t *head = atomic_load_explicit(&lenders, memory_order_relaxed);
    do bc->next_lender = head;
    while (!atomic_compare_exchange_weak_explicit(&lenders, &head, bc, memory_order_release, memory_order_relaxed));
}

void bx_blockcache_lock_lenders(void) {
    for (bx_blockcache_t *c = atomic_load_explicit(&lenders, memory_order_acquire); c; c = c->next_lender)
        bx_lock(&c->lock);
}
void bx_blockcache_unlock_lenders(void) {
    for (bx_blockcache_t *c = atomic_load_explicit(&lenders, memory_order_acquire); c; c = c->next_lender)
        bx_unlock(&c->lock);
}
void bx_blockcache_reset_lenders(void) {
    for (bx_blockcache_t *c = atomic_load_explicit(&lenders, memory_order_acquire); c; c = c->next_lender)
        bx_lock_reset(&c->lock);
}

/* A block just taken off bc's lists leaves its counts; its superblock. */
static bx_superblock_t *uncache(bx_blockcache_t *bc, void *block) {
    set_count(bc, bc->count - 1);
    bx_superblock_t *sb = cached_sb(block);
    if (--sb->cached == 0) bc->represented--;
    return sb;
}

/* The head of one list, taken; *sb_out (if not NULL) is set to its superblock. */
static void *pop_list(bx_blockcache_t *bc, unsigned list, bx_superblock_t **sb_out) {
    void *block = pop_head(bc, list);
    if (block == bc->last_given) bc->last_given = NULL;
    bx_superblock_t *sb = uncache(bc, block);
    if (sb_out) *sb_out = sb;
    return block;
}

/* A block of another cache of bc's node that holds more than its reserve, or NULL. Taken
 * with a trylock (the lender may be borrowing from bc at the same time); the block stays its
 * superblock's, and goes back to the lender's cache when emptied. */
static void *borrow_elsewhere(bx_blockcache_t *bc, unsigned want, bx_superblock_t **sb_out) {
    bx_blockcache_t *head = atomic_load_explicit(&lenders, memory_order_acquire);
    bx_blockcache_t *start = atomic_load_explicit(&lend_hint, memory_order_relaxed);
    if (!start) start = head;
    bx_blockcache_t *c = start;
    for (unsigned looked = 0; c && looked < BX_LEND_SCAN; looked++) {
        if (c != bc && c->alloc.node == bc->alloc.node &&
            __atomic_load_n(&c->count, __ATOMIC_RELAXED) > BX_LEND_RESERVE_BLOCKS && bx_trylock(&c->lock)) {
            void *block = NULL;
            if (c->count > BX_LEND_RESERVE_BLOCKS)
                block = pop_list(c, c->lists > 1 ? nearest_list(c, want % c->lists) : 0, sb_out);
            bx_unlock(&c->lock);
            if (block) {
                if (c != start) atomic_store_explicit(&lend_hint, c, memory_order_relaxed);
                return block;
            }
        }
        c = c->next_lender ? c->next_lender : head;
        if (c == start) break;
    }
    return NULL;
}

static void *take(bx_blockcache_t *bc, bx_superblock_t **sb_out, bool not_last, unsigned want) {
    bc->active = ACTIVE_TICK | ACTIVE_PASS;
    if (cache_empty(bc)) {
        /* Only instead of a new superblock: a block of its own superblocks (freed, or cut
         * on first use) is the one whose pages this heap's sizes touched (`memchurn`,
         * borrowing whenever the cache was empty: 1.2x the peak, a fifth more page faults). */
        void *lent = bc->lends && bc->alloc.count == 0 ? borrow_elsewhere(bc, want, sb_out) : NULL;
        return lent ? lent : bx_blockalloc_alloc(&bc->alloc, sb_out);
    }
    unsigned list = want;
    if (bc->lists > 1 && (!has_bit(bc->nonempty, want) || has_bit(bc->given_this_owner, want)))
        list = has_bit(bc->nonempty, bc->last_list) ? bc->last_list : nearest_list(bc, want);
    void *block = NULL;
    if (not_last && bc->heads[0] == bc->last_given && bc->alloc.tag == BX_TAG_MEDIUM) {
        /* Not the block freed last, as glibc does not hand a freed chunk straight back: a
         * stale pointer to it would write into the next object of the size. The second
         * cached block, or one from the superblocks; in a loop that allocates and frees
         * one object, two blocks take turns (no fresh pages after the first time). */
        bc->last_given = NULL;
        if (bc->count == 1) {
            void *other = bx_blockalloc_alloc(&bc->alloc, sb_out);
            if (other) return other;
        } else {
            block = unlink_second(bc);
        }
    }
    if (!block) return pop_list(bc, list, sb_out);
    bx_superblock_t *sb = uncache(bc, block);
    if (sb_out) *sb_out = sb;
    return block;
}

void *bx_blockcache_alloc(bx_blockcache_t *bc, bx_superblock_t **sb_out) {
    bx_lock(&bc->lock);
    void *block = take(bc, sb_out, true, 0);
    bx_unlock(&bc->lock);
    return block;
}

void *bx_blockcache_borrow(bx_blockcache_t *bc, bx_superblock_t **sb_out) {
    bx_lock(&bc->lock);
    void *block = take(bc, sb_out, false, 0);
    bx_unlock(&bc->lock);
    return block;
}

void bx_blockcache_new_owner(bx_blockcache_t *bc) {
    bx_lock(&bc->lock);
    for (unsigned w = 0; w < BX_BLOCKCACHE_LISTS / 64; w++) bc->given_this_owner[w] = 0;
    bx_unlock(&bc->lock);
}

void *bx_blockcache_alloc_for(bx_blockcache_t *bc, unsigned bin) {
    bx_lock(&bc->lock);
    void *block = take(bc, NULL, false, bin % bc->lists);
    bx_unlock(&bc->lock);
    return block;
}

static void give(bx_blockcache_t *bc, bx_superblock_t *sb, void *block) {
    if (bc->count >= bc->max_blocks) {
        bx_blockalloc_free(&bc->alloc, sb, block);
        return;
    }
    if (sb->cached == 0) {
        if (bc->represented >= bc->bound) {
            bx_blockalloc_free(&bc->alloc, sb, block);
            return;
        }
        bc->represented++;
    }
    sb->cached++;
    unsigned list = 0;
    if (bc->lists > 1) {
        list = list_of(bc, block);
        bc->given_this_owner[list / 64] |= (uint64_t)1 << (list % 64);
        bc->last_list = list;
    }
    bx_link_set(block, bc->heads[list]);
    ((bx_superblock_t **)block)[1] = sb;
    set_head(bc, list, block);
    bc->last_given = block;
    set_count(bc, bc->count + 1);
}

void bx_blockcache_free(bx_blockcache_t *bc, bx_superblock_t *sb, void *block) {
    bx_lock(&bc->lock);
    give(bc, sb, block);
    bx_unlock(&bc->lock);
}

void bx_blockcache_free_home(bx_superblock_t *sb, void *block) {
    bx_blockcache_free((bx_blockcache_t *)sb->owner, sb, block); /* the allocator is its first member */
}

static void flush(bx_blockcache_t *bc, bool give_pages) {
    for (unsigned list = 0; list < bc->lists; list++) {
        while (bc->heads[list]) {
            char *block = pop_head(bc, list);
            bx_superblock_t *sb = cached_sb(block);
            sb->cached--;
            /* A block going back to a superblock that stays in use gives back its pages (if
             * asked), all but the one that will hold its link on the superblock's free list:
             * the flush of an idle cache or a trim, and the superblock may stay in use long
             * after (one object of a thread that ended keeps it). One that empties goes to its
             * node, which may hand it to another thread at once: decided before, not read after. */
            if (give_pages && sb->used > 1)
                bx_os_purge(block + 2 * sizeof(void *), bc->alloc.block_size - 2 * sizeof(void *));
            bx_blockalloc_free(&bc->alloc, sb, block);
        }
    }
    set_count(bc, 0);
    bc->represented = 0;
    bc->last_given = NULL;
}

void bx_blockcache_flush(bx_blockcache_t *bc, bool give_pages) {
    bx_lock(&bc->lock);
    flush(bc, give_pages);
    bx_unlock(&bc->lock);
}

size_t bx_blockcache_discard_free(bx_blockcache_t *bc) {
    bx_lock(&bc->lock);
    size_t bytes = bx_blockalloc_discard_free(&bc->alloc);
    bx_unlock(&bc->lock);
    return bytes;
}

void bx_blockcache_decay(bx_blockcache_t *bc) {
    bx_lock(&bc->lock);
    if (!(bc->active & ACTIVE_TICK)) flush(bc, true);
    bc->active &= (uint8_t)~ACTIVE_TICK;
    bx_unlock(&bc->lock);
}

void bx_blockcache_reclaim(bx_blockcache_t *bc) {
    if (!bx_trylock(&bc->lock)) return;
    if (!(bc->active & ACTIVE_PASS)) flush(bc, true);
    bc->active &= (uint8_t)~ACTIVE_PASS;
    bx_unlock(&bc->lock);
}

void bx_blockcache_check_head(bx_blockcache_t *bc, const char *op) {
    bx_lock(&bc->lock);
    void *block = NULL;
    bool ok = true;
    for (unsigned list = 0; ok && list < bc->lists; list++) {
        block = bc->heads[list];
        ok = !block || head_ok(bc, block);
    }
    bx_unlock(&bc->lock);
    if (!ok)
        bx_fatalf("%s: corrupted free list at %p (a cached block): the free object there was written after it was freed",
                  op, block);
}

bool bx_blockcache_check(bx_blockcache_t *bc) {
    bx_lock(&bc->lock);
    bool ok = bx_blockalloc_check(&bc->alloc);
    bx_unlock(&bc->lock);
    return ok;
}
