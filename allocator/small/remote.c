/* remote.c - the lock-free inbox and list of a receiver, and the outbox of a sender. */
#include "small/remote.h"

#include "mem/mixed.h"

#include "base/secret.h"

/* ---- receiving ------------------------------------------------------------------------ */

/* Bytes are counted before the objects are published, so the drain never subtracts
 * what was not added yet. */
static void push_chain(bx_remote_t *r, void *first, void *last) {
    void *head = atomic_load_explicit(&r->list, memory_order_relaxed);
    do {
        bx_link_set(last, head);
    } while (
        !atomic_compare_exchange_weak_explicit(&r->list, &head, first, memory_order_release, memory_order_relaxed));
}

static size_t push_one(bx_remote_t *r, void *obj, size_t size) {
    size_t waiting = atomic_fetch_add_explicit(&r->bytes, size, memory_order_relaxed) + size;
    push_chain(r, obj, obj);
    return waiting;
}

/* Reserves n consecutive slots; false if the inbox has no room for them. */
static bool inbox_reserve(bx_remote_t *r, uint32_t n, uint32_t *start) {
    uint32_t tail = atomic_load_explicit(&r->inbox_tail, memory_order_relaxed);
    do {
        /* Acquire: the drain emptied the slots below head before publishing it. */
        uint32_t head = atomic_load_explicit(&r->inbox_head, memory_order_acquire);
        if (tail - head > BX_INBOX_SLOTS - n) return false;
    } while (!atomic_compare_exchange_weak_explicit(&r->inbox_tail, &tail, tail + n, memory_order_relaxed,
                                                    memory_order_relaxed));
    *start = tail;
    return true;
}

/* next, read from a link of a run of blk, is a slot of blk marked free; in a block that mixed
 * since (mixed.h), an object of it. */
static bool run_link_ok(const bx_block_t *blk, const char *next) {
    if (!bx_block_is_slot(blk, next)) {
        void *start;
        size_t usable;
        bool freed;
        if (!bx_block_became_mixed(blk) || !bx_mixed_lookup(blk, next, &start, &usable, &freed) || start != next)
            return false;
    }
    return bx_object_is_free(next, bx_block_key(blk));
}

/* Links a run's objects (block-list offsets) into the list's format and pushes them: where
 * the inbox has no room, and after fork. The objects stay marked free. */
static void push_run_to_list(bx_remote_t *r, uintptr_t head_word, uintptr_t meta) {
    char *obj = (char *)(head_word & ~(uintptr_t)BX_RUN_HEAD), *mem = bx_block_mem_of(obj), *first = obj;
    const bx_block_t *blk = bx_block_of(obj);
    for (uint32_t n = bx_run_meta_count(meta); n > 1; n--) {
        char *next = mem + (uint16_t)(*(uintptr_t *)obj ^ bx_link_secret);
        /* A link a write after free changed is never followed, let alone written through. */
        if (BX_UNLIKELY(!run_link_ok(blk, next)))
            bx_fatalf("free(): corrupted free list at %p (objects other threads freed): the free object there was "
                      "written after it was freed",
                      (void *)obj);
        bx_link_set(obj, next);
        obj = next;
    }
    push_chain(r, first, obj);
}

/* Pushes n words (objects and runs) of `bytes` in all: into the inbox if it has room, else
 * onto the list. Returns the bytes now waiting. */
static size_t push_batch(bx_remote_t *r, void *const *objs, uint32_t n, size_t bytes) {
    size_t waiting = atomic_fetch_add_explicit(&r->bytes, bytes, memory_order_relaxed) + bytes;
    uint32_t start;
    if (inbox_reserve(r, n, &start)) {
        /* Last word first: the drain, which stops at an empty slot, finds a run's second word
         * filled whenever it finds its first. */
        for (uint32_t i = n; i-- > 0;)
            atomic_store_explicit(&r->inbox[(start + i) & (BX_INBOX_SLOTS - 1)], objs[i], memory_order_release);
        return waiting;
    }
    for (uint32_t i = 0; i < n; i++) {
        uintptr_t w = (uintptr_t)objs[i];
        if (w & BX_RUN_HEAD)
            push_run_to_list(r, w, (uintptr_t)objs[++i]);
        else
            push_chain(r, objs[i], objs[i]);
    }
    return waiting;
}

void *bx_remote_take(bx_remote_t *r) {
    if (!atomic_load_explicit(&r->list, memory_order_relaxed)) return NULL;
    return atomic_exchange_explicit(&r->list, NULL, memory_order_acquire);
}

uint32_t bx_remote_take_inbox(bx_remote_t *r, void **out, uint32_t max) {
    uint32_t head = atomic_load_explicit(&r->inbox_head, memory_order_relaxed);
    uint32_t n = 0;
    /* Stops at the first empty slot: past the tail, or reserved and not filled yet. A run's
     * second word was stored before its first. */
    while (n + 2 <= max) {
        _Atomic(void *) *slot = &r->inbox[head & (BX_INBOX_SLOTS - 1)];
        void *obj = atomic_load_explicit(slot, memory_order_acquire);
        if (!obj) break;
        atomic_store_explicit(slot, NULL, memory_order_relaxed);
        out[n++] = obj;
        head++;
        if ((uintptr_t)obj & BX_RUN_HEAD) {
            slot = &r->inbox[head & (BX_INBOX_SLOTS - 1)];
            out[n++] = atomic_load_explicit(slot, memory_order_relaxed);
            atomic_store_explicit(slot, NULL, memory_order_relaxed);
            head++;
        }
    }
    if (n) atomic_store_explicit(&r->inbox_head, head, memory_order_release);
    return n;
}

void bx_remote_after_fork(bx_remote_t *r) {
    uint32_t head = atomic_load_explicit(&r->inbox_head, memory_order_relaxed);
    uint32_t tail = atomic_load_explicit(&r->inbox_tail, memory_order_relaxed);
    for (; head != tail; head++) {
        _Atomic(void *) *slot = &r->inbox[head & (BX_INBOX_SLOTS - 1)];
        void *obj = atomic_load_explicit(slot, memory_order_relaxed);
        atomic_store_explicit(slot, NULL, memory_order_relaxed);
        /* Words are stored last first and taken first to last: past a slot that a sender
         * not in the child never filled, or whose word the owner had just taken, may stand a
         * run's second word without its first. Not an object: skipped (a run so cut stays
         * in transit for good, its bytes, at most BX_RUN_BYTES, counted as waiting). */
        if (!obj || ((uintptr_t)obj & BX_RUN_META)) continue;
        if ((uintptr_t)obj & BX_RUN_HEAD) {
            /* Filled before its first word, so present. */
            _Atomic(void *) *meta = &r->inbox[++head & (BX_INBOX_SLOTS - 1)];
            push_run_to_list(r, (uintptr_t)obj, (uintptr_t)atomic_load_explicit(meta, memory_order_relaxed));
            atomic_store_explicit(meta, NULL, memory_order_relaxed);
        } else {
            push_chain(r, obj, obj);
        }
    }
    atomic_store_explicit(&r->inbox_head, head, memory_order_relaxed);
}

/* ---- sending -------------------------------------------------------------------------- */

static bx_remote_pile_fn pile_handler;

void bx_remote_set_pile_handler(bx_remote_pile_fn fn) { pile_handler = fn; }

/* Nobody drains a receiver whose thread is gone: whoever notices the pile does. */
static void after_push(bx_remote_t *to, size_t waiting) {
    if (waiting >= BX_REMOTE_RECLAIM_BYTES && atomic_load_explicit(&to->unattended, memory_order_relaxed) &&
        pile_handler)
        pile_handler(to);
}

/* Sends the slot's batch. The slot stays its receiver's: releasing it after a full batch
 * made the next free evict another receiver's half-filled batch. */
static BX_NOINLINE void flush_slot(bx_outbox_slot_t *slot) {
    if (!slot->count) return;
    after_push(slot->to, push_batch(slot->to, slot->objs, slot->count, slot->bytes));
    slot->count = 0;
    slot->objects = 0;
    slot->bytes = 0;
}

void bx_outbox_flush(bx_outbox_t *ob) {
    for (unsigned i = 0; i < BX_OUTBOX_RUNS; i++)
        if (ob->run[i].blk) bx_remote_run_close(ob, &ob->run[i]);
    for (unsigned i = 0; i < BX_OUTBOX_SLOTS; i++) flush_slot(&ob->slot[i]);
}

static inline void slot_append(bx_outbox_slot_t *slot, void *obj, size_t size) {
    slot->objs[slot->count++] = obj;
    slot->bytes += size;
    if (++slot->objects >= BX_OUTBOX_BATCH || slot->count >= BX_OUTBOX_BATCH || slot->bytes >= BX_OUTBOX_BYTES)
        flush_slot(slot);
}

/* A slot for a receiver that has none: an unused one, else the victim's, flushed first. */
static bx_outbox_slot_t *claim_slot(bx_outbox_t *ob, bx_remote_t *to) {
    bx_outbox_slot_t *slot = NULL;
    for (unsigned i = 0; i < BX_OUTBOX_SLOTS && !slot; i++)
        if (!ob->slot[i].to) slot = &ob->slot[i];
    if (!slot) {
        slot = &ob->slot[ob->victim++ % BX_OUTBOX_SLOTS];
        flush_slot(slot);
    }
    slot->to = to;
    return slot;
}

/* The receiver's slot, claimed if it has none. */
static bx_outbox_slot_t *slot_for(bx_outbox_t *ob, bx_remote_t *to) {
    for (unsigned i = 0; i < BX_OUTBOX_SLOTS; i++)
        if (ob->slot[i].to == to) return &ob->slot[i];
    return claim_slot(ob, to);
}

/* What a run of blk holds back from its owner before it closes: a batch's objects or
 * BX_RUN_BYTES, whichever is less. */
static inline int32_t run_limit(const bx_block_t *blk) {
    return blk->size * BX_OUTBOX_BATCH < (uint32_t)BX_RUN_BYTES ? (int32_t)(blk->size * BX_OUTBOX_BATCH) : BX_RUN_BYTES;
}

/* A run goes into its receiver's slot as two words (never split by a flush), or as a plain
 * object when it holds one (frees of mixed sizes rarely take two in a row from one block).
 * The slot is sent on as a batch of objects was before runs, at BX_OUTBOX_BATCH objects or
 * BX_OUTBOX_BYTES (so a full run goes at once and short ones share a compare-and-swap);
 * also when its words are full, and at once to a receiver nobody attends to, whose pile
 * handler drains it (after_push). */
void bx_remote_run_close(bx_outbox_t *ob, bx_outbox_run_t *run) {
    bx_block_t *blk = run->blk;
    uint32_t bytes = (uint32_t)(run_limit(blk) - run->left), count = bytes / blk->size;
    bx_remote_t *to = blk->home;
    bx_outbox_slot_t *slot = ob->last->to == to ? ob->last : slot_for(ob, to);
    ob->last = slot;
    run->blk = NULL;
    char *newest = bx_block_mem_of(run->tail) + run->head;
    if (count == 1) {
        slot->objs[slot->count++] = newest;
    } else {
        if (slot->count + 2 > BX_OUTBOX_BATCH) flush_slot(slot);
        slot->objs[slot->count++] = (void *)((uintptr_t)newest | BX_RUN_HEAD);
        slot->objs[slot->count++] = (void *)bx_run_meta(bx_block_offset(run->tail), count);
    }
    slot->bytes += bytes;
    slot->objects += count;
    if (slot->objects >= BX_OUTBOX_BATCH || slot->count >= BX_OUTBOX_BATCH || slot->bytes >= BX_OUTBOX_BYTES ||
        atomic_load_explicit(&to->unattended, memory_order_relaxed))
        flush_slot(slot);
}

/* A free for a receiver with no slot: an unused slot, else the victim's, flushed first. */
static BX_NOINLINE void claim_append(bx_outbox_t *ob, bx_remote_t *to, void *obj, size_t size) {
    bx_outbox_slot_t *slot = claim_slot(ob, to);
    ob->last = slot;
    slot_append(slot, obj, size);
}

/* A free for another receiver than the last one. Only tail calls, so no stack frame: in
 * pipeline's frees the receiver changes on about one free in eight. */
static BX_NOINLINE void switch_append(bx_outbox_t *ob, bx_remote_t *to, void *obj, size_t size) {
    bx_outbox_slot_t *slot = NULL;
    for (unsigned i = 0; i < BX_OUTBOX_SLOTS; i++)
        if (ob->slot[i].to == to) slot = &ob->slot[i];
    if (BX_UNLIKELY(!slot)) {
        claim_append(ob, to, obj, size);
        return;
    }
    ob->last = slot;
    slot_append(slot, obj, size);
}

/* One object straight onto the receiver's list. */
static BX_NOINLINE void send_unbatched(bx_remote_t *to, void *obj, size_t size) {
    after_push(to, push_one(to, obj, size));
}

void bx_remote_send_small_switch(bx_outbox_t *ob, bx_block_t *blk, void *obj) {
    bx_outbox_run_t *run = NULL, *unused = NULL;
    for (unsigned i = 0; i < BX_OUTBOX_RUNS; i++) {
        if (ob->run[i].blk == blk) run = &ob->run[i];
        if (!ob->run[i].blk) unused = &ob->run[i];
    }
    if (!run) {
        run = unused;
        if (!run) {
            run = &ob->run[ob->run_victim++ % BX_OUTBOX_RUNS];
            bx_remote_run_close(ob, run);
        }
        run->blk = blk;
        run->tail = obj;
        run->head = BX_FREE_END;
        run->left = run_limit(blk); /* what waits for the owner stays as before runs */
    }
    ob->last_run = run;
    bx_remote_send_small(ob, blk, obj);
}

void bx_remote_send(bx_outbox_t *from, bx_remote_t *to, void *obj, size_t size) {
    if (BX_UNLIKELY(!from || atomic_load_explicit(&to->unattended, memory_order_relaxed))) {
        send_unbatched(to, obj, size);
        return;
    }
    /* The slot used last is tried first, and that path has no calls but tail calls. */
    bx_outbox_slot_t *slot = from->last;
    if (BX_LIKELY(slot->to == to))
        slot_append(slot, obj, size);
    else
        switch_append(from, to, obj, size);
}
