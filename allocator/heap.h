/* heap.h - the per-thread heap: all bins, block caches and the remote list of one thread
 * (DESIGN §4). Its owner allocates and frees with no lock and no atomic read-modify-write.
 *
 * Heaps are never unmapped: a thread that exits abandons its heap (after giving back
 * what it can) and the next thread on the same node adopts it, so memory is neither lost
 * nor leaked and short-lived threads cost no superblock traffic. */
#ifndef BX_HEAP_H
#define BX_HEAP_H

#include <stdatomic.h>

#include "bin.h"
#include "blockcache.h"
#include "os.h"
#include "sizeclass.h"

enum bx_heap_state {
    BX_HEAP_LIVE,       /* owned by a running thread */
    BX_HEAP_ABANDONED,  /* its thread exited; waiting to be adopted */
    BX_HEAP_RECLAIMING, /* taken off the abandoned list by a thread draining it */
    BX_HEAP_ORPHAN,     /* shared, behind a lock, for threads past their own teardown */
    BX_HEAP_LOST,       /* after fork(): another thread's, possibly mid-update; never touched */
};

/* Written by the owner only; read racily for statistics. */
typedef struct bx_heap_counters {
    size_t medium, large, remote_frees; /* small allocations are counted by their bins */
    size_t medium_live_bytes;
} bx_heap_counters_t;

/* Frees for another heap, batched by the freeing thread so that a stream of them costs one
 * compare-and-swap per batch instead of one per object (the thesis's per-pair lists, with
 * no lock and no per-pair structure). */
#define BX_OUTBOX_SLOTS 4
#define BX_OUTBOX_BATCH 32
#define BX_OUTBOX_BYTES (64 * BX_KB)
typedef struct bx_outbox_slot {
    struct bx_heap *to;
    uint32_t count;
    size_t bytes;
    void *objs[BX_OUTBOX_BATCH];
} bx_outbox_slot_t;

/* The inbox: a ring of object addresses that batches are copied into (remote.h). A power
 * of two; its pages are touched only by a heap that receives remote frees. */
#define BX_INBOX_SLOTS 16384u

/* Small objects of other heaps that this thread frees are kept for its own mallocs (they
 * are in this CPU's cache), as tcmalloc's thread caches keep them: pushed onto a keep block,
 * one per bin, which becomes the bin's top chain with all it holds when the current top
 * chain runs out. At most this much per bin and per heap, only for sizes the thread
 * allocates, never objects of another NUMA node; kept objects of a bin that allocated
 * nothing for a decay delay go home. */
#define BX_KEEP_BYTES (256 * BX_KB)
#define BX_KEEP_MIN 4
#define BX_KEEP_MAX 1024
#define BX_KEEP_HEAP_BYTES (2 * BX_MB)

typedef struct bx_heap {
    /* Read by other threads' frees: on a line of their own, never written on a hot path. */
    int node;
    _Atomic int state;              /* enum bx_heap_state */
    struct bx_heap *next_all;       /* every heap, for stats and fork */
    struct bx_heap *next_abandoned;
    size_t map_size;
    bx_bin_t small[BX_SMALL_BINS_MAX];
    bx_bin_t *bin_for[BX_SMALL_STEPS]; /* malloc's table: the bin of each 16-byte step */
    bx_blockcache_t small_blocks;               /* 64 KB blocks for every small bin */
    size_t allocs_at_reclaim[BX_SMALL_BINS_MAX]; /* each bin's allocs at the last empty-top scan */
    bx_blockcache_t medium[BX_MEDIUM_BINS_MAX]; /* one block allocator per medium bin */
    bx_heap_counters_t counters;
    bx_block_t keep[BX_SMALL_BINS_MAX] __attribute__((aligned(64)));
    size_t kept_bytes;              /* kept objects that no chain counts */
    size_t allocs_at_tick[BX_SMALL_BINS_MAX]; /* each bin's allocs at the last decay tick */
    uint64_t next_purge_ns;         /* when this heap next gives back idle cached memory */
    bool follow_cpu;                /* after fork: take the node of the CPU at the next tick */
    bx_outbox_slot_t outbox[BX_OUTBOX_SLOTS];
    unsigned outbox_victim;
    bx_outbox_slot_t *outbox_last;  /* the slot used last: frees come in runs per owner */
    /* Written by other threads: kept off the owner's cache lines. */
    _Atomic(void *) remote __attribute__((aligned(64)));
    atomic_size_t remote_bytes;
    _Atomic uint32_t inbox_tail;    /* next slot a sender reserves */
    _Atomic uint32_t inbox_head __attribute__((aligned(64))); /* next slot the drain reads */
    _Atomic(void *) inbox[BX_INBOX_SLOTS] __attribute__((aligned(64)));
} bx_heap_t;

extern BX_TLS bx_heap_t *bx_tls_heap;
/* The heap the inline fast path of free uses: the thread's heap, or NULL in checked mode,
 * so that every call takes the checked slow path at no cost to the default. */
extern BX_TLS bx_heap_t *bx_tls_fast;
/* The table malloc's inline fast path finds its bin in, by 16-byte step: the thread's
 * heap's, or one whose entries all name a stand-in bin with an empty chain stack (no heap
 * yet, after the thread's teardown, checked mode), so that every allocation from it fails
 * into the slow path and the fast path tests no heap pointer. A table per heap, not one
 * shared table of offsets: the thread's pointer is its base, so a step's bin is one load. */
extern BX_TLS bx_bin_t **bx_tls_bin_for;

/* The calling thread's heap, created or adopted on first use; NULL for a thread past its
 * own teardown (it then goes through the orphan heap). */
bx_heap_t *bx_heap_acquire(void);
void bx_heap_global_init(void);
/* Registers the fork handlers; may allocate, so it runs once the allocator works. */
void bx_heap_register_fork_handlers(void);
/* Allocation for a thread past its own teardown: the shared orphan heap, under a lock. */
void *bx_heap_alloc_orphan(size_t size);

/* Allocation and free on a heap the caller owns. */
void *bx_heap_alloc(bx_heap_t *h, size_t size);
void *bx_heap_alloc_small_slow(bx_heap_t *h, unsigned bin);
void *bx_heap_alloc_medium(bx_heap_t *h, unsigned bin);
/* The caller has cleared the object's live bit. */
void bx_heap_free_medium(bx_heap_t *h, void *sb, uint32_t index);
void bx_heap_drain(bx_heap_t *h);
/* A local free that starts a new chain; drains the remote list once past its threshold. */
void bx_heap_free_new_chain(bx_heap_t *h, bx_bin_t *b, bx_block_t *blk);
/* A local free of a small object (the semi-slow part is a tail call: no register to save). */
static inline void bx_heap_free_small(bx_heap_t *h, bx_block_t *blk, void *obj) {
    bx_bin_t *b = blk->owner_bin;
    if (BX_LIKELY(bx_bin_free_top(b, blk, obj))) return;
    bx_heap_free_new_chain(h, b, blk);
}

/* Frees an object owned by heap `owner` from a thread that does not own it; `key` marks it
 * free on the way (its block's, or its superblock's for a medium object). */
void bx_heap_free_foreign(bx_heap_t *owner, void *obj, size_t size, uintptr_t key);
/* Whether free(p) of a small block that heap `self` (the caller's, maybe NULL) does not own
 * can skip the full lookup: the checks of lookup(), in its order (fields that stay put while
 * the block holds a live object, then the object's own state). False: the slow path. */
static inline bool bx_heap_foreign_small_ok(const bx_heap_t *self, bx_block_t *blk, const void *p) {
    if (BX_UNLIKELY(!self || blk->heap == BX_BLOCK_NO_OWNER)) return false;
    return bx_block_is_slot(blk, p) && bx_object_plain_live(p, bx_block_key(blk));
}
/* Frees a plain live small object of another heap (checked with the above). */
void bx_heap_free_foreign_small(bx_heap_t *self, bx_block_t *blk, void *obj);
/* Sends every batched free on to its heap. */
void bx_heap_flush_outbox(bx_heap_t *h);
/* Drains the remote list into the blocks (DESIGN §4: bypasses the chain stack). */
void bx_heap_drain(bx_heap_t *h);

/* The work of a decay tick (below) that is due. */
void bx_heap_tick_due(bx_heap_t *h, uint64_t now_ns);
/* On the owner's slow paths: once per decay delay, empties the heap's block caches and
 * returns the node and large caches' idle memory to the OS. Inline: every medium malloc
 * makes the check. */
static inline void bx_heap_tick(bx_heap_t *h) {
    uint64_t now = bx_now_ns();
    if (BX_UNLIKELY(now >= h->next_purge_ns)) bx_heap_tick_due(h, now);
}
/* Gives back everything free in a heap: drains, drops chains, empties caches. */
void bx_heap_release_free(bx_heap_t *h);
/* malloc_trim: the caller's heap and every abandoned heap give back what is free. */
void bx_heap_trim_all(void);
/* Validates every structure of the heap; false on any inconsistency. */
bool bx_heap_check(bx_heap_t *h);

/* Walks every heap (stats); the callback must not allocate. */
void bx_heap_for_each(void (*fn)(bx_heap_t *, void *), void *arg);

#endif
