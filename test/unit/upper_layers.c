/* upper_layers.c - probes of the layers above the superblock (heap, retention, thread, core)
 * for test_upper_layers.cpp. In C: their headers use C11 atomics, which C++17 cannot read.
 * Each probe returns NULL when every check held, or what failed first. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bobox.h"
#include "core/core.h"
#include "heap/retention.h"
#include "os/options.h"
#include "os/os.h"

static char failure[256];
#define CHECK(cond, ...)                                                 \
    do {                                                                 \
        if (!(cond)) {                                                   \
            snprintf(failure, sizeof failure, __VA_ARGS__);              \
            return failure;                                              \
        }                                                                \
    } while (0)

static void start(void) { bobox_free(bobox_malloc(1)); /* start-up and this thread's heap */ }

/* h's own object p, as free hands it over: a tick may have mixed its block (mixed.h). */
static void free_own(bx_heap_t *h, void *p) {
    bx_block_t *blk = bx_block_of(p);
    if (bx_block_is_mixed(blk))
        bx_heap_free_mixed(h, blk, p);
    else
        bx_heap_free_small(h, blk, p);
}

static int by_address(const void *a, const void *b) {
    uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
    return x < y ? -1 : x > y;
}

const char *probe_heap_small(size_t size, int n) {
    start();
    bx_heap_t *h = bx_heap_create(0, BX_HEAP_LIVE);
    CHECK(h, "no heap");
    char **objs = calloc((size_t)n, sizeof *objs);
    for (int i = 0; i < n; i++) {
        objs[i] = bx_heap_alloc(h, size);
        CHECK(objs[i], "allocation %d of %zu B failed", i, size);
        CHECK(bx_block_of(objs[i])->heap == h, "object %d is in a block of another heap", i);
        CHECK(bx_block_of(objs[i])->size >= size, "object %d is in a block of %u B", i, bx_block_of(objs[i])->size);
        memset(objs[i], i & 0xff, size);
    }
    CHECK(bx_heap_check(h), "bx_heap_check failed with %d objects live", n);
    uintptr_t *sorted = calloc((size_t)n, sizeof *sorted);
    for (int i = 0; i < n; i++) sorted[i] = (uintptr_t)objs[i];
    qsort(sorted, (size_t)n, sizeof *sorted, by_address);
    for (int i = 1; i < n; i++) CHECK(sorted[i] - sorted[i - 1] >= size, "objects overlap at %#lx", (unsigned long)sorted[i]);
    for (int i = 0; i < n; i++)
        for (size_t b = 0; b < size; b++) CHECK((unsigned char)objs[i][b] == (i & 0xff), "object %d byte %zu changed", i, b);
    for (int i = 0; i < n; i++) bx_heap_free_small(h, bx_block_of(objs[i]), objs[i]);
    CHECK(bx_heap_check(h), "bx_heap_check failed after the frees");
    /* Everything free goes back: the bins' blocks reach the block cache, the cache its node. */
    bx_retention_release_heap(h, BX_RELEASE_TRIM);
    CHECK(bx_heap_check(h), "bx_heap_check failed after the release");
    CHECK(h->small_blocks.count == 0, "%u blocks still cached after a TRIM release", h->small_blocks.count);
    CHECK(h->small_blocks.alloc.superblocks == 0, "the heap still holds %zu superblocks", h->small_blocks.alloc.superblocks);
    free(sorted);
    free(objs);
    return NULL;
}

const char *probe_heap_medium(void) {
    start();
    bx_heap_t *h = bx_heap_create(0, BX_HEAP_LIVE);
    CHECK(h, "no heap");
    size_t size = 200 * BX_KB;
    char *p = bx_heap_alloc(h, size);
    CHECK(p, "no medium object");
    uintptr_t entry = bx_pagemap_get(p);
    CHECK(bx_tag_of(entry) == BX_TAG_MEDIUM, "tag %u, not medium", bx_tag_of(entry));
    bx_superblock_t *sb = bx_span_of(entry);
    uint32_t index;
    CHECK(sb->heap == h && bx_sb_object(sb, p, &index) == p, "not an object of this heap's superblock");
    CHECK(sb->block_size >= size, "block of %u B for %zu B", sb->block_size, size);
    CHECK(bx_sb_live(sb, index), "not live");
    memset(p, 0x5a, size);
    CHECK(bx_sb_take_live(sb, index, true), "live flag already clear");
    bx_heap_free_medium(h, sb, index);
    CHECK(!bx_sb_take_live(sb, index, true), "a second free would not be caught");
    CHECK(bx_heap_check(h), "bx_heap_check failed");
    return NULL;
}

/* A free from heap `from` of another heap's object reaches the owner only through its remote
 * list, which the owner's drain empties into the block. */
const char *probe_remote_free(void) {
    start();
    bx_heap_t *owner = bx_heap_create(0, BX_HEAP_LIVE), *from = bx_heap_create(0, BX_HEAP_LIVE);
    CHECK(owner && from, "no heaps");
    char *p = bx_heap_alloc(owner, 64);
    CHECK(p, "no object");
    bx_block_t *blk = bx_block_of(p);
    CHECK(!bx_heap_remote_pending(owner), "remote frees pending before any");
    bx_heap_send_home(from, blk->home, p, blk->size, bx_block_key(blk));
    bx_outbox_flush(&from->outbox);
    CHECK(bx_heap_remote_pending(owner), "the free did not reach the owner's remote list");
    bx_lookup_t r;
    bx_classify(p, &r);
    CHECK(r.tag == 0 && r.freed, "the object in transit still reads as live");
    bx_heap_drain(owner);
    CHECK(!bx_heap_remote_pending(owner), "the drain left remote frees");
    CHECK(bx_heap_check(owner) && bx_heap_check(from), "bx_heap_check failed after the drain");
    return NULL;
}

/* Runs (remote.h) past what the owner's inbox holds take its list, relinked object by
 * object: the drain gives every object back to its block, and the owner's mallocs get them
 * all again before any new memory. */
const char *probe_remote_runs_overflow(void) {
    enum { N = BX_INBOX_SLOTS / 2 * BX_OUTBOX_BATCH * 3 / 2 }; /* half again what the inbox holds in runs */
    start();
    bx_heap_t *owner = bx_heap_create(0, BX_HEAP_LIVE), *from = bx_heap_create(0, BX_HEAP_LIVE);
    CHECK(owner && from, "no heaps");
    void **objs = malloc(N * sizeof *objs);
    CHECK(objs, "no array");
    for (int i = 0; i < N; i++) {
        CHECK((objs[i] = bx_heap_alloc(owner, 64)), "no object %d", i);
        memset(objs[i], i & 0xff, 64);
    }
    /* `from` never allocated 64 B: it keeps none, every object goes into a run. */
    for (int i = 0; i < N; i++) bx_heap_free_foreign_small(from, bx_block_of(objs[i]), objs[i]);
    bx_outbox_flush(&from->outbox);
    CHECK(atomic_load(&owner->remote.list) != NULL, "the inbox took %d objects in runs: no run reached the list", N);
    bx_lookup_t r;
    bx_classify(objs[N - 1], &r);
    CHECK(r.tag == 0 && r.freed, "an object in a run still reads as live");
    bx_heap_drain(owner);
    CHECK(!bx_heap_remote_pending(owner), "the drain left remote frees");
    CHECK(bx_remote_waiting(&owner->remote) == 0, "%zu bytes still counted as waiting", bx_remote_waiting(&owner->remote));
    CHECK(bx_heap_check(owner), "bx_heap_check failed after draining runs");
    qsort(objs, N, sizeof *objs, by_address);
    for (int i = 0; i < N; i++) {
        void *p = bx_heap_alloc(owner, 64);
        CHECK(p && bsearch(&p, objs, N, sizeof *objs, by_address), "malloc %d took memory no run gave back", i);
    }
    CHECK(bx_heap_check(owner), "bx_heap_check failed after the mallocs");
    free(objs);
    return NULL;
}

/* A fork child's view of an inbox whose sender did not come along: it had stored a run's
 * second word and not yet its first (a batch's words go in last first) when another thread
 * forked. The child's after-fork pass moves the plain objects onto the list and leaves the
 * run in transit; it never takes the second word for an object (the build before wrote
 * through it: a fork storm's child died of SIGSEGV now and then). */
const char *probe_remote_after_fork_hole(void) {
    enum { RUN = 8 };
    start();
    bx_heap_t *owner = bx_heap_create(0, BX_HEAP_LIVE), *from = bx_heap_create(0, BX_HEAP_LIVE);
    CHECK(owner && from, "no heaps");
    void *run[RUN];
    for (int i = 0; i < RUN; i++) CHECK((run[i] = bx_heap_alloc(owner, 64)), "no object %d", i);
    char *plain = bx_heap_alloc(owner, 256);
    CHECK(plain, "no plain object");
    uint32_t first = atomic_load(&owner->remote.inbox_tail);
    /* `from` keeps no 64 B objects: they go home in a run (after the first, sent alone). */
    for (int i = 0; i < RUN; i++) bx_heap_free_foreign_small(from, bx_block_of(run[i]), run[i]);
    bx_outbox_flush(&from->outbox);
    bx_block_t *pb = bx_block_of(plain);
    bx_heap_send_home(from, pb->home, plain, pb->size, bx_block_key(pb));
    bx_outbox_flush(&from->outbox);
    uint32_t last = atomic_load(&owner->remote.inbox_tail), head_at = last;
    _Atomic(void *) *slot = owner->remote.inbox;
    for (uint32_t k = first; k < last && head_at == last; k++)
        if ((uintptr_t)atomic_load(&slot[k % BX_INBOX_SLOTS]) & BX_RUN_HEAD) head_at = k;
    CHECK(head_at + 1 < last, "no run in the inbox's %u words", last - first);
    uintptr_t meta = (uintptr_t)atomic_load(&slot[(head_at + 1) % BX_INBOX_SLOTS]);
    CHECK((meta & BX_RUN_META) && bx_run_meta_count(meta) > 1, "a run's first word without its second");
    atomic_store(&slot[head_at % BX_INBOX_SLOTS], NULL); /* the first word, never stored */
    uint32_t used_before = pb->used;
    bx_remote_after_fork(&owner->remote);
    CHECK(atomic_load(&owner->remote.inbox_head) == last, "the inbox was not emptied");
    unsigned listed = 0;
    for (void *o = atomic_load(&owner->remote.list); o && listed <= last - first; o = bx_link_get(o)) listed++;
    CHECK(listed == last - first - 2, "%u objects on the list for the %u plain words", listed, last - first - 2);
    bx_heap_drain(owner);
    CHECK(!bx_heap_remote_pending(owner), "the drain left remote frees");
    CHECK(bx_heap_check(owner), "bx_heap_check failed after the drain");
    CHECK(pb->used == used_before - 1, "the plain object did not go back to its block (%u used, %u before)", pb->used,
          used_before);
    return NULL;
}

static size_t keeps_held(const bx_heap_t *h) {
    size_t held = 0;
    for (unsigned i = 0; i < BX_SMALL_BINS; i++) held += bx_keep_held_bytes(&h->keep[i]);
    return held;
}

/* Mallocs of sizes MIN..MAX in `from` until its keeps hold less than `below`. */
static const char *take_kept_below(bx_heap_t *from, size_t min, size_t max, int per_size, size_t below) {
    for (size_t size = min; size <= max && keeps_held(from) >= below; size += 16)
        for (int i = 0; i < per_size && from->keep[bx_small_bin(size)].carved && keeps_held(from) >= below; i++)
            CHECK(bx_heap_alloc(from, size), "no object of %zu B", size);
    return NULL;
}

/* n objects of `owner` freed by `from`: foreign frees, each kept or sent home. */
static const char *free_foreign(bx_heap_t *owner, bx_heap_t *from, size_t size, int n) {
    for (int i = 0; i < n; i++) {
        char *obj = bx_heap_alloc(owner, size);
        CHECK(obj, "no owner object of %zu B", size);
        bx_heap_free_foreign_small(from, bx_block_of(obj), obj);
    }
    return NULL;
}

/* A heap that frees another's objects of many sizes, each size's keep on its top chain
 * (where no per-heap bound of uncounted objects applies), holds at most BX_KEEP_HELD_BYTES
 * of them, plus what one balance interval adds; once its mallocs took most of them back,
 * every keep takes up to its whole capacity again. */
const char *probe_keep_bound(void) {
    enum { MIN = 256, MAX = 4096, PER_SIZE = 1100 };
    start();
    /* Keeps take plain objects (free's checks say which): with mixed blocks, the owner's
     * later sizes would come from the gaps of its earlier ones, which free never keeps. */
    bool mixed = bx_options.mixed;
    bx_options.mixed = false;
    bx_heap_t *owner = bx_heap_create(0, BX_HEAP_LIVE), *from = bx_heap_create(0, BX_HEAP_LIVE);
    CHECK(owner && from, "no heaps");
    size_t capacity_sum = 0;
    for (size_t size = MIN; size <= MAX; size = bx_small_size[bx_small_bin(size)] + 16) {
        size_t class_size = bx_small_size[bx_small_bin(size)];
        /* The size allocated once (its keep enabled), one object kept, then mallocs until
         * the keep is taken onto the top chain: the object comes back. */
        CHECK(bx_heap_alloc(from, class_size), "no object of %zu B", class_size);
        char *sent = bx_heap_alloc(owner, class_size);
        CHECK(sent, "no owner object of %zu B", class_size);
        bx_heap_free_foreign_small(from, bx_block_of(sent), sent);
        char *p;
        int n = 0;
        do {
            CHECK(n++ < 5000 && (p = bx_heap_alloc(from, class_size)), "the kept %zu B object never came back", class_size);
        } while (p != sent);
        capacity_sum += (size_t)bx_keep_capacity((uint32_t)class_size) * class_size;
        for (int i = 0; i < PER_SIZE; i++) {
            char *obj = bx_heap_alloc(owner, class_size);
            CHECK(obj, "no owner object %d of %zu B", i, class_size);
            memset(obj, 7, class_size);
            bx_heap_free_foreign_small(from, bx_block_of(obj), obj);
        }
    }
    CHECK(capacity_sum > 2 * BX_KEEP_HELD_BYTES, "the sizes' capacities (%zu B) do not test the bound", capacity_sum);
    size_t held = keeps_held(from);
    CHECK(held <= BX_KEEP_HELD_BYTES + BX_KEEP_BALANCE_FREES * (size_t)MAX, "the keeps hold %zu B", held);
    CHECK(held >= BX_KEEP_HELD_BYTES / 2, "the keeps hold only %zu B", held);
    CHECK(from->keeps_closed, "the keeps are not closed at %zu B", held);
    CHECK(bx_heap_check(from) && bx_heap_check(owner), "bx_heap_check failed with the keeps closed");
    /* Its mallocs take the kept objects back: under half the bound they stay closed (once
     * reopened there, they filled again at once), under a quarter they open again. */
    const char *err = take_kept_below(from, MIN, MAX, PER_SIZE, BX_KEEP_HELD_BYTES / 2);
    if (err) return err;
    CHECK(keeps_held(from) >= BX_KEEP_HELD_BYTES / 4 + BX_KEEP_BALANCE_FREES * (size_t)MIN,
          "the mallocs took the keeps down to %zu B", keeps_held(from));
    if ((err = free_foreign(owner, from, MIN, BX_KEEP_BALANCE_FREES))) return err;
    CHECK(from->keeps_closed, "the keeps opened again at %zu B", keeps_held(from));
    if ((err = take_kept_below(from, MIN, MAX, PER_SIZE, BX_KEEP_HELD_BYTES / 8))) return err;
    if ((err = free_foreign(owner, from, MIN, BX_KEEP_BALANCE_FREES))) return err;
    CHECK(!from->keeps_closed, "the keeps stay closed at %zu B", keeps_held(from));
    bx_block_t *keep = &from->keep[bx_small_bin(MAX)];
    CHECK(keep->capacity == bx_keep_capacity(keep->size), "a keep's capacity is %u after the reopening",
          (unsigned)keep->capacity);
    CHECK(bx_heap_check(from) && bx_heap_check(owner), "bx_heap_check failed after the reopening");
    bx_options.mixed = mixed;
    return NULL;
}

/* A heap whose cache is empty takes the surplus another heap's cache holds rather than cut
 * fresh memory, and each lent block goes back to the cache that cut it once emptied. */
const char *probe_lend(void) {
    enum { SIZE = 1024, LENDER_BLOCKS = 200, BORROWED_BLOCKS = 8 };
    start();
    bx_heap_t *lender = bx_heap_create(0, BX_HEAP_LIVE), *borrower = bx_heap_create(0, BX_HEAP_LIVE);
    CHECK(lender && borrower, "no heaps");
    uint32_t per_block = (BX_BLOCK_SIZE - 1024) / SIZE, n = LENDER_BLOCKS * per_block;
    char **objs = calloc(n, sizeof *objs);
    for (uint32_t i = 0; i < n; i++) CHECK((objs[i] = bx_heap_alloc(lender, SIZE)), "lender allocation %u failed", i);
    for (uint32_t i = 0; i < n; i++) free_own(lender, objs[i]);
    /* As at its thread's exit: the bins' blocks go to the cache, which keeps them. */
    bx_retention_release_heap(lender, BX_RELEASE_THREAD_EXIT);
    uint32_t cached = lender->small_blocks.count;
    CHECK(cached >= LENDER_BLOCKS / 2 + BX_LEND_RESERVE_BLOCKS, "the lender caches only %u blocks", cached);
    /* The borrower's blocks: all lent (some other heap may have had a surplus too). */
    uint32_t m = BORROWED_BLOCKS * per_block;
    for (uint32_t i = 0; i < m; i++) {
        CHECK((objs[i] = bx_heap_alloc(borrower, SIZE)), "borrower allocation %u failed", i);
        memset(objs[i], 0x3c, SIZE);
        bx_superblock_t *sb = bx_superblock_of(objs[i]);
        CHECK(sb->owner != &borrower->small_blocks.alloc, "object %u is in a block cut for the borrower", i);
        CHECK(bx_block_of(objs[i])->heap == borrower, "object %u's block names another heap", i);
    }
    CHECK(borrower->small_blocks.alloc.superblocks == 0, "the borrower cut %zu superblocks",
          (size_t)borrower->small_blocks.alloc.superblocks);
    uint32_t lent = cached - lender->small_blocks.count;
    CHECK(bx_heap_check(borrower) && bx_heap_check(lender), "bx_heap_check failed with blocks lent");
    for (uint32_t i = 0; i < m; i++)
        for (uint32_t b = 0; b < SIZE; b++) CHECK((unsigned char)objs[i][b] == 0x3c, "object %u byte %u changed", i, b);
    for (uint32_t i = 0; i < m; i++) free_own(borrower, objs[i]);
    bx_retention_release_heap(borrower, BX_RELEASE_THREAD_EXIT);
    CHECK(borrower->small_blocks.count == 0, "%u lent blocks stayed in the borrower's cache", borrower->small_blocks.count);
    CHECK(lender->small_blocks.count == cached, "the lender lent %u blocks and has %u of %u back", lent,
          lender->small_blocks.count, cached);
    CHECK(bx_heap_check(borrower) && bx_heap_check(lender), "bx_heap_check failed after the blocks went home");
    free(objs);
    return NULL;
}

/* The decay tick is retention's, registered at start-up: a tick due runs it. */
const char *probe_tick(void) {
    start();
    CHECK(bx_heap_tick_handler == bx_retention_tick_due, "start-up registered no tick handler");
    bx_heap_t *h = bx_heap_create(0, BX_HEAP_LIVE);
    CHECK(h, "no heap");
    h->next_tick_ns = 0;
    uint64_t before = bx_now_ns();
    bx_heap_tick(h);
    CHECK(h->next_tick_ns > before, "the tick did not run (next tick at %llu, now %llu)",
          (unsigned long long)h->next_tick_ns, (unsigned long long)before);
    return NULL;
}

/* Pages of [lo, hi) wholly outside [skip_lo, skip_hi) that were written: present and mapped
 * by this process alone (/proc/self/pagemap bits 63 and 56). A page only read is the shared
 * zero page, not exclusive; a fresh heap's bins and keeps are that until written. */
static unsigned written_pages_outside(const void *lo, const void *hi, const void *skip_lo, const void *skip_hi) {
    uintptr_t ps = (uintptr_t)sysconf(_SC_PAGESIZE), n = 0;
    FILE *f = fopen("/proc/self/pagemap", "rb");
    if (!f) return ~0u;
    for (uintptr_t p = ((uintptr_t)lo + ps - 1) & ~(ps - 1); p + ps <= (uintptr_t)hi; p += ps) {
        if (p < (uintptr_t)skip_hi && p + ps > (uintptr_t)skip_lo) continue;
        uint64_t e = 0;
        if (fseek(f, (long)(p / ps * 8), SEEK_SET) != 0 || fread(&e, 8, 1, f) != 1) { n = ~0u; break; }
        if ((e >> 63 & 1) && (e >> 56 & 1)) n++;
    }
    fclose(f);
    return (unsigned)n;
}

/* The front cache of one bin of a fresh heap: fresh slots carved into it, LIFO hand-back, a
 * batch turning it off, counts, the tick of an idle bin, a corrupted entry, the release. */
const char *probe_front(size_t size) {
    start();
    bx_heap_t *h = bx_heap_create(0, BX_HEAP_LIVE);
    CHECK(h, "no heap");
    bx_bin_t *b = &h->small[bx_small_bin(size)];
    CHECK(!bx_bin_formatted(b) && bx_bin_check(b), "a bin is formatted before its first allocation");
    char *objs[3 * BX_FRONT_SLOTS + 2 * 4096];
    /* The first malloc of a fresh block carves the next slots, half the array's worth, into
     * the array, handed out in address order: those that start on the first one's page. */
    CHECK((objs[0] = bx_heap_alloc(h, size)) != NULL, "allocation 0 failed");
    CHECK(bx_bin_formatted(b), "the first allocation left its bin unformatted");
    /* Formatted at first allocation means written then: the first malloc of one size wrote
     * no page of the other bins and keeps (their 40 KB stay zero pages). */
    unsigned idx = bx_small_bin(size), other;
    other = written_pages_outside(h->small, h->small + BX_SMALL_BINS, b, b + 1);
    CHECK(other == 0, "%u pages of other bins written by one size's first malloc", other);
    other = written_pages_outside(h->keep, h->keep + BX_SMALL_BINS, &h->keep[idx], &h->keep[idx + 1]);
    CHECK(other == 0, "%u pages of other bins' keeps written by one size's first malloc", other);
    uint32_t cap = (uint32_t)b->front.cap, n = cap + BX_FRONT_BATCH;
    CHECK(cap >= 2 && cap <= BX_FRONT_SLOTS, "capacity %u", cap);
    uintptr_t page = (uintptr_t)objs[0] & ~(uintptr_t)4095;
    uint32_t on_page = (uint32_t)((page + 4095 - (uintptr_t)objs[0]) / b->size);
    uint32_t first_carve = cap / 2 < on_page ? cap / 2 : on_page;
    CHECK(bx_bin_front_count(b) == first_carve, "%u carved into the array, not %u (first at %p, %u B)", bx_bin_front_count(b), first_carve,
          (void *)objs[0], (unsigned)b->size);
    for (uint32_t i = 1; i < n; i++) {
        CHECK((objs[i] = bx_heap_alloc(h, size)) != NULL, "allocation %u failed", i);
        if (i > first_carve) continue;
        CHECK(objs[i] == objs[0] + i * b->size, "carved slot %u at %p, not %p", i, (void *)objs[i],
              (void *)(objs[0] + i * b->size));
        CHECK(((uintptr_t)objs[i] & ~(uintptr_t)4095) == page, "carved slot %u at %p, off the first one's page", i,
              (void *)objs[i]);
    }
    CHECK(bx_heap_check(h), "bx_heap_check failed with carved slots in the array");
    bx_bin_empty_front(b); /* what the last carve left goes back to its block */
    /* Fewer than its capacity: the frees stay in the array, and come back newest first. */
    for (uint32_t i = 0; i < cap; i++) bx_heap_free_small(h, bx_block_of(objs[i]), objs[i]);
    CHECK(bx_bin_front_count(b) == cap, "%u cached after %u frees", bx_bin_front_count(b), cap);
    CHECK(bx_bin_allocated(b) == n - cap, "%zu counted live, %u are", bx_bin_allocated(b), n - cap);
    CHECK(bx_heap_check(h), "bx_heap_check failed with the array full");
    for (uint32_t i = 0; i < cap; i++) {
        char *p = bx_heap_alloc(h, size);
        CHECK(p == objs[cap - 1 - i], "malloc %u handed out %p, not the object freed last %p", i, (void *)p,
              (void *)objs[cap - 1 - i]);
    }
    CHECK(bx_bin_front_count(b) == 0, "%u left in the array", bx_bin_front_count(b));
    /* Past its capacity, frees go to their blocks; BX_FRONT_BATCH of them in a row with no
     * malloc (a batch) send the whole array there too, and the rest of the batch follows,
     * until the bin's top chain next runs out. */
    for (uint32_t i = 0; i < n - 1; i++) bx_heap_free_small(h, bx_block_of(objs[i]), objs[i]);
    CHECK(bx_bin_front_count(b) == cap && b->front.cap == cap, "%u cached, capacity %u after %u frees past a full array",
          bx_bin_front_count(b), (unsigned)b->front.cap, n - 1 - cap);
    bx_heap_free_small(h, bx_block_of(objs[n - 1]), objs[n - 1]);
    CHECK(bx_bin_front_count(b) == 0 && b->front.cap == 0, "%u cached, capacity %u after a batch of %u frees",
          bx_bin_front_count(b), (unsigned)b->front.cap, n);
    for (uint32_t i = 0; i < n; i++) /* a block that emptied went back to the cache, which links through it */
        CHECK(bx_block_of(objs[i])->heap != h || bx_object_is_free(objs[i], bx_block_key(bx_block_of(objs[i]))),
              "object %u does not read as free", i);
    CHECK(bx_bin_allocated(b) == 0, "%zu counted live after every free", bx_bin_allocated(b));
    CHECK(bx_heap_check(h), "bx_heap_check failed after the batch");
    uint32_t again = 0;
    while (b->front.cap == 0 && again < 3 * BX_FRONT_SLOTS + 2 * b->per_block)
        CHECK((objs[again++] = bx_heap_alloc(h, size)) != NULL, "allocation %u failed", again);
    CHECK(b->front.cap == cap, "the array was not turned back on after %u mallocs", again);
    uint32_t carved = bx_bin_front_count(b), freed = 0;
    for (; freed < cap - carved && freed < again; freed++) bx_heap_free_small(h, bx_block_of(objs[freed]), objs[freed]);
    CHECK(bx_bin_front_count(b) == carved + freed, "%u cached after freeing %u with %u carved", bx_bin_front_count(b), freed,
          carved);
    /* A write after free over a cached object's link is a corruption the check sees. */
    uintptr_t *link = (uintptr_t *)b->front.slot[0];
    *link ^= 1;
    CHECK(!bx_heap_check(h), "bx_heap_check missed a cached object's changed link");
    *link ^= 1;
    /* A tick spills the array of a bin that allocated nothing since the last one. */
    bx_retention_release_heap(h, BX_RELEASE_TICK);
    CHECK(bx_bin_front_count(b) != 0, "the first tick spilled a bin that was in use");
    bx_retention_release_heap(h, BX_RELEASE_TICK);
    CHECK(bx_bin_front_count(b) == 0, "%u still cached after a tick of an idle bin", bx_bin_front_count(b));
    CHECK(bx_heap_check(h), "bx_heap_check failed after the tick");
    /* The release gives every block back. */
    char *more[BX_FRONT_SLOTS];
    for (uint32_t i = 0; i < cap; i++) CHECK((more[i] = bx_heap_alloc(h, size)) != NULL, "allocation %u failed", i);
    for (uint32_t i = 0; i < cap; i++) free_own(h, more[i]);
    for (uint32_t i = freed; i < again; i++) free_own(h, objs[i]);
    bx_retention_release_heap(h, BX_RELEASE_TRIM);
    CHECK(bx_bin_front_count(b) == 0, "%u still cached after a TRIM release", bx_bin_front_count(b));
    CHECK(bx_heap_check(h), "bx_heap_check failed after the release");
    CHECK(h->small_blocks.alloc.superblocks == 0, "the heap still holds %zu superblocks", h->small_blocks.alloc.superblocks);
    return NULL;
}

static const void *hooked;
static int hook_calls;
static void note_large_free(const void *object) {
    hooked = object;
    hook_calls++;
}

const char *probe_core(void) {
    start();
    /* The object plain malloc would hand out next: LIFO, so the one just freed. */
    void *p = bx_core_alloc_small(48);
    CHECK(p, "no object");
    bx_core_free(p, "probe");
    void *q = bx_core_alloc_small(48);
    CHECK(q == p, "core handed out %p after freeing %p", q, p);
    bx_core_free(q, "probe");
    char *a = bx_alloc_aligned_unchecked(4096, 100);
    CHECK(a && ((uintptr_t)a & 4095) == 0, "aligned object %p", (void *)a);
    bx_lookup_t r;
    bx_classify(a, &r);
    CHECK(r.tag == BX_TAG_SMALL && r.usable >= 100, "aligned object: tag %u, %zu usable", r.tag, r.usable);
    bx_core_free(a, "probe");
    bx_core_set_large_free_hook(note_large_free);
    void *big = bx_alloc_unchecked(2 * BX_MB);
    CHECK(big, "no large object");
    bx_core_free(big, "probe");
    bx_core_set_large_free_hook(NULL);
    CHECK(hook_calls == 1 && hooked == big, "the large-free hook saw %d frees (last %p), not %p", hook_calls, hooked, big);
    errno = 0;
    CHECK(!bx_alloc_unchecked((size_t)PTRDIFF_MAX + 1) && errno == ENOMEM, "PTRDIFF_MAX + 1 bytes: errno %d", errno);
    return NULL;
}

/* Frees an address inside an object, which aborts naming `op`. */
void probe_core_free_inside(void) {
    start();
    char *p = bx_core_alloc_small(64);
    bx_core_free(p + 16, "probe_free()");
}

static int64_t countdown_start(void) { return 1000000; }
static void *two_mallocs(void *arg) {
    bobox_free(bobox_malloc(16)); /* acquires the heap: counted before, against no countdown */
    bobox_free(bobox_malloc(16));
    *(int64_t *)arg = bx_tls_alloc.sample_left;
    return NULL;
}
/* A new thread's countdown starts where the registered function says; the malloc after the
 * one that gave the thread its heap counts down from there. */
int64_t probe_countdown_in_new_thread(void) {
    start();
    int64_t seen = 0;
    pthread_t t;
    bx_thread_set_countdown_start(countdown_start);
    pthread_create(&t, NULL, two_mallocs, &seen);
    pthread_join(t, NULL);
    bx_thread_set_countdown_start(NULL);
    return seen;
}

/* 1 in 8 at random (splitmix64's finish): gaps of any length. */
static bool kept_at_random(uint64_t i) {
    i = (i ^ (i >> 30)) * 0xbf58476d1ce4e5b9u;
    i = (i ^ (i >> 27)) * 0x94d049bb133111ebu;
    return ((i ^ (i >> 31)) & 7) == 0;
}

/* A heap whose 64 B objects are 7/8 freed and whose bin then goes idle: its blocks mix
 * (mixed.h). *blk_out: one of them. */
static const char *mixed_heap_keeping(bool (*kept)(uint64_t), bx_heap_t **out, bx_block_t **blk_out) {
    enum { N = 4096 };
    static char *objs[N];
    start();
    bx_heap_t *h = bx_heap_create(0, BX_HEAP_LIVE);
    CHECK(h, "no heap");
    for (int i = 0; i < N; i++) CHECK((objs[i] = bx_heap_alloc(h, 64)) != NULL, "allocation %d failed", i);
    for (int i = 0; i < N; i++)
        if (!kept((uint64_t)i)) free_own(h, objs[i]);
    CHECK(bx_heap_purge_idle_bin(h, bx_small_bin(64), false), "the idle bin was not purged");
    CHECK(h->mixed_blocks == NULL, "blocks mixed at the first pass, while their objects could still be leaving");
    CHECK(!bx_heap_purge_idle_bin(h, bx_small_bin(64), false), "purged again with no frees since");
    bx_heap_mix_idle_bin(h, bx_small_bin(64));
    CHECK(h->mixed_blocks != NULL, "no block mixed");
    CHECK(bx_heap_check(h), "bx_heap_check failed after the blocks mixed");
    for (int i = 0; i < N; i++) {
        if (!kept((uint64_t)i)) continue;
        bx_lookup_t r;
        bx_classify(objs[i], &r);
        CHECK(r.tag == BX_TAG_SMALL && r.object == objs[i] && r.usable == 64, "survivor %d reads as tag %u, %zu B", i,
              r.tag, r.usable);
    }
    *out = h;
    *blk_out = h->mixed_blocks;
    return NULL;
}

/* Pages given back by a bin's blocks so far: the pages their masks record. */
static unsigned purged_pages(const bx_bin_t *b) {
    unsigned pages = 0;
    for (unsigned list = BX_LIST_ALMOST_FULL; list < BX_LIST_COUNT; list++)
        for (const bx_block_t *blk = b->lists[bx_bin_list_slot(list)]; blk; blk = blk->next)
            pages += (unsigned)__builtin_popcount(blk->purged);
    return pages;
}

/* A new heap whose 1 KB objects are 7/8 freed at random: sparse blocks, on 59% of whose pages
 * no object is left. */
static const char *sparse_heap(bx_heap_t **out) {
    enum { N = 1024 };
    static char *objs[N];
    bx_heap_t *h = *out = bx_heap_create(0, BX_HEAP_LIVE);
    CHECK(h, "no heap");
    for (int i = 0; i < N; i++) CHECK((objs[i] = bx_heap_alloc(h, 1024)) != NULL, "allocation %d failed", i);
    for (int i = 0; i < N; i++)
        if (!kept_at_random((uint64_t)i)) free_own(h, objs[i]);
    return NULL;
}

/* A pass asked to spare sparse blocks keeps their pages, a second such pass does nothing, and
 * the first pass not asked to gives them back; a mix after the sparing pass takes the blocks
 * with all their pages. */
const char *probe_purge_spares_sparse(void) {
    start();
    unsigned bin = bx_small_bin(1024);
    bx_heap_t *h;
    const char *err = sparse_heap(&h);
    if (err) return err;
    bx_bin_t *b = &h->small[bin];
    CHECK(bx_heap_purge_idle_bin(h, bin, true), "the sparing pass did not run");
    CHECK(purged_pages(b) == 0, "the sparing pass gave back %u pages", purged_pages(b));
    CHECK(!bx_heap_purge_idle_bin(h, bin, true), "a second sparing pass ran with no frees since");
    CHECK(bx_heap_purge_idle_bin(h, bin, false), "the pass after a sparing one did not run");
    unsigned given = purged_pages(b);
    CHECK(given > 0, "no page given back by the pass after the sparing one");
    CHECK(!bx_heap_purge_idle_bin(h, bin, false), "a third pass ran with nothing spared and no frees since");
    CHECK(bx_heap_check(h), "bx_heap_check failed after the passes");

    /* Again, with a mix after the sparing pass: no mixed block has a page given back. */
    if ((err = sparse_heap(&h))) return err;
    CHECK(bx_heap_purge_idle_bin(h, bin, true), "the sparing pass did not run");
    bx_heap_mix_idle_bin(h, bin);
    CHECK(h->mixed_blocks != NULL, "no block mixed after the sparing pass");
    for (bx_block_t *blk = h->mixed_blocks; blk; blk = blk->next)
        CHECK(blk->purged == 0, "a block mixed with pages given back (%#x)", blk->purged);
    CHECK(bx_heap_check(h), "bx_heap_check failed after the mix");
    return NULL;
}

static const char *mixed_heap(bx_heap_t **out, bx_block_t **blk_out) {
    return mixed_heap_keeping(kept_at_random, out, blk_out);
}

/* The longest run of free granules in blk, as the classifier sees them. */
static size_t longest_free_run(const bx_block_t *blk) {
    size_t longest = 0, run = 0;
    for (const char *p = blk->mem; p < blk->mem + BX_BLOCK_SIZE; p += BX_ALIGNMENT) {
        bx_lookup_t r;
        bx_classify(p, &r);
        run = r.tag == 0 && r.freed ? run + BX_ALIGNMENT : 0;
        if (run > longest) longest = run;
    }
    return longest;
}

/* Of each block's 1,024 64 B objects, every 10th of the first 700 kept (gaps of 576 B, more
 * than a mixed block's index holds), then every 20th (gaps of 1,216 B, left out of it). */
enum { SHORT_GAP = 9 * 64, LONG_GAP = 19 * 64 };
static bool kept_short_then_long(uint64_t i) { return i % 1024 < 700 ? i % 10 == 0 : i % 20 == 0; }

/* Cuts `size` from blk until it has no run for it: how many, each checked and filled. */
static const char *cut_all(bx_block_t *blk, uint32_t size, char **cut, unsigned max, unsigned *cuts) {
    for (*cuts = 0; *cuts < max && (cut[*cuts] = bx_mixed_alloc(blk, size)) != NULL; ++*cuts) {
        CHECK(bx_block_of(cut[*cuts]) == blk && bx_mixed_check(blk), "cut %u of %u B: %p, or the block's state is wrong",
              *cuts, size, (void *)cut[*cuts]);
        memset(cut[*cuts], 0x5c, size);
    }
    CHECK(longest_free_run(blk) < size, "a run of %zu B left after %u cuts of %u B", longest_free_run(blk), *cuts, size);
    return NULL;
}

const char *probe_mixed_runs(void) {
    bx_heap_t *h;
    bx_block_t *blk;
    const char *err = mixed_heap_keeping(kept_short_then_long, &h, &blk);
    if (err) return err;
    const bx_mixed_t *m = blk->mixed_state;
    CHECK(m->runs == BX_MIXED_RUNS && m->runs_partial, "%u runs indexed of a block with %u survivors", m->runs,
          bx_mixed_live(blk));
    /* The long gaps, none in the index, each serve an object that fills it; then the short. */
    enum { MAX_CUTS = BX_BLOCK_SIZE / SHORT_GAP };
    static char *cut[MAX_CUTS];
    unsigned cuts;
    if ((err = cut_all(blk, LONG_GAP, cut, MAX_CUTS, &cuts))) return err;
    CHECK(cuts >= 10, "%u cuts of %d B", cuts, LONG_GAP);
    if ((err = cut_all(blk, SHORT_GAP, cut, MAX_CUTS, &cuts))) return err;
    CHECK(cuts > BX_MIXED_RUNS, "%u cuts of %d B, the index holds %d runs", cuts, SHORT_GAP, BX_MIXED_RUNS);
    /* Freed between survivors: the gap is indexed again, and the next cut takes it. */
    bx_heap_free_mixed(h, blk, cut[cuts / 2]);
    CHECK(bx_mixed_check(blk), "the block's state is wrong after a free between survivors");
    char *again = bx_mixed_alloc(blk, SHORT_GAP);
    CHECK(again == cut[cuts / 2], "the gap freed at %p, the next cut at %p", (void *)cut[cuts / 2], (void *)again);
    /* Two neighbours freed, and the survivor between them: one run, which the next cut finds. */
    char *a = cut[1], *b = cut[2];
    CHECK(b == a + SHORT_GAP + 64, "cuts 1 and 2 are not one survivor apart");
    bx_heap_free_mixed(h, blk, a);
    bx_heap_free_mixed(h, blk, a + SHORT_GAP);
    bx_heap_free_mixed(h, blk, b);
    CHECK(bx_mixed_check(blk), "the block's state is wrong after frees beside free runs");
    char *both = bx_mixed_alloc(blk, 2 * SHORT_GAP + 64);
    CHECK(both == a, "the merged run at %p, the cut of its size at %p", (void *)a, (void *)both);
    CHECK(bx_mixed_check(blk) && bx_heap_check(h), "the block's state is wrong after the merged cut");
    return NULL;
}

const char *probe_mixed(void) {
    bx_heap_t *h;
    bx_block_t *blk;
    const char *err = mixed_heap(&h, &blk);
    if (err) return err;
    CHECK(bx_block_is_mixed(blk) && bx_mixed_live(blk) > 0, "the mixed block holds no survivor");
    uint32_t live = bx_mixed_live(blk);
    char *a = bx_mixed_alloc(blk, 1024);
    CHECK(a && bx_block_of(a) == blk, "no 1 KB run in a block 7/8 free");
    CHECK(bx_mixed_live(blk) == live + 1, "%u live after the cut, %u before", bx_mixed_live(blk), live);
    bx_lookup_t r;
    bx_classify(a, &r);
    CHECK(r.tag == BX_TAG_SMALL && r.object == a && r.usable == 1024, "the cut object reads as tag %u, %zu B", r.tag,
          r.usable);
    bx_classify(a + 16, &r);
    CHECK(r.tag == 0 && !r.freed, "an address inside it reads as an object");
    memset(a, 0x33, 1024);
    CHECK(bx_heap_check(h), "bx_heap_check failed with the cut object");
    bx_heap_free_mixed(h, blk, a);
    bx_classify(a, &r);
    CHECK(r.tag == 0 && r.freed, "the freed object does not read as freed");
    /* The smallest run that holds it is the one it left. */
    char *b = bx_mixed_alloc(blk, 1024);
    CHECK(b == a, "the next 1 KB cut at %p, not at %p", (void *)b, (void *)a);
    bx_heap_free_mixed(h, blk, b);
    /* An aligned allocation's mark inside an object: its address reads as live. */
    char *c = bx_mixed_alloc(blk, 512);
    CHECK(c, "no 512 B run");
    bx_object_mark_aligned(c, c + 256, bx_block_key(blk));
    bx_classify(c + 256, &r);
    CHECK(r.tag == BX_TAG_SMALL && r.object == c && r.usable == 256, "the aligned address reads as tag %u, %zu B", r.tag,
          r.usable);
    bx_heap_free_mixed(h, blk, c);
    CHECK(bx_mixed_check(blk) && bx_heap_check(h), "bx_heap_check failed after the frees");
    /* Every survivor freed: the block goes back to the cache at its owner's free. */
    size_t blocks = bx_mixed_blocks();
    for (const char *p = blk->mem; bx_block_is_mixed(blk) && p < blk->mem + BX_BLOCK_SIZE; p += 64) {
        bx_classify(p, &r);
        if (r.tag) bx_heap_free_mixed(h, blk, r.object);
    }
    CHECK(!bx_block_is_mixed(blk) && bx_mixed_blocks() == blocks - 1, "the emptied block stayed mixed");
    return NULL;
}

void probe_mixed_write_after_free(void) {
    bx_heap_t *h;
    bx_block_t *blk;
    if (mixed_heap(&h, &blk)) _exit(2);
    char *a = bx_mixed_alloc(blk, 1024);
    if (!a) _exit(3);
    bx_heap_free_mixed(h, blk, a);
    a[3] ^= 0x5a; /* a stale pointer's store */
    fprintf(stderr, "object %p\n", (void *)a);
    bx_mixed_alloc(blk, 1024);
    _exit(0);
}
