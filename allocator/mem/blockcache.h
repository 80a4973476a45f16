/* blockcache.h - the cached block allocator (DESIGN §5).
 *
 * Freed blocks wait in a LIFO for reuse, but the cache is bounded by the number of
 * superblocks it holds blocks from, not by blocks, so it can never keep many
 * superblocks from going back: a block whose superblock is not yet represented goes
 * straight back to the block allocator once the bound is reached. */
#ifndef BX_BLOCKCACHE_H
#define BX_BLOCKCACHE_H

#include "base/lock.h"
#include "mem/blockalloc.h"

/* Their bounds: retention.h. */
/* A medium bin whose next block would be fresh memory takes a free block of up to this
 * many bins larger (at most 1.2^2 = 1.44x the size) instead: pages already resident. */
#define BX_MEDIUM_BORROW 2

/* Most lists a cache keeps its blocks on: one per small bin (sizeclass.h). */
#define BX_BLOCKCACHE_LISTS 128

typedef struct bx_blockcache {
    bx_blockalloc_t alloc;
    /* Cached blocks, linked through their first word, on the list of the bin they last
     * served (one list for a medium cache, whose blocks all serve one size). A bin takes
     * first a block it emptied before the heap's current owner came (whose pages it
     * touched; another bin's it would touch further), else one of the list given to last
     * (its lines still in the CPU's cache), else its own, else the nearest bin's. Taken
     * from any block in turn, each block of a heap whose threads come and go ended with all
     * 64 KB resident (memchurn: 3.8 MB a heap for 1 MB live); taken from its own list
     * always, a thread that allocates one size at a time reused blocks emptied rounds ago
     * instead of the ones just emptied (batches: 1.2x the time). */
    void **heads;
    uint32_t lists;
    uint32_t last_list;                                 /* the list given to last */
    uint64_t nonempty[BX_BLOCKCACHE_LISTS / 64];        /* a bit per list that holds a block */
    uint64_t given_this_owner[BX_BLOCKCACHE_LISTS / 64]; /* and per list given to since */
    void *one_head;       /* the heads of a one-list cache */
    uint32_t count;       /* blocks cached */
    uint32_t represented; /* distinct superblocks among them */
    uint32_t bound;       /* most superblocks represented */
    uint32_t max_blocks;  /* most blocks cached */
    void *last_given;     /* the block cached last, while it heads the list: a medium
                              * cache hands out another first (blockcache.c) */
    uint8_t active;       /* a block was taken since the last decay: a bit for the owner's
                              * tick, one for the reclaimer's pass */
    /* The owner takes it for every operation, uncontended but for the reclaimer, which
     * empties the caches of threads that stopped calling us (retention.h). */
    bx_lock_t lock;
    /* The next cache that lends its surplus to others of its node (bx_blockcache_lend). */
    struct bx_blockcache *next_lender;
    bool lends;
} bx_blockcache_t;

/* `lists` lists whose heads are `heads` (at most BX_BLOCKCACHE_LISTS); with one list, heads
 * may be NULL. A small block goes on the list of its descriptor's bin. */
void bx_blockcache_init(bx_blockcache_t *bc, struct bx_heap *owner, unsigned tag, uint32_t block_size, uint32_t bound,
                        uint32_t max_blocks, int node, void **heads, uint32_t lists);
/* A block, or NULL (ENOMEM); *sb_out (if not NULL) is set to its superblock. A medium cache
 * hands out the block cached last only when it has no other and the superblocks none. */
void *bx_blockcache_alloc(bx_blockcache_t *bc, bx_superblock_t **sb_out);
/* A small block for `bin` (the order above), else one from the superblocks. */
void *bx_blockcache_alloc_for(bx_blockcache_t *bc, unsigned bin);
/* The heap has a new owner: the blocks cached now were emptied before it came. */
void bx_blockcache_new_owner(bx_blockcache_t *bc);
/* The same for another bin about to touch fresh pages: the cached block, even the one freed
 * last, which bx_blockcache_alloc does not hand out while there is another. */
void *bx_blockcache_borrow(bx_blockcache_t *bc, bx_superblock_t **sb_out);
/* True when the next block would be memory never handed out (untouched pages). */
bool bx_blockcache_would_grow(bx_blockcache_t *bc);
/* Takes back a block of superblock sb. */
void bx_blockcache_free(bx_blockcache_t *bc, bx_superblock_t *sb, void *block);
/* A block goes back to the cache whose allocator cut it (its superblock's owner): a lent
 * small block goes home. */
void bx_blockcache_free_home(bx_superblock_t *sb, void *block);
/* Lists a small cache (one that lives as long as the process) among those that lend: when
 * another cache of its node is empty and would cut fresh pages, it takes one of this cache's
 * blocks beyond BX_LEND_RESERVE_BLOCKS instead. */
void bx_blockcache_lend(bx_blockcache_t *bc);
/* fork: every lending cache's lock, taken in the parent, given back or reset after. */
void bx_blockcache_lock_lenders(void);
void bx_blockcache_unlock_lenders(void);
void bx_blockcache_reset_lenders(void);
/* Returns every cached block to the block allocator; with give_pages, the pages of those
 * whose superblock stays in use go back to the OS. */
void bx_blockcache_flush(bx_blockcache_t *bc, bool give_pages);
/* malloc_trim: bx_blockalloc_discard_free under the cache's lock (the reclaimer's pass moves
 * blocks into the allocator meanwhile); the bytes given back. Never with the lock held. */
size_t bx_blockcache_discard_free(bx_blockcache_t *bc);
/* Once per decay delay: flushes the cache if no block was taken from it since the last
 * call. A cache in use keeps its blocks: flushing it would only empty its superblocks into
 * the node, where other bins take them and touch fresh pages for this one. */
void bx_blockcache_decay(bx_blockcache_t *bc);
/* Validates its block allocator (bx_blockalloc_check). */
bool bx_blockcache_check(bx_blockcache_t *bc);
/* The cached block the next allocation takes and its link, checked as that allocation would;
 * aborts naming `op` when a write after free changed them. */
void bx_blockcache_check_head(bx_blockcache_t *bc, const char *op);
/* The same for the reclaimer, from another thread: flushes a cache that gave no block since
 * the reclaimer's last pass. Skips one its owner holds at the moment. */
void bx_blockcache_reclaim(bx_blockcache_t *bc);

#endif
