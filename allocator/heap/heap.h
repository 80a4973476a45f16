/* heap.h - the per-thread heap: all bins, block caches, keep blocks and both ends of the
 * remote frees of one thread (DESIGN §4). Its owner allocates and frees with no lock and no
 * atomic read-modify-write. Which thread owns a heap, and when, is thread.h's business;
 * what it gives back, and when, retention.h's. */
#ifndef BX_HEAP_H
#define BX_HEAP_H

#include <stdatomic.h>

#include "base/bounds.h"
#include "small/bin.h"
#include "mem/blockcache.h"
#include "mem/mixed.h"
#include "small/keep.h"
#include "os/os.h"
#include "small/remote.h"
#include "small/sizeclass.h"

enum bx_heap_state {
    BX_HEAP_LIVE,       /* owned by a running thread */
    BX_HEAP_ABANDONED,  /* its thread exited; waiting to be adopted */
    BX_HEAP_RECLAIMING, /* taken off the abandoned list by a thread draining it */
    BX_HEAP_SHARED,     /* a CPU's, behind its lock: threads not yet busy, or past their teardown */
    BX_HEAP_LOST,       /* after fork(): another thread's, possibly mid-update; never touched */
};

/* Written by the owner only; read racily for statistics. */
typedef struct bx_heap_counters {
    size_t medium, large, remote_frees; /* small allocations are counted by their bins */
    size_t mixed;                       /* and by mixed blocks (mixed.h) */
    size_t medium_live_bytes;
    size_t medium_bytes, large_bytes, large_freed_bytes; /* since the heap's start (thread.allocated) */
} bx_heap_counters_t;

typedef struct bx_heap {
    /* Read by other threads' frees: on a line of their own, never written on a hot path. */
    int node;
    _Atomic int state;        /* enum bx_heap_state (thread.c) */
    unsigned shared_slot;     /* a shared heap's slot: its lock (thread.c) */
    struct bx_heap *next_all; /* every heap, for stats and fork (thread.c) */
    struct bx_heap *next_abandoned;
    bool parked; /* abandoned while its thread waits (thread.c): no other thread adopts it */
    size_t map_size;
    bx_bin_t small[BX_SMALL_BINS];
    bx_bin_t *bin_for[BX_SMALL_STEPS];       /* malloc's table: the bin of each 16-byte step */
    bx_blockcache_t small_blocks;            /* 64 KB blocks for every small bin */
    void *small_block_lists[BX_SMALL_BINS];  /* its lists' heads, one per bin */
    size_t allocs_at_reclaim[BX_SMALL_BINS]; /* each bin's allocs at the last empty-top scan */
    uint8_t idle_scans[BX_SMALL_BINS];       /* such scans in a row that found the bin idle */
    size_t frees_at_purge[BX_SMALL_BINS];    /* each bin's frees when its pages were last given back */
    bool purge_spared[BX_SMALL_BINS];        /* and whether that pass spared its sparse blocks */
    size_t frees_at_scan[BX_SMALL_BINS];     /* and at the last empty-top scan */
    uint64_t still_since_ns[BX_SMALL_BINS];  /* since when scans found neither allocs nor frees */
    uint16_t still_scans[BX_SMALL_BINS];     /* and how many scans found it so since */
    bx_blockcache_t medium[BX_MEDIUM_BINS];  /* one block allocator per medium bin */
    bx_heap_counters_t counters;
    /* Mixed blocks (mixed.h), linked by their prev and next; malloc tries them from the
     * cursor on. */
    bx_block_t *mixed_blocks, *mixed_cursor;
    bx_block_t keep[BX_SMALL_BINS] __attribute__((aligned(64)));
    bx_keeper_t keeper;
    size_t allocs_at_tick[BX_SMALL_BINS]; /* each bin's allocs at the last decay tick */
    uint64_t next_tick_ns;                /* when the owner next ticks (0: at its next slow path) */
    _Atomic bool release_requested;       /* by malloc_trim in another thread (retention.c) */
    bool follow_cpu;                      /* after fork: take the node of the CPU at the next tick */
    bool keeps_closed;                    /* the keeps held too much: none takes more (bounds.h) */
    uint32_t mixable_growth;              /* since the last tick: blocks taken by sizes mixed
                                           * blocks serve (BX_MIX_GROWTH_BLOCKS) */
    /* A shared heap: its mallocs (under its lock) and the count the reclaimer last saw. */
    uint64_t shared_allocs, shared_allocs_seen;
    /* Ownerless: since when no thread allocated there (a shared heap: when the reclaimer saw
     * the count change; an abandoned one: its thread's exit), and its frees when it was last
     * given back, plus 1 (thread/reclaimer.c). */
    uint64_t idle_since_ns, released_at;
    bx_outbox_t outbox;
    /* Written by other threads: kept off the owner's cache lines. */
    bx_remote_t remote;
} bx_heap_t;

static inline bool bx_heap_is_shared(const bx_heap_t *h) {
    return atomic_load_explicit(&h->state, memory_order_relaxed) == BX_HEAP_SHARED;
}

/* A fresh heap of `node` (zero-filled; its chain rings are touched only when used). */
bx_heap_t *bx_heap_create(int node, int state);
/* The heap's thread changes: a live heap batches what it sends and keeps what it may. */
void bx_heap_set_state(bx_heap_t *h, int state);
/* Restores malloc's table of the heap (bx_retention_request redirects it). */
void bx_heap_reset_bin_table(bx_heap_t *h);
/* The stand-in bin with an empty chain stack: every allocation from it fails into the slow
 * path (thread.h's table for threads without a heap). */
extern bx_bin_t bx_heap_bin_none;

/* A bin that allocates nothing gives back the pages of its blocks that hold no live object
 * (bx_bin_purge_pages), when frees came in since it last did or it last spared some: its
 * chains and kept objects go first. spare_sparse: not the pages of its sparse blocks, which
 * other sizes growing would take back as soon as they mix (below). True if it did; false
 * leaves the bin as it was. */
bool bx_heap_purge_idle_bin(bx_heap_t *h, unsigned bin, bool spare_sparse);

/* A bin that allocated and freed nothing since its last purge (above): its sparse blocks
 * (bx_block_sparse) become mixed (mixed.h), unless BOBOX_MIXED=0. */
void bx_heap_mix_idle_bin(bx_heap_t *h, unsigned bin);
/* Blocks mix only while sizes that can use their gaps grow by this many blocks in a tick: a
 * vector doubled through the sizes is not such growth, and sizes below BX_MIXED_MIN_SIZE
 * could not use them (mixed, their survivors' blocks would hold the gaps for nothing). */
#define BX_MIX_GROWTH_BLOCKS 8

/* A tick is wanted before its time: the process just became big enough for the reclaimer,
 * which starts at a tick (no lock is held there). */
static inline bool bx_heap_tick_wanted(void) {
    return BX_UNLIKELY(__atomic_load_n(&bx_os_big, __ATOMIC_RELAXED) == BX_OS_BECAME_BIG);
}
/* What runs when a tick is due: the release points above the heap register it
 * (bx_retention_init); until then no tick runs. */
typedef void bx_heap_tick_fn(bx_heap_t *h, uint64_t now_ns);
extern bx_heap_tick_fn *bx_heap_tick_handler __attribute__((visibility("hidden")));
static inline void bx_heap_set_tick_handler(bx_heap_tick_fn *fn) { bx_heap_tick_handler = fn; }
/* The owner's slow paths run the decay tick first (heap/retention.h). */
static inline void bx_heap_tick(bx_heap_t *h) {
    uint64_t now = bx_now_ns();
    /* Atomic: bx_retention_request moves it from another thread (a plain move on x86). */
    if (BX_UNLIKELY(now >= __atomic_load_n(&h->next_tick_ns, __ATOMIC_RELAXED) || bx_heap_tick_wanted()) &&
        bx_heap_tick_handler)
        bx_heap_tick_handler(h, now);
}

/* Allocation on a heap the caller owns. */
void *bx_heap_alloc(bx_heap_t *h, size_t size);
void *bx_heap_alloc_small_slow(bx_heap_t *h, unsigned bin);
void *bx_heap_alloc_medium(bx_heap_t *h, unsigned bin);
void *bx_heap_alloc_large(bx_heap_t *h, size_t size, size_t alignment, bool *fresh);
/* A sampled object of at most BX_MEDIUM_MAX bytes (prof.c), from the samples' pool. */
void *bx_heap_alloc_sample(bx_heap_t *h, size_t size);

/* A local free that starts a new chain; drains the remote frees once past their threshold. */
void bx_heap_free_new_chain(bx_heap_t *h, bx_bin_t *b, bx_block_t *blk);
/* A local free past the front cache, into the block: the front cache is full, or the object
 * must not be the next one handed out (realloc's old object). */
static inline void bx_heap_free_small_block(bx_heap_t *h, bx_block_t *blk, void *obj) {
    bx_bin_t *b = blk->owner_bin;
    if (BX_LIKELY(bx_bin_free_top(b, blk, obj))) return;
    bx_heap_free_new_chain(h, b, blk); /* a tail call: no register to save */
}
/* free's local path for a small object: into the front cache; past it when the cache is off,
 * and when it is full, where a batch turns it off (bx_bin_front_full). A batch of frees
 * longer than the array then costs one test per free more than the chain stack alone.
 * Spilling the older half instead, so that the array kept the newest, cost such a batch 40%
 * more instructions (batches-t1, 90 -> 128); leaving the array full kept the block of its
 * objects from emptying, and the next batch's mallocs popped that block's free list instead
 * of cutting fresh slots of a block from the cache (batches slower, its peak RSS 1.7-1.9x;
 * docs/benchmarks.md). */
void bx_heap_free_front_full(bx_heap_t *h, bx_block_t *blk, void *obj);
static inline void bx_heap_free_small(bx_heap_t *h, bx_block_t *blk, void *obj) {
    bx_bin_t *b = blk->owner_bin;
    if (BX_LIKELY(bx_bin_free_front(b, blk, obj))) return;
    if (BX_UNLIKELY(bx_bin_front_count(b) != 0)) { /* full: a tail call, no register to save */
        bx_heap_free_front_full(h, blk, obj);
        return;
    }
    bx_heap_free_small_block(h, blk, obj);
}
/* A local free of a medium object; the caller has cleared its live bit. */
void bx_heap_free_medium(bx_heap_t *h, void *sb, uint32_t index);
/* free's path for a plain live small object of another heap's block (classify.h said so),
 * from heap `self`: kept for this heap's mallocs, or sent home. */
void bx_heap_free_foreign_small(bx_heap_t *self, bx_block_t *blk, void *obj);
/* Frees p, in mixed block blk (an object's start or an aligned allocation's address; aborts
 * on anything else), from heap `self` (NULL: none): the block goes back to the cache when
 * self owns it and it empties (its owner's tick finds it otherwise). */
void bx_heap_free_mixed(bx_heap_t *self, bx_block_t *blk, void *p);
/* The owner's pass over its mixed blocks: empty ones back to the cache, and the pages no
 * object uses back to the OS. */
void bx_heap_mixed_tick(bx_heap_t *h);
/* Frees an object of another heap (for a medium one, its live flag cleared) from heap
 * `self` (NULL: none) by sending it to `home`; `key` marks it free on the way. */
void bx_heap_send_home(bx_heap_t *self, bx_remote_t *home, void *obj, size_t size, uintptr_t key);

/* Drains the remote frees into the blocks (DESIGN §4: bypasses the chain stack). */
void bx_heap_drain(bx_heap_t *h);
static inline bool bx_heap_remote_pending(bx_heap_t *h) { return bx_remote_pending(&h->remote); }

/* After fork, in the child: take the node of the CPU at the next tick. */
void bx_heap_follow_cpu(bx_heap_t *h);
/* Validates every structure of the heap; false on any inconsistency. */
bool bx_heap_check(bx_heap_t *h);
/* For the owner: the free objects its next allocations would take first (each small bin's
 * top block, each medium bin's cache) and their links; aborts naming `op` on a write after
 * free there. A few loads per bin: cheap enough for every exit. */
void bx_heap_check_heads(bx_heap_t *h, const char *op);

#endif
