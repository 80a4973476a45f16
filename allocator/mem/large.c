/* large.c - mmap'ed objects and their cache. */
#define _GNU_SOURCE
#include "mem/large.h"

#include <errno.h>
#include <stdatomic.h>

#include "base/bounds.h"
#include "base/lock.h"
#include "mem/node.h"
#include "os/options.h"
#include "os/os.h"
#include "mem/pagemap.h"
#include "mem/samplepool.h"

static bx_lock_t cache_lock = BX_LOCK_INIT;
static atomic_size_t live_objects, live_bytes;

/* The cache: lists by size (bucket k holds mappings of [2^k, 2^(k+1)) bytes, newest first)
 * and one list by age (newest first) for the size limit and the decay. */
#define BUCKETS 64
static bx_large_t *buckets[BUCKETS];
static bx_large_t *newest, *oldest; /* newest is peeked at without the lock: atomic stores */
static size_t cache_bytes;
static uint64_t next_expiry_check_ms;

static size_t page(void) { return bx_os_page_size(); }
static bx_large_t *evict_at_least(size_t bytes);
static size_t release(bx_large_t *l);
static unsigned bucket_of(size_t bytes) { return 63u - (unsigned)__builtin_clzll(bytes); }

static bool publish(bx_large_t *l) { return bx_pagemap_set_one(l->user, (uintptr_t)l | BX_TAG_LARGE); }
static void unpublish(bx_large_t *l) { bx_pagemap_set_one(l->user, 0); }

static void cache_insert(bx_large_t *l) {
    unsigned b = bucket_of(l->map_size);
    l->bprev = NULL;
    l->bnext = buckets[b];
    if (l->bnext) l->bnext->bprev = l;
    buckets[b] = l;
    l->aprev = NULL;
    l->anext = newest;
    if (newest) newest->aprev = l;
    __atomic_store_n(&newest, l, __ATOMIC_RELAXED);
    if (!oldest) oldest = l;
    cache_bytes += l->map_size;
    l->cached = true;
}

static void cache_remove(bx_large_t *l) {
    if (l->bprev)
        l->bprev->bnext = l->bnext;
    else
        buckets[bucket_of(l->map_size)] = l->bnext;
    if (l->bnext) l->bnext->bprev = l->bprev;
    if (l->aprev)
        l->aprev->anext = l->anext;
    else
        __atomic_store_n(&newest, l->anext, __ATOMIC_RELAXED);
    if (l->anext)
        l->anext->aprev = l->aprev;
    else
        oldest = l->aprev;
    cache_bytes -= l->map_size;
    l->cached = false;
}

/* l no longer lies next to its neighbours (it is about to be unmapped or moved). Called with
 * the lock held. */
static void detach(bx_large_t *l) {
    if (l->left) l->left->right = NULL;
    if (l->right) l->right->left = NULL;
    l->left = l->right = NULL;
}

static void detach_locked(bx_large_t *l) {
    bx_lock(&cache_lock);
    detach(l);
    bx_unlock(&cache_lock);
}

/* `upper`, the mapping right above `lower`, becomes part of it. Called with the lock held. */
static void absorb(bx_large_t *lower, bx_large_t *upper) {
    lower->map_size += upper->map_size;
    lower->right = upper->right;
    if (upper->right) upper->right->left = lower;
}

/* Whether cached mapping a suits `need` better than b: one that holds it without growing
 * (the smallest: what it leaves over is a mapping of its own), else the largest. */
static bool better(const bx_large_t *a, const bx_large_t *b, size_t need) {
    bool a_fits = a->map_size >= need, b_fits = b->map_size >= need;
    if (a_fits != b_fits) return a_fits;
    return a_fits ? a->map_size < b->map_size : a->map_size > b->map_size;
}

/* The cached mapping of this node that suits `need` best (better()), from an eighth to eight
 * times it (the three buckets either side): its pages are already there, whatever the size (thesis
 * programs 7.1/7.2 for any size, not one repeated size; realloc's vectors, which move into a
 * mapping at 128 KB and grow to 1 MB). A bounded look at seven buckets keeps it O(1). */
static bx_large_t *from_cache(size_t need, int node) {
    bx_large_t *best = NULL;
    if (!__atomic_load_n(&newest, __ATOMIC_RELAXED)) return NULL;
    bx_lock(&cache_lock);
    unsigned first = bucket_of(need) > 3 ? bucket_of(need) - 3 : 0;
    for (unsigned b = first; b < BUCKETS && b <= bucket_of(need) + 3; b++) {
        int looked = 0;
        for (bx_large_t *l = buckets[b]; l && looked < 8; l = l->bnext, looked++)
            if (l->node == node && l->map_size / 8 <= need && need / 8 <= l->map_size && (!best || better(l, best, need)))
                best = l;
    }
    if (best) cache_remove(best);
    bx_unlock(&cache_lock);
    return best;
}

/* Whether the tail a mapping leaves over a request of `need` becomes a mapping of its own. */
static bool cut_off(size_t tail, size_t need) { return tail > need / 4 && tail >= BX_LARGE_SPLIT_MIN; }

/* l keeps its first `need` bytes; the rest becomes a cached mapping of its own. */
static void cut(bx_large_t *l, size_t need) {
    bx_large_t *rest = (bx_large_t *)(l->base + need);
    rest->base = (char *)rest;
    rest->map_size = l->map_size - need;
    rest->user = rest->base + page();
    rest->node = l->node;
    rest->sample = false;
    rest->cached_since_ms = bx_now_ms();
    bx_lock(&cache_lock);
    l->map_size = need;
    rest->left = l;
    rest->right = l->right;
    if (l->right) l->right->left = rest;
    l->right = rest;
    cache_insert(rest);
    bx_unlock(&cache_lock);
}

/* Fits a cached mapping to `need` bytes: a larger one keeps its tail, or cuts it off
 * (cut_off); a smaller one grows in place or is moved by the kernel with its pages. NULL if
 * it cannot grow (it is then unmapped). */
static bx_large_t *refit(bx_large_t *l, size_t need) {
    if (need <= l->map_size) { /* from_cache takes none above 8x need */
        /* A tail more than a quarter of the request: under a limit on address space it goes
         * back (it would count against the limit for as long as the object lives); without
         * one it stays cached with its pages, a mapping of its own for the next request
         * (sort: a 64 MB buffer freed, then three of 22 MB: the first kept all 64 MB
         * resident and the others mapped fresh, 1.5x glibc's peak). Given back, a later,
         * larger request faulted it in again (bigbuf: 2-3x the time, memory-policy.md). */
        if (!cut_off(l->map_size - need, need)) return l;
        if (bx_os_address_space_limited()) {
            detach_locked(l);
            if (bx_os_remap(l->base, l->map_size, need, false)) l->map_size = need;
            return l;
        }
        cut(l, need);
        return l;
    }
    detach_locked(l);
    char *base = bx_os_remap(l->base, l->map_size, need, true);
    if (!base) {
        bx_os_unmap(l->base, l->map_size);
        return NULL;
    }
    l = (bx_large_t *)base;
    l->base = base;
    l->user = base + page();
    l->map_size = need;
    return l;
}

/* BOBOX_MEM on a fresh mapping, before anything touches it: the policy stays with the mapping
 * through the cache and mremap. Without a setting, the node of the allocating thread (called
 * only with more than one node, or a setting). */
static void place(void *base, size_t size, void *arg) {
    int node = *(const int *)arg;
    const bx_mempolicy_t *m = &bx_options.mem;
    if (m->mode == BX_MEM_LOCAL) {
        bx_os_bind(base, size, node);
        return;
    }
    unsigned long own[BX_MEM_LONGS] = {0};
    const unsigned long *mask = m->mask;
    if (!m->nnodes) { /* bind or preferred without a list: the thread's own node */
        own[node / (8 * sizeof(unsigned long))] = 1UL << (node % (8 * sizeof(unsigned long)));
        mask = own;
    }
    static atomic_int reported;
    int error = 0;
    if (!bx_os_set_policy(base, size, bx_mempolicy_kernel_mode(m->mode), mask, BX_MEM_MAX_NODES + 1, &error) &&
        !atomic_exchange_explicit(&reported, 1, memory_order_relaxed))
        bx_message("bobox: BOBOX_MEM=%s: the kernel refused the policy (mbind: error %d); large objects are "
                   "placed by first touch (reported once)\n",
                   bx_mem_mode_names[m->mode], error);
}

/* A fresh mapping of `need` bytes, its header filled in, the object a page in. */
static bx_large_t *map_fresh(size_t need, size_t alignment, int node) {
    bool placed = bx_options.mem.mode != BX_MEM_LOCAL || bx_node_count() > 1;
    char *base = bx_os_map_placed(need, alignment, page(), placed ? place : NULL, &node);
    if (!base) return NULL;
    bx_os_advise_huge(base, need, bx_thp_advice(false)); /* kept through the cache and mremap */
    bx_large_t *l = (bx_large_t *)base;
    l->base = base;
    l->map_size = need;
    l->user = base + page();
    l->node = node;
    l->left = l->right = NULL;
    l->cached = l->sample = false;
    return l;
}

/* Registers the object for free and the counters. */
static void *hand_out(bx_large_t *l) {
    l->usable = l->map_size - (size_t)(l->user - l->base);
    if (!publish(l)) {
        bx_os_unmap(l->base, l->map_size);
        errno = ENOMEM;
        return NULL;
    }
    atomic_fetch_add_explicit(&live_objects, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&live_bytes, l->usable, memory_order_relaxed);
    return l->user;
}

/* The node a cached mapping must have: a policy over named nodes is the same for every
 * thread, so any cached mapping has it. */
static int cached_node(int node) { return bx_options.mem.mode != BX_MEM_LOCAL && bx_options.mem.nnodes ? -1 : node; }

void *bx_large_alloc(size_t size, size_t alignment, int node, bool *fresh) {
    /* Each object spans at least one 64 KB chunk, so no two share the pagemap entry of
     * their address. */
    if (size < BX_BLOCK_SIZE) size = BX_BLOCK_SIZE;
    if (size > PTRDIFF_MAX - 2 * page() - alignment) {
        errno = ENOMEM;
        return NULL;
    }
    size_t need = page() + bx_align_up(size, page());
    node = cached_node(node);
    bx_large_t *l = alignment <= page() ? from_cache(need, node) : NULL;
    if (l) l = refit(l, need);
    *fresh = l == NULL;
    if (!l) {
        /* A miss: what is cached did not fit, so give back as much as we are about to map:
         * caching must not add a second copy of the working set to the peak. */
        release(evict_at_least(need));
        l = map_fresh(need, alignment, node);
        if (!l) return NULL;
    }
    return hand_out(l);
}

/* ---- samples ------------------------------------------------------------------------
 * The profiler serves each sampled small or medium object as a large one, so that its free
 * reaches bx_prof_forget; their mappings come in 64 KB steps from a pool of their own
 * (samplepool.h). */
void *bx_large_alloc_sample(size_t size, int node) {
    size_t steps = size <= BX_BLOCK_SIZE ? 1 : (size + BX_BLOCK_SIZE - 1) / BX_BLOCK_SIZE;
    if (steps > BX_SAMPLE_STEPS) {
        errno = ENOMEM;
        return NULL;
    }
    node = cached_node(node);
    bx_large_t *l = bx_samplepool_take(steps, node);
    if (!l) {
        l = map_fresh(page() + steps * BX_BLOCK_SIZE, BX_ALIGNMENT, node);
        if (!l) return NULL;
        l->sample = true;
    }
    return hand_out(l);
}

/* Unlinks the oldest cached mappings until `bytes` are taken (or the cache is empty). */
static bx_large_t *evict_at_least(size_t bytes) {
    if (!__atomic_load_n(&newest, __ATOMIC_RELAXED)) return NULL;
    bx_large_t *out = NULL;
    size_t taken = 0;
    bx_lock(&cache_lock);
    while (oldest && taken < bytes) {
        bx_large_t *l = oldest;
        taken += l->map_size;
        cache_remove(l);
        detach(l);
        l->anext = out;
        out = l;
    }
    bx_unlock(&cache_lock);
    return out;
}

/* Unlinks what is past the size limit or the decay delay (all: everything), oldest first,
 * into a list through `anext`. Called with the lock held. */
static bx_large_t *collect(bool all, uint64_t now) {
    bx_large_t *out = NULL;
    while (oldest && (all || cache_bytes > bx_options.cache_bytes ||
                      (now > oldest->cached_since_ms && now - oldest->cached_since_ms >= bx_options.decay_ms))) {
        bx_large_t *l = oldest;
        cache_remove(l);
        detach(l);
        l->anext = out;
        out = l;
    }
    next_expiry_check_ms = oldest ? oldest->cached_since_ms + bx_options.decay_ms : UINT64_MAX;
    return out;
}

static size_t release(bx_large_t *l) {
    size_t bytes = 0;
    while (l) {
        bx_large_t *next = l->anext;
        bytes += l->map_size;
        bx_os_unmap(l->base, l->map_size);
        l = next;
    }
    return bytes;
}

void bx_large_free(bx_large_t *l) {
    unpublish(l);
    atomic_fetch_sub_explicit(&live_objects, 1, memory_order_relaxed);
    atomic_fetch_sub_explicit(&live_bytes, l->usable, memory_order_relaxed);
    bx_large_t *expired = NULL;
    if (l->sample) {
        if (bx_samplepool_put(l, bx_options.cache_bytes / 4)) return;
        l->anext = NULL;
        expired = l;
    } else if (l->map_size <= bx_options.cache_bytes && l->user == l->base + page()) {
        uint64_t now = bx_now_ms();
        bx_lock(&cache_lock);
        /* Whole again with the cached neighbours it was cut from or next to. */
        bx_large_t *upper = l->right, *lower = l->left;
        if (upper && upper->cached) {
            cache_remove(upper);
            absorb(l, upper);
        }
        if (lower && lower->cached) {
            cache_remove(lower);
            absorb(lower, l);
            l = lower;
        }
        l->cached_since_ms = now;
        cache_insert(l);
        if (cache_bytes > bx_options.cache_bytes || now >= next_expiry_check_ms) expired = collect(false, now);
        bx_unlock(&cache_lock);
    } else {
        detach_locked(l);
        l->anext = NULL;
        expired = l;
    }
    release(expired);
}

/* Grows l in place over the cached mapping right above it, if that makes room for `need`
 * (what is left over beyond a quarter of it stays cached): its pages are resident, and
 * mremap could not grow l in place past it (a Python list's buffer, grown by realloc). */
static bool grow_into_neighbour(bx_large_t *l, size_t need) {
    bx_lock(&cache_lock);
    bx_large_t *upper = l->right;
    bool fits = upper && upper->cached && l->map_size + upper->map_size >= need;
    if (fits) {
        cache_remove(upper);
        absorb(l, upper);
    }
    bx_unlock(&cache_lock);
    if (!fits) return false;
    if (cut_off(l->map_size - need, need)) cut(l, need);
    size_t usable = l->map_size - (size_t)(l->user - l->base);
    atomic_fetch_add_explicit(&live_bytes, usable - l->usable, memory_order_relaxed);
    l->usable = usable;
    return true;
}

void *bx_large_realloc(bx_large_t *l, size_t size) {
    if (size > PTRDIFF_MAX - 2 * page()) return NULL;
    size_t offset = (size_t)(l->user - l->base);
    size_t need = offset + bx_align_up(size < BX_BLOCK_SIZE ? BX_BLOCK_SIZE : size, page());
    if (need == l->map_size) return l->user;
    if (need > l->map_size && grow_into_neighbour(l, need)) return l->user;
    char *old_base = l->base;
    size_t old_size = l->map_size;
    /* Unregister first: once mremap moves the mapping, another thread's mmap may get the
     * old range and register its own object in the same pagemap chunk. */
    unpublish(l);
    detach_locked(l);
    char *base = bx_os_remap(old_base, old_size, need, false);
    /* Moving keeps page alignment only; aligned objects grow in place or not at all. The
     * destination is a mapping of our own, its pagemap leaf made first, so that the move
     * replaces nobody's memory and the registration after it cannot fail. */
    if (!base && offset == page() && (base = bx_os_map(need)) != NULL &&
        (!bx_pagemap_set_one(base + offset, 0) || !bx_os_move(old_base, old_size, base, need))) {
        bx_os_unmap(base, need);
        base = NULL;
    }
    if (!base) {
        publish(l); /* unchanged, and its chunk's leaf exists */
        return NULL;
    }
    l = (bx_large_t *)base;
    l->base = base;
    l->map_size = need;
    l->user = base + offset;
    l->usable = need - offset;
    l->sample = false; /* no longer a pool size: the shared cache takes it when freed */
    atomic_fetch_add_explicit(&live_bytes, need - old_size, memory_order_relaxed); /* wraps back on shrink */
    publish(l);
    return l->user;
}

size_t bx_large_purge(bool all) {
    size_t samples = release(bx_samplepool_collect(all));
    if (!__atomic_load_n(&newest, __ATOMIC_RELAXED)) return samples;
    uint64_t now = bx_now_ms(); /* before the lock: an interposed clock may allocate */
    bx_lock(&cache_lock);
    bx_large_t *expired = collect(all, now);
    bx_unlock(&cache_lock);
    return samples + release(expired);
}

size_t bx_large_cached_bytes(void) { return cache_bytes + bx_samplepool_bytes(); }
size_t bx_large_live_objects(void) { return atomic_load_explicit(&live_objects, memory_order_relaxed); }
size_t bx_large_live_bytes(void) { return atomic_load_explicit(&live_bytes, memory_order_relaxed); }
void bx_large_lock(void) {
    bx_lock(&cache_lock);
    bx_samplepool_lock();
}
void bx_large_unlock(void) {
    bx_samplepool_unlock();
    bx_unlock(&cache_lock);
}
void bx_large_reset_lock(void) {
    bx_samplepool_reset_lock();
    bx_lock_reset(&cache_lock);
}
