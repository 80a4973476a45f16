/* mixed.h - a mixed block: a small-object block whose free space serves objects of any size
 * (issue 47, docs/memory-policy.md).
 *
 * A size class's blocks that a change of the live set left mostly free keep their survivors
 * resident, one or two per page: no page of them goes back, and no other size could reuse
 * the gaps. Converted, such a block keeps its survivors where they are and hands the runs of
 * free space between them to larger sizes, as a coalescing allocator reuses its gaps.
 *
 * Its state lies outside the block, in bitmaps of its 16-byte granules: which lie inside a
 * live object, and which is each object's last. An object starts at a used granule whose
 * predecessor is free or another object's last, so any granule can start one, and no write
 * after free can change what the block hands out. A freed object still gets the free mark
 * (a slot on the list at the conversion keeps its link), which malloc checks before it cuts
 * an object over it, as where a block's list is followed. The
 * block's slot limits read zero, so that every fast path of free and malloc_usable_size
 * turns it down and the classifier asks this file. The owner converts, allocates and gives
 * the block back; any thread frees, under one of a few striped locks (every operation here
 * is off the fast paths). */
#ifndef BX_MIXED_H
#define BX_MIXED_H

#include "mem/block.h"

#define BX_MIXED_GRANULES (BX_BLOCK_SIZE / BX_ALIGNMENT)
/* The smallest request a mixed block serves: a block cut for a smaller size holds over 128
 * objects, each of which would cost a look at the bitmaps instead of a pop. */
#define BX_MIXED_MIN_SIZE 512u
#define BX_MIXED_WORDS (BX_MIXED_GRANULES / 64)
#define BX_MIXED_RUN_MIN (BX_MIXED_MIN_SIZE / BX_ALIGNMENT)
/* Long runs indexed per block: more than the 3/4-free blocks of the shape change have (up to
 * 124 fit in a block). */
#define BX_MIXED_RUNS 64

typedef struct bx_mixed {
    uint64_t used[BX_MIXED_WORDS]; /* granules inside a live object */
    uint64_t last[BX_MIXED_WORDS]; /* each live object's last granule */
    uint64_t marked[BX_MIXED_WORDS]; /* free granules that start a free mark (block.h), checked
                                    * when an object is cut over them: a write after free */
    /* The free runs a request can use (BX_MIXED_RUN_MIN granules or more), in no order, so
     * that a cut looks at a few entries, not at every gap between the survivors. */
    uint16_t run_start[BX_MIXED_RUNS], run_len[BX_MIXED_RUNS];
    uint32_t live;                 /* objects */
    uint32_t free_granules;
    uint16_t purged;               /* pages given back since no granule of theirs was used */
    uint8_t runs;                  /* entries of run_start and run_len */
    bool runs_partial;             /* more long runs than entries: the bitmap has the rest */
    bool runs_stale;               /* a free beside a run: entries may be parts of runs */
    struct bx_mixed *next;         /* the pool's list of free records */
} bx_mixed_t;

/* Any thread: whether b is mixed. */
static inline bool bx_block_is_mixed(const bx_block_t *b) { return __atomic_load_n(&b->mixed, __ATOMIC_ACQUIRE); }
/* After a test of a slot of b failed: whether its owner mixed it meanwhile (the test read the
 * zero limits stored after the flag). Asked before a pointer is called invalid. */
static inline bool bx_block_became_mixed(const bx_block_t *b) {
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    return __atomic_load_n(&b->mixed, __ATOMIC_ACQUIRE); /* acquire too: TSan ignores fences */
}

/* For b's owner: converts b, a block of its that no chain names and no list holds, keeping
 * every object not on its free list (live, on its way home, kept by another thread) where it
 * is. False, with b as it was, when no record for its bitmaps can be had. Aborts like malloc
 * when the free list was written after free. */
bool bx_mixed_convert(bx_block_t *b);
/* For the owner: an object of `size` bytes (a multiple of 16, at least BX_MIXED_MIN_SIZE) in
 * the smallest run of free granules that holds it (the lowest of equals); NULL if none does. */
void *bx_mixed_alloc(bx_block_t *b, uint32_t size);
/* Any thread: frees the object at p, its start or the address an aligned allocation handed
 * out inside it (the lookup and the free under one lock); the objects left in the block.
 * Aborts naming `op` on a double or invalid free. */
uint32_t bx_mixed_free(bx_block_t *b, void *p, const char *op);
/* Any thread: whether p is a live object's address in b, the start of an object or the
 * address an aligned allocation handed out inside one (block.h's mark at its start); then
 * its start and the bytes from p to its end. *freed: p lies on free granules. */
bool bx_mixed_lookup(const bx_block_t *b, const void *p, void **object, size_t *usable, bool *freed);
/* Any thread: the live object holding q, any address inside it; false if none does. */
bool bx_mixed_locate(const bx_block_t *b, const void *q, char **start, char **end);
/* Its live objects. */
uint32_t bx_mixed_live(const bx_block_t *b);
/* For the owner: gives back the pages with no used granule; the bytes. */
size_t bx_mixed_purge(bx_block_t *b);
/* For the owner of an empty mixed block: its record goes back to the pool and b reads as a
 * plain block again, to be formatted anew. */
void bx_mixed_release(bx_block_t *b);
/* The bitmaps' shape and counts. */
bool bx_mixed_check(const bx_block_t *b);
/* The process's mixed blocks, and the bytes of their live objects. */
size_t bx_mixed_blocks(void);
size_t bx_mixed_live_bytes(void);
/* fork: every lock taken before, released after in the parent, reset in the child. */
void bx_mixed_lock_all(void);
void bx_mixed_unlock_all(void);
void bx_mixed_reset_locks(void);

#endif
