/* upper_layers.c - probes of the layers above the superblock (heap, retention, thread, core)
 * for test_upper_layers.cpp. In C: their headers use C11 atomics, which C++17 cannot read.
 * Each probe returns NULL when every check held, or what failed first. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bobox.h"
#include "core/core.h"
#include "heap/retention.h"
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
