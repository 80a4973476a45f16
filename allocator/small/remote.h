/* remote.h - frees from other threads (DESIGN §4, Adapt), both ends.
 *
 * Receiving: each heap embeds a bx_remote_t, an inbox and a list, both lock-free, neither
 * growing with the thread count. The inbox is a ring of object addresses: a sender reserves
 * room for a whole batch with one compare-and-swap and copies the addresses in, so the drain
 * reads them from a few sequential cache lines and its misses on the objects overlap. A list
 * threaded through the objects takes single frees and whatever does not fit; the drain must
 * chase it, one miss after another. Only the receiver (or whoever holds an ownerless heap
 * exclusively) drains: the list with one exchange, the inbox by slot.
 *
 * Sending: each heap also embeds a bx_outbox_t that batches the frees its thread makes for
 * other heaps, so that a stream of them costs one compare-and-swap per batch instead of one
 * per object (the thesis's per-pair lists, with no lock and no per-pair structure).
 *
 * Runs (snmalloc's per-slab rings): small objects of one block that a thread frees one after
 * another are linked in that block's own free-list format as they come (the sender writes
 * each object anyway, to mark it free), and go to the inbox as one entry of two words: the
 * newest object, tagged, then the oldest one's offset and the count. The owner splices the
 * run onto the block's list with one write to the oldest object, never touching the others:
 * they come back into its cache when malloc hands them out, as any object of the list.
 *
 * This module knows no heap: a receiver that no thread attends to (its thread exited) is
 * marked so by the thread layer, which also says what to do when a pile grows there. */
#ifndef BX_REMOTE_H
#define BX_REMOTE_H

#include <stdatomic.h>

#include "base/common.h"
#include "mem/block.h"

/* A power of two; its pages are touched only by a heap that receives remote frees. */
#define BX_INBOX_SLOTS 16384u

typedef struct bx_remote {
    /* Read by every sender, written when the heap changes hands: a line of its own. */
    _Atomic bool unattended __attribute__((aligned(64))); /* no thread drains it: no batching */
    _Atomic(void *) list __attribute__((aligned(64)));
    atomic_size_t bytes;                                      /* waiting in both */
    _Atomic uint32_t inbox_tail;                              /* next slot a sender reserves */
    _Atomic uint32_t inbox_head __attribute__((aligned(64))); /* next slot the drain reads */
    _Atomic(void *) inbox[BX_INBOX_SLOTS] __attribute__((aligned(64)));
} bx_remote_t;

#define BX_OUTBOX_SLOTS 4
#define BX_OUTBOX_BATCH 32
#define BX_OUTBOX_BYTES (64 * BX_KB)
typedef struct bx_outbox_slot {
    bx_remote_t *to;
    uint32_t count;   /* words in objs: an object, or two for a run */
    uint32_t objects; /* objects they stand for: sent on at BX_OUTBOX_BATCH, as words are */
    size_t bytes;
    void *objs[BX_OUTBOX_BATCH];
} bx_outbox_slot_t;

/* Inbox words: an object's address has its low 4 bits clear; a run is two words, its newest
 * object tagged BX_RUN_HEAD, then BX_RUN_META with the oldest one's offset and the count. */
#define BX_RUN_HEAD 1u
#define BX_RUN_META 2u
static inline uintptr_t bx_run_meta(uint32_t tail_off, uint32_t count) {
    return (uintptr_t)tail_off << 20 | (uintptr_t)count << 4 | BX_RUN_META;
}
static inline uint32_t bx_run_meta_tail(uintptr_t meta) { return (uint32_t)(meta >> 20) & 0xffff; }
static inline uint32_t bx_run_meta_count(uintptr_t meta) { return (uint32_t)(meta >> 4) & 0xffff; }

/* A run closes at BX_OUTBOX_BATCH objects or this many bytes: what it holds back from its
 * owner, as a batch did before runs. */
#define BX_OUTBOX_RUNS 4
#define BX_RUN_BYTES (16 * (int32_t)BX_KB)
typedef struct bx_outbox_run {
    bx_block_t *blk; /* NULL: unused */
    char *tail;      /* oldest: its link is the owner's to set */
    int32_t left;    /* bytes it takes before it closes */
    uint16_t head;   /* offset of the newest: the block's list will start there */
} bx_outbox_run_t;

typedef struct bx_outbox {
    bx_outbox_slot_t slot[BX_OUTBOX_SLOTS];
    unsigned victim;
    bx_outbox_slot_t *last; /* the slot used last: frees come in runs per receiver */
    bx_outbox_run_t run[BX_OUTBOX_RUNS];
    bx_outbox_run_t *last_run; /* the run used last: tried first */
    bx_block_t *alone_blk;     /* the block of the last object sent alone, not in a run */
    unsigned run_victim;
} bx_outbox_t;

/* ---- receiving ---- */
/* Takes the whole list and returns it (NULL if empty), subtracting nothing yet. */
void *bx_remote_take(bx_remote_t *r);
/* Takes up to `max` words from the inbox into `out` (a run's two together); returns how many. */
uint32_t bx_remote_take_inbox(bx_remote_t *r, void **out, uint32_t max);
/* The drain took objects of `bytes` in all. */
static inline void bx_remote_taken(bx_remote_t *r, size_t bytes) {
    if (bytes) atomic_fetch_sub_explicit(&r->bytes, bytes, memory_order_relaxed);
}
static inline size_t bx_remote_waiting(bx_remote_t *r) { return atomic_load_explicit(&r->bytes, memory_order_relaxed); }
static inline bool bx_remote_pending(bx_remote_t *r) {
    uint32_t head = atomic_load_explicit(&r->inbox_head, memory_order_relaxed);
    return atomic_load_explicit(&r->list, memory_order_relaxed) != NULL ||
           atomic_load_explicit(&r->inbox[head & (BX_INBOX_SLOTS - 1)], memory_order_relaxed) != NULL;
}
/* In a fork child (one thread): moves what the inbox holds onto the list, so that slots a
 * vanished thread reserved but never filled cannot stall it. */
void bx_remote_after_fork(bx_remote_t *r);

/* ---- sending ---- */
static inline void bx_outbox_init(bx_outbox_t *ob) {
    ob->last = &ob->slot[0];
    ob->last_run = &ob->run[0];
}
/* Sends obj (of `size` bytes, already marked free) to `to`: batched in `from` while a thread
 * attends to `to`, straight onto its list when not or when there is no outbox (NULL). */
void bx_remote_send(bx_outbox_t *from, bx_remote_t *to, void *obj, size_t size);
/* Sends obj, a plain live object of another heap's small block blk, marking it free: added
 * to the run of blk, or alone when the last free was of another block (the second in a row
 * opens a run). Runs go to unattended owners too (bx_remote_run_close). Inline, with only
 * tail calls: a free of the block of the last one costs two stores and the count. */
void bx_remote_send_small_switch(bx_outbox_t *from, bx_block_t *blk, void *obj); /* opens or finds blk's run */
void bx_remote_run_close(bx_outbox_t *from, bx_outbox_run_t *run);
static inline void bx_remote_send_small(bx_outbox_t *from, bx_block_t *blk, void *obj) {
    bx_outbox_run_t *run = from->last_run;
    if (BX_UNLIKELY(run->blk != blk)) {
        /* An object of another block than the last one's goes alone, as a plain remote free:
         * frees of mixed sizes rarely take two in a row from one block, and a run of one
         * costs more than that. The second in a row opens a run (or finds its open one). */
        if (from->alone_blk != blk) {
            from->alone_blk = blk;
            bx_object_mark_free(obj, bx_block_key(blk));
            bx_remote_send(from, blk->home, obj, blk->size);
            return;
        }
        bx_remote_send_small_switch(from, blk, obj);
        return;
    }
    /* Pushed as onto the block's list: the oldest links to the end until the owner splices. */
    *(uintptr_t *)obj = run->head ^ bx_link_secret;
    ((uintptr_t *)obj)[1] = bx_block_key(blk);
    run->head = (uint16_t)(uintptr_t)obj;
    if (BX_UNLIKELY((run->left -= (int32_t)blk->size) <= 0)) bx_remote_run_close(from, run);
}
/* Sends every batched free and every run on to its receiver. */
void bx_outbox_flush(bx_outbox_t *ob);

/* Past this many bytes waiting at an unattended receiver, the thread layer's handler runs
 * (it drains the pile if it can take the heap). */
#define BX_REMOTE_RECLAIM_BYTES (64 * BX_KB)
typedef void (*bx_remote_pile_fn)(bx_remote_t *r);
void bx_remote_set_pile_handler(bx_remote_pile_fn fn);

#endif
