/* bin.h - one small-object allocator: the objects of one size for one thread (DESIGN §3).
 *
 * A local free goes to the front cache (front.h) and malloc takes from it first. Behind it,
 * allocation pops the top chain of the chain stack; an object leaving the front cache (or
 * freed past it) lengthens the top chain or starts a new one. Blocks not referenced by any
 * chain record sit on one of three lists (full, almost full, almost empty); an empty stack
 * refills from almost full, then almost empty, then a new block; an entirely free block goes
 * back to the block cache. */
#ifndef BX_BIN_H
#define BX_BIN_H

#include "mem/block.h"
#include "mem/blockcache.h"
#include "small/chainstack.h"
#include "small/front.h"
#include "small/keep.h"
#include "small/sizeclass.h"

/* A bin keeps the lists from BX_LIST_FULL on (the others are not a bin's lists). */
#define BX_BIN_LISTS (BX_LIST_COUNT - BX_LIST_FULL)
static inline unsigned bx_bin_list_slot(unsigned list) { return list - BX_LIST_FULL; }

typedef struct bx_bin {
    bx_front_t front; /* first: its count shares a line with the newest slots */
    /* Counted where each path already writes its line; malloc and free of the whole program
     * derived from them (bx_bin_allocs, bx_bin_frees): a pop from the front cache counts
     * nothing, a free into it is counted by the front cache itself (bx_front_pushes). */
    size_t taken;       /* objects popped from the blocks (the top chain) */
    size_t block_frees; /* frees past it, straight into the blocks (and kept and drained ones) */
    size_t spilled;     /* objects moved from the front cache into the blocks */
    bx_chainstack_t chains;
    uint32_t size;       /* object size */
    uint32_t per_block;  /* objects per block */
    uint32_t max_chains; /* upper end of the bound: 64 KB / size, at least 16 */
    uint32_t index;
    uint32_t front_max;        /* the front cache's capacity while it is on (bx_front_capacity) */
    uint32_t front_full_frees; /* frees that found it full since front_mark (bx_bin_front_full) */
    size_t front_mark;         /* allocs when a free last found it full after a malloc */
    bx_block_t *lists[BX_BIN_LISTS]; /* heads of the full / almost full / almost empty lists */
    uint32_t list_len[BX_BIN_LISTS]; /* both indexed by bx_bin_list_slot */
    bx_blockcache_t *cache;          /* its blocks come from and go back to it (read off the fast path) */
    /* Set by the owning heap; NULL outside a heap (unit tests). */
    bx_block_t *keep;                    /* the heap's keep block of the size (keep.h) */
    bx_keeper_t *keeper;                 /* and what bounds it */
    struct bx_remote *home;              /* where other threads send the bin's objects (its blocks record it) */
} __attribute__((aligned(64))) bx_bin_t; /* whole cache lines: no two bins share one */

/* A heap's bin is formatted (bx_bin_init) at its first allocation; until then it reads as
 * zeros: no object, no chain, no keep block, and every malloc of it takes the slow path. */
static inline bool bx_bin_formatted(const bx_bin_t *b) { return b->size != 0; }

/* Puts the kept objects that no chain counts on top as one chain. */
void bx_bin_take_kept(bx_bin_t *b);
static inline bool bx_bin_has_uncounted_kept(const bx_bin_t *b) { return b->keep && bx_keep_has_uncounted(b->keep); }
/* Sends home the kept objects that no chain counts. */
void bx_bin_release_kept(bx_bin_t *b);
/* Keeps obj, a plain live object of another heap's block blk that this thread frees, for the
 * bin's own mallocs; false if there is no room (the caller sends it home). */
static inline bool bx_bin_keep_foreign(bx_bin_t *b, bx_block_t *blk, void *obj) {
    bx_block_t *keep = b->keep;
    /* Off the top chain it is counted by none (starting one per object would churn the
     * stack): a malloc takes them all at once when the bin's chains run out or would cut
     * fresh slots (bx_bin_carve). */
    bool on_top = b->chains.top.block == keep;
    if (BX_UNLIKELY(!on_top && !bx_keep_room(b->keeper))) return false;
    bx_block_push_keyed(keep, obj, bx_block_key(blk));
    b->block_frees++;
    if (on_top)
        b->chains.top.count++;
    else
        b->keeper->uncounted_bytes += blk->size;
    return true;
}

/* Objects of the bin handed out so far, and freed so far. */
static inline size_t bx_bin_allocs(const bx_bin_t *b) { return b->taken + bx_front_pushes(&b->front) - b->spilled - bx_front_n(&b->front); }
static inline size_t bx_bin_frees(const bx_bin_t *b) { return bx_front_pushes(&b->front) + b->block_frees; }
/* Objects of the bin handed out and not yet freed (kept objects of other heaps count as
 * freed before they are handed out: 0 until then). */
static inline size_t bx_bin_allocated(const bx_bin_t *b) {
    size_t allocs = bx_bin_allocs(b), frees = bx_bin_frees(b);
    return allocs > frees ? allocs - frees : 0;
}

#define BX_MIN_CHAINS 16

void bx_bin_init(bx_bin_t *b, unsigned index, uint32_t size, bx_chain_t *ring, uint32_t ring_size,
                 bx_blockcache_t *cache);
/* Records the ring needs for a bin of objects of `size`. */
uint32_t bx_bin_ring_size(uint32_t size);

/* Slow paths (bin.c). The bin's cache supplies and takes back the 64 KB blocks. */
void *bx_bin_refill_alloc(bx_bin_t *b, struct bx_heap *heap);
/* Its two halves: a block from the lists that no chain names (almost full first), NULL if
 * there is none (the named ones met leave the lists); then a block from the cache. */
void *bx_bin_refill_listed(bx_bin_t *b);
void *bx_bin_refill_new(bx_bin_t *b, struct bx_heap *heap);
/* bx_bin_alloc with a spent top chain (or an empty stack): the next chain, if any. */
void *bx_bin_alloc_next(bx_bin_t *b);
void bx_bin_new_chain(bx_bin_t *b, bx_block_t *blk);
/* Puts a chain of `count` of blk's free objects on top (a keep block's, or a refill's). The top
 * must not be spent (every caller has just dropped a spent one or found the stack empty): a
 * record below the top counts at least one object. */
void bx_bin_push_chain(bx_bin_t *b, bx_block_t *blk, uint32_t count);
/* A free that bypasses the chain stack (frees from other threads, DESIGN §4). */
void bx_bin_free_direct(bx_bin_t *b, bx_block_t *blk, void *obj);
/* The same for `count` of blk's objects another thread linked in the list's format, from
 * head to tail (remote.h's runs), all marked free: one write, to tail. */
void bx_bin_free_run(bx_bin_t *b, bx_block_t *blk, void *head, void *tail, uint32_t count);
/* Drops the top chain if its block is entirely free (the block goes back to the cache when
 * no other record names it); true if it did. */
bool bx_bin_release_empty_top(bx_bin_t *b);
/* Empties the front cache, then drops every chain: blocks go to their lists, entirely free
 * ones back to the cache. */
void bx_bin_flush(bx_bin_t *b);
/* Gives back the pages of the bin's listed blocks that hold no live object (blocks that
 * chains name are left alone: their counts include those pages' slots); the bytes.
 * spare_sparse: not those of sparse blocks (bx_block_sparse), which the heap may mix. */
size_t bx_bin_purge_pages(bx_bin_t *b, bool spare_sparse);
/* Takes blk, a block no chain names, off its list, and puts it back on the one its fill level
 * says. */
void bx_bin_detach(bx_bin_t *b, bx_block_t *blk);
void bx_bin_attach(bx_bin_t *b, bx_block_t *blk);
/* Validates the front cache, chains, lists, counts and every block (bx_block_check); false on
 * any inconsistency. */
bool bx_bin_check(const bx_bin_t *b);

/* The top chain's block has only fresh slots left: hands out the first and puts the next ones
 * (up to half the front cache's capacity, so that the frees that follow have room too, and
 * as many as the chain counts) in the front cache, in address order, with one update of the
 * block's counts for all (a malloc it serves costs the front cache's pop, not the block's
 * bump and two counts). The front cache is empty (malloc
 * pops it first) and is turned on: a program that allocates is past its batch of frees.
 * `bin`: the bin, whose top chain has already counted the object handed out. */
__attribute__((returns_nonnull)) void *bx_bin_carve(void *bin);

/* Fast paths: a pop and a push, O(1), no lock. NULL means "take the slow path" (for
 * malloc's, bx_bin_alloc_next first). The count is tested before the pop, so a spent top
 * (and the empty stack's stand-in, whose count is 0) never reaches its block. */
static inline void *bx_bin_alloc_top(bx_bin_t *b) {
    int32_t left = (int32_t)b->chains.top.count - 1; /* counts stay far below 2^31 */
    if (BX_UNLIKELY(left < 0)) return NULL;
    b->chains.top.count = (uint32_t)left;
    b->taken++;
    return bx_block_pop_or(b->chains.top.block, bx_bin_carve, b);
}
/* malloc's fast path: the front cache, then the top chain. */
static inline void *bx_bin_alloc_fast(bx_bin_t *b) {
    void *p = bx_front_pop(&b->front);
    return BX_LIKELY(p != NULL) ? p : bx_bin_alloc_top(b);
}
static inline void *bx_bin_alloc(bx_bin_t *b) {
    void *p = bx_bin_alloc_fast(b);
    return BX_LIKELY(p != NULL) ? p : bx_bin_alloc_next(b);
}

/* Pushes obj into its block, uncounted (the caller counts);
 * true when that lengthened the top chain (a spent one too), false when the caller must
 * start a new chain (bx_bin_new_chain). */
static inline bool bx_bin_return_top(bx_bin_t *b, bx_block_t *blk, void *obj) {
    bx_block_push(blk, obj);
    if (BX_LIKELY(b->chains.top.block == blk)) {
        b->chains.top.count++;
        return true;
    }
    return false;
}
/* A free past the front cache: counted, then as bx_bin_return_top. */
static inline bool bx_bin_free_top(bx_bin_t *b, bx_block_t *blk, void *obj) {
    b->block_frees++;
    return bx_bin_return_top(b, blk, obj);
}
/* A local free into the front cache; false when it is full or off (bx_bin_front_full). */
static inline bool bx_bin_free_front(bx_bin_t *b, bx_block_t *blk, void *obj) {
    return BX_LIKELY(bx_front_push(&b->front, obj, bx_block_key(blk)));
}
/* Moves every object of the front cache to its block, through the chain stack. */
void bx_bin_empty_front(bx_bin_t *b);
/* A free found the front cache full (the free itself goes to its block). Once BX_FRONT_BATCH
 * frees in a row, with no malloc of the size in between, have found it so (the program frees
 * a batch), the array goes to the blocks, so that they can empty and go back to the cache,
 * and stays off until the bin's top chain next runs out (bx_bin_alloc_next turns it back
 * on). Fewer such frees leave it alone: frees and mallocs in random order fill a bin's array
 * now and then, and emptying it each time cost more than it saved (larson 0.53 of the old
 * time instead of 0.39, powerlaw 0.91 instead of 0.82). */
#define BX_FRONT_BATCH 16
void bx_bin_front_full(bx_bin_t *b);
/* For the owner: aborts naming `op` when an object of the front cache was written after it
 * was freed (its link or key word changed). */
void bx_bin_check_front(const bx_bin_t *b, const char *op);
/* Objects of the bin in its front cache. */
static inline uint32_t bx_bin_front_count(const bx_bin_t *b) { return bx_front_n(&b->front); }

#endif
