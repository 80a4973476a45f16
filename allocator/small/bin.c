/* bin.c - emptying the front cache, chain records, block lists and their transitions. */
#include "small/bin.h"

__attribute__((force_align_arg_pointer)) void bx_front_corrupt(const void *obj) {
    bx_free_object_corrupt("malloc()", obj);
}

void bx_bin_check_front(const bx_bin_t *b, const char *op) {
    for (uint32_t i = 0, n = bx_front_n(&b->front); i < n; i++) {
        const void *obj = b->front.slot[i];
        if (!bx_front_object_ok(obj, bx_block_key(bx_block_of(obj)))) bx_free_object_corrupt(op, obj);
    }
}

static uint32_t max_chains_for(uint32_t size) {
    uint32_t n = (uint32_t)(BX_BLOCK_SIZE / size);
    return n < BX_MIN_CHAINS ? BX_MIN_CHAINS : n;
}

uint32_t bx_bin_ring_size(uint32_t size) { return bx_chainstack_ring_size(max_chains_for(size)); }

void bx_bin_init(bx_bin_t *b, unsigned index, uint32_t size, bx_chain_t *ring, uint32_t ring_size,
                 bx_blockcache_t *cache) {
    bx_chainstack_init(&b->chains, ring, ring_size);
    b->front.n = b->front.pushes = 0;
    b->front.cap = b->front_max = bx_front_capacity(size);
    b->front_full_frees = 0;
    b->front_mark = 0;
    b->cache = cache;
    b->size = size;
    b->per_block = bx_block_capacity(size);
    b->max_chains = max_chains_for(size);
    b->index = index;
    b->taken = b->block_frees = b->spilled = 0;
    b->keep = NULL;
    b->keeper = NULL;
    b->home = NULL;
    for (int i = 0; i < BX_BIN_LISTS; i++) {
        b->lists[i] = NULL;
        b->list_len[i] = 0;
    }
}

static void list_unlink(bx_bin_t *b, bx_block_t *blk) {
    if (blk->list == BX_LIST_QUEUE || blk->list == BX_LIST_NONE) return;
    if (blk->prev)
        blk->prev->next = blk->next;
    else
        b->lists[bx_bin_list_slot(blk->list)] = blk->next;
    if (blk->next) blk->next->prev = blk->prev;
    b->list_len[bx_bin_list_slot(blk->list)]--;
    blk->prev = blk->next = NULL;
    blk->list = BX_LIST_NONE;
}

static void list_push(bx_bin_t *b, bx_block_t *blk, unsigned list) {
    blk->list = (uint8_t)list;
    blk->prev = NULL;
    blk->next = b->lists[bx_bin_list_slot(list)];
    if (blk->next) blk->next->prev = blk;
    b->lists[bx_bin_list_slot(list)] = blk;
    b->list_len[bx_bin_list_slot(list)]++;
}

/* The list a block with live objects belongs on by its fill level (thesis §8.1.1). */
static unsigned list_for(const bx_block_t *blk) {
    uint32_t free = bx_block_free_count(blk);
    if (free == 0) return BX_LIST_FULL;
    return 2 * free > blk->capacity ? BX_LIST_ALMOST_EMPTY : BX_LIST_ALMOST_FULL;
}

/* A block no chain refers to goes where its fill level says, or back to the cache when
 * entirely free. A block that chains name stays on the list it was on (lists are settled
 * only here): in random order most frees start a chain on a block that soon leaves the
 * stack again as full as it was, and moving it off its list and back each time cost a
 * sixth of a malloc + free pair (powerlaw). */
static void place(bx_bin_t *b, bx_block_t *blk) {
    if (blk->used == 0) {
        list_unlink(b, blk);
        blk->heap = BX_BLOCK_NO_OWNER; /* stale pointers into it are no longer anyone's */
        bx_blockcache_free_home(bx_superblock_of(blk->mem), blk->mem);
        return;
    }
    unsigned list = list_for(blk);
    if (blk->list == list) return;
    list_unlink(b, blk);
    list_push(b, blk, list);
}

void bx_bin_detach(bx_bin_t *b, bx_block_t *blk) { list_unlink(b, blk); }
void bx_bin_attach(bx_bin_t *b, bx_block_t *blk) { place(b, blk); }

static void unref(bx_bin_t *b, bx_block_t *blk) {
    if (--blk->chain_refs == 0 && BX_LIKELY(!bx_block_is_keep(blk))) place(b, blk);
}

/* Sends n kept objects home: they were never this bin's frees. */
static void send_kept_home(bx_bin_t *b, uint32_t n) {
    b->block_frees -= n;
    bx_keep_send_home(b->keeper, b->keep, n);
}

void bx_bin_take_kept(bx_bin_t *b) { bx_bin_push_chain(b, b->keep, bx_keep_uncount(b->keeper, b->keep)); }

void bx_bin_release_kept(bx_bin_t *b) {
    if (bx_bin_has_uncounted_kept(b)) send_kept_home(b, bx_keep_uncount(b->keeper, b->keep));
}

/* Drops the oldest chain. Kept objects are interchangeable: whichever of them the chain
 * counted, that many stop being counted. */
static void drop_oldest(bx_bin_t *b) {
    uint32_t count = bx_chainstack_record(&b->chains, 0)->count;
    bx_block_t *blk = bx_chainstack_drop_oldest(&b->chains);
    if (BX_UNLIKELY(bx_block_is_keep(blk))) { /* blk is b->keep */
        blk->chain_refs--;
        if (!bx_keep_retain(b->keeper, blk, count)) send_kept_home(b, count);
        return;
    }
    unref(b, blk);
}

/* A spent record of blk left the stack: publish its slot limit for other threads' frees;
 * the block goes to its list once no record names it. */
static void retire_spent(bx_bin_t *b, bx_block_t *blk) {
    bx_block_share_slot_limit(blk);
    unref(b, blk);
}

static void drop_spent_top(bx_bin_t *b) { retire_spent(b, bx_chainstack_pop(&b->chains)); }

static bool top_spent(const bx_bin_t *b) { return !bx_chainstack_empty(&b->chains) && b->chains.top.count == 0; }

void *bx_bin_alloc_next(bx_bin_t *b) {
    /* The batch of frees is over, if one turned it off. Tested first: the stand-in bin is
     * shared by every thread without a heap and must never be written. */
    if (BX_UNLIKELY(b->front.cap != b->front_max)) b->front.cap = b->front_max;
    if (bx_chainstack_empty(&b->chains)) return NULL;
    drop_spent_top(b);
    /* Kept objects next, while they are still in this CPU's cache. */
    if (bx_bin_has_uncounted_kept(b)) bx_bin_take_kept(b);
    return bx_bin_alloc_top(b); /* NULL: no record left */
}

void bx_bin_push_chain(bx_bin_t *b, bx_block_t *blk, uint32_t count) {
    if (blk->list == BX_LIST_NONE) blk->list = BX_LIST_QUEUE; /* fresh from the cache */
    blk->chain_refs++;
    bx_chainstack_push(&b->chains, blk, count);
}

/* chains.len > bx_bin_bound(b), without its division: len > floor(2a / p) iff len * p > 2a.
 * This runs on most frees of a program that frees in random order. */
static bool over_bound(const bx_bin_t *b) {
    uint32_t len = b->chains.len;
    if (len <= BX_MIN_CHAINS) return false;
    if (len > b->max_chains) return true;
    /* Frees of other heaps' objects kept here can outnumber this bin's allocations. */
    size_t allocated = bx_bin_allocated(b);
    return (size_t)len * b->per_block > 2 * allocated;
}

void bx_bin_new_chain(bx_bin_t *b, bx_block_t *blk) {
    bx_block_t *top = b->chains.top.block;
    blk->chain_refs++; /* a block of the bin's: on a list or named by chains already */
    if (top_spent(b)) {
        /* The chain takes the spent one's place: no ring traffic, and the count of chains,
         * hence the bound, stays as it was (a program that frees and allocates in random
         * order comes here on most frees). */
        bx_chainstack_replace_top(&b->chains, blk, 1);
        retire_spent(b, top);
        return;
    }
    /* Frees moved on from an entirely free block: give it to the block cache now, where any
     * bin can reuse it, instead of letting the chain bound pin it (and up to 15 more). Its
     * older records go too: each would pin it as well, and a batch of frees in the order
     * of the mallocs, hopping between blocks, left every bin holding 16 empty blocks. */
    if (!bx_chainstack_empty(&b->chains) && top->used == 0 && !bx_block_is_keep(top)) {
        top->chain_refs = (uint16_t)(top->chain_refs - bx_chainstack_remove_block(&b->chains, top));
        if (top->chain_refs == 0) place(b, top); /* it was named only by records */
    }
    bx_chainstack_push(&b->chains, blk, 1);
    while (over_bound(b)) drop_oldest(b);
}

bool bx_bin_release_empty_top(bx_bin_t *b) {
    bx_block_t *blk = b->chains.top.block;
    if (bx_chainstack_empty(&b->chains) || blk->used != 0 || bx_block_is_keep(blk)) return false;
    unref(b, bx_chainstack_pop(&b->chains));
    return true;
}

/* Takes the first block of a list that no chain names. Named ones met on the way leave the
 * list: they are settled when their last chain goes. */
static bx_block_t *list_take(bx_bin_t *b, unsigned list) {
    bx_block_t *blk;
    while ((blk = b->lists[bx_bin_list_slot(list)]) != NULL) {
        list_unlink(b, blk);
        blk->list = BX_LIST_QUEUE;
        if (!blk->chain_refs) return blk;
    }
    return NULL;
}

void *bx_bin_refill_listed(bx_bin_t *b) {
    if (top_spent(b)) drop_spent_top(b); /* its block to its list: the refill order is the thesis's */
    bx_block_t *blk = list_take(b, BX_LIST_ALMOST_FULL);
    if (!blk) blk = list_take(b, BX_LIST_ALMOST_EMPTY);
    if (!blk) return NULL;
    /* All its free objects become one chain on top: those of pages given back too. */
    bx_block_unpurge(blk);
    bx_bin_push_chain(b, blk, bx_block_free_count(blk));
    return bx_bin_alloc(b);
}

void *bx_bin_refill_new(bx_bin_t *b, struct bx_heap *heap) {
    if (top_spent(b)) drop_spent_top(b);
    char *mem = bx_blockcache_alloc_for(b->cache, b->index);
    if (!mem) return NULL;
    bx_block_t *blk = bx_block_of(mem);
    bx_block_init(blk, mem, heap, b->home, b, b->index, b->size);
    bx_bin_push_chain(b, blk, bx_block_free_count(blk));
    return bx_bin_alloc(b);
}

void *bx_bin_refill_alloc(bx_bin_t *b, struct bx_heap *heap) {
    void *p = bx_bin_refill_listed(b);
    return p ? p : bx_bin_refill_new(b, heap);
}

void bx_bin_free_direct(bx_bin_t *b, bx_block_t *blk, void *obj) {
    bx_block_push(blk, obj);
    b->block_frees++;
    if (blk->chain_refs) return; /* settled when its last chain goes */
    /* Move the block only when its list changes: it was full, it just passed half free,
     * or it is entirely free (a drain frees many objects into one block). */
    uint32_t free = bx_block_free_count(blk);
    if (free == 1 || free == blk->capacity / 2u + 1 || blk->used == 0) place(b, blk);
}

void bx_bin_free_run(bx_bin_t *b, bx_block_t *blk, void *head, void *tail, uint32_t count) {
    *(uintptr_t *)tail = blk->free ^ bx_link_secret;
    blk->free = (uint16_t)(uintptr_t)head;
    blk->used = (uint16_t)(blk->used - count);
    b->block_frees += count;
    if (!blk->chain_refs) place(b, blk); /* settled when its last chain goes otherwise */
}

void bx_bin_empty_front(bx_bin_t *b) {
    bx_front_t *f = &b->front;
    uint32_t n = bx_front_n(f);
    if (!n) return; /* no write: an unformatted bin's page stays untouched */
    for (uint32_t i = 0; i < n; i++) {
        void *obj = f->slot[i];
        bx_block_t *blk = bx_block_of(obj);
        if (BX_UNLIKELY(!bx_front_object_ok(obj, bx_block_key(blk)))) bx_free_object_corrupt("free()", obj);
        if (!bx_bin_return_top(b, blk, obj)) bx_bin_new_chain(b, blk);
    }
    b->spilled += n;
    bx_front_set_n(f, 0);
}

/* The smallest page: what a carve writes ahead stays within the first slot's. */
#define BX_CARVE_SPAN 4096u

void *bx_bin_carve(void *bin) {
    bx_bin_t *b = bin;
    if (BX_UNLIKELY(bx_bin_has_uncounted_kept(b))) {
        /* Objects other threads freed here come before fresh pages: the top chain gets back
         * the object it counted, and the kept ones go on top of it. */
        b->chains.top.count++;
        b->taken--;
        bx_bin_take_kept(b);
        return bx_bin_alloc_top(b);
    }
    bx_block_t *blk = b->chains.top.block;
    uint32_t extra = bx_front_n(&b->front) == 0 ? b->chains.top.count : 0; /* the chain counts fresh slots only */
    /* Half the array: the frees that follow have room in it too. */
    if (extra > b->front_max / 2) extra = b->front_max / 2;
    uint32_t size = blk->size;
    char *first = bx_block_bump(blk);
    /* Only slots that start on the first one's page: their marks touch no other page. Up
     * to 16 slots of 1 KB or more written ahead made a program with a few objects of each
     * size 600 KB larger than without the carve. */
    uint32_t to_page_end = BX_CARVE_SPAN - 1 - (uint32_t)((uintptr_t)first & (BX_CARVE_SPAN - 1));
    uint32_t on_page = (uint32_t)(((uint64_t)to_page_end * blk->div_magic) >> 32);
    if (extra > on_page) extra = on_page;
    uint32_t taken = extra + 1;
    blk->carved += taken * size;
    __atomic_store_n(&blk->slot_limit, blk->slot_limit + taken * bx_block_slot_step(blk), __ATOMIC_RELAXED);
    blk->used = (uint16_t)(blk->used + taken);
    b->chains.top.count -= extra;
    b->taken += extra;
    uintptr_t key = bx_block_key(blk);
    bx_front_t *f = &b->front;
    for (uint32_t i = 0; i < extra; i++) {
        char *obj = first + (size_t)(extra - i) * size; /* popped from the end: ascending */
        bx_object_mark_free(obj, key);
        f->slot[i] = obj;
    }
    bx_front_set_n(f, extra);
    if (extra) f->cap = b->front_max;
    ((uintptr_t *)first)[1] = 0;
    return first;
}

void bx_bin_front_full(bx_bin_t *b) {
    size_t allocs = bx_bin_allocs(b);
    if (allocs != b->front_mark) {
        b->front_mark = allocs;
        b->front_full_frees = 0;
    }
    if (++b->front_full_frees < BX_FRONT_BATCH) return;
    bx_bin_empty_front(b);
    b->front.cap = 0;
}

size_t bx_bin_purge_pages(bx_bin_t *b, bool spare_sparse) {
    size_t bytes = 0;
    for (unsigned list = BX_LIST_ALMOST_FULL; list < BX_LIST_COUNT; list++)
        for (bx_block_t *blk = b->lists[bx_bin_list_slot(list)]; blk; blk = blk->next)
            if (!blk->chain_refs && !bx_block_is_keep(blk) && !(spare_sparse && bx_block_sparse(blk)))
                bytes += bx_block_purge_pages(blk);
    return bytes;
}

void bx_bin_flush(bx_bin_t *b) {
    bx_bin_empty_front(b);
    while (b->chains.len) drop_oldest(b);
}

/* The front cache: distinct slots of the bin's blocks that read as cached (front.h). */
static bool front_check(const bx_bin_t *b) {
    const bx_front_t *f = &b->front;
    uint32_t n = bx_front_n(f);
    if (n > f->cap || (f->cap != 0 && f->cap != b->front_max) || b->front_max > BX_FRONT_SLOTS) return false;
    for (uint32_t i = 0; i < n; i++) {
        const void *obj = f->slot[i];
        const bx_block_t *blk = bx_block_of(obj);
        if (blk->owner_bin != b || blk->used == 0 || !bx_block_is_own_slot(blk, obj)) return false;
        if (!bx_front_object_ok(obj, bx_block_key(blk))) return false;
        for (uint32_t j = 0; j < i; j++)
            if (f->slot[j] == obj) return false;
    }
    return true;
}

bool bx_bin_check(const bx_bin_t *b) {
    if (!bx_bin_formatted(b)) return bx_front_n(&b->front) == 0 && b->chains.len == 0 && !b->keep;
    if (!front_check(b)) return false;
    for (unsigned list = BX_LIST_FULL; list < BX_LIST_COUNT; list++) {
        uint32_t n = 0;
        const bx_block_t *prev = NULL;
        for (const bx_block_t *blk = b->lists[bx_bin_list_slot(list)]; blk; prev = blk, blk = blk->next, n++) {
            uint32_t free = bx_block_free_count(blk);
            if (blk->list != list || blk->prev != prev || blk->size != b->size) return false;
            if (blk->bin != b->index || !bx_block_check(blk)) return false;
            if (blk->chain_refs) continue; /* named by chains: settled when they go */
            if (blk->used == 0 || blk->used > blk->capacity) return false;
            if (list == BX_LIST_FULL && free != 0) return false;
            if (list == BX_LIST_ALMOST_FULL && (free == 0 || 2 * free > blk->capacity)) return false;
            if (list == BX_LIST_ALMOST_EMPTY && 2 * free <= blk->capacity) return false;
        }
        if (n != b->list_len[bx_bin_list_slot(list)]) return false;
    }
    /* Chain records: every count fits in its block, and refs match the records. */
    const bx_chainstack_t *cs = &b->chains;
    for (uint32_t i = 0; i < cs->len; i++) {
        const bx_chain_t *rec = bx_chainstack_record(cs, i);
        const bx_block_t *blk = rec->block;
        if (blk->list == BX_LIST_NONE || (rec->count == 0 && i + 1 != cs->len) || blk->bin != b->index) return false;
        if (!bx_block_is_keep(blk) && !bx_block_check(blk)) return false;
        uint32_t refs = 0, counted = 0;
        for (uint32_t j = 0; j < cs->len; j++) {
            const bx_chain_t *other = bx_chainstack_record(cs, j);
            if (other->block == blk) {
                refs++;
                counted += other->count;
            }
        }
        if (refs != blk->chain_refs || counted > bx_block_free_count(blk)) return false;
    }
    if (!cs->len && (cs->top.block != &bx_block_none || cs->top.count)) return false;
    if (bx_block_none.free || bx_block_none.carved) return false; /* someone wrote the shared stand-in */
    return true;
}
