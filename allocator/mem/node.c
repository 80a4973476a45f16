/* node.c - per-node superblock allocators, their caches and decay. */
#define _GNU_SOURCE
#include "mem/node.h"

#include <fcntl.h>
#include <stdatomic.h>
#include <unistd.h>

#include "base/lock.h"
#include "os/options.h"
#include "os/os.h"
#include "os/sysfile.h"
#include "mem/arena.h"
#include "mem/pagemap.h"

typedef struct bx_node {
    bx_lock_t lock;
    bx_superblock_t *cache; /* newest first */
    atomic_size_t cached;   /* written under the lock; read without it by stats and purge */
    atomic_size_t in_use;
} __attribute__((aligned(64))) bx_node_t;

static bx_node_t nodes[BX_MAX_NODES];
static int16_t cpu_node[BX_MAX_CPUS];
static int node_count = 1;

/* Calls fn(i, arg) for each number in a list such as "0-3,8,10-11". */
static void for_each_in_list(const char *s, void (*fn)(int, void *), void *arg) {
    while (*s) {
        if (*s < '0' || *s > '9') {
            s++;
            continue;
        }
        long lo = 0, hi;
        while (*s >= '0' && *s <= '9') lo = lo * 10 + (*s++ - '0');
        hi = lo;
        if (*s == '-') {
            s++;
            hi = 0;
            while (*s >= '0' && *s <= '9') hi = hi * 10 + (*s++ - '0');
        }
        for (long i = lo; i <= hi && i < BX_MAX_CPUS; i++) fn((int)i, arg);
    }
}

static void set_cpu(int cpu, void *node) { cpu_node[cpu] = (int16_t)(intptr_t)node; }
static void note_node(int node, void *max) {
    if (node < BX_MAX_NODES && node + 1 > *(int *)max) *(int *)max = node + 1;
}

void bx_node_init(void) {
    char buf[4096], path[96];
    int max = 1;
    if (bx_os_read_file("/sys/devices/system/node/online", buf, sizeof buf)) for_each_in_list(buf, note_node, &max);
    node_count = max;
    for (int node = 0; node < node_count; node++) {
        /* Plain formatting: snprintf might allocate in some libcs. */
        const char *prefix = "/sys/devices/system/node/node";
        size_t len = 0;
        while (prefix[len]) path[len] = prefix[len], len++;
        if (node >= 10) path[len++] = (char)('0' + node / 10);
        path[len++] = (char)('0' + node % 10);
        const char *suffix = "/cpulist";
        for (size_t i = 0; suffix[i]; i++) path[len++] = suffix[i];
        path[len] = 0;
        if (bx_os_read_file(path, buf, sizeof buf)) for_each_in_list(buf, set_cpu, (void *)(intptr_t)node);
    }
}

int bx_node_count(void) { return node_count; }
int bx_node_of_cpu(int cpu) { return cpu >= 0 && cpu < BX_MAX_CPUS ? cpu_node[cpu] : 0; }
/* On one node neither getcpu nor mbind is called (mappings are bound only where there is
 * more than one node, or BOBOX_MEM): a sandbox may kill on either, and glibc's malloc makes
 * neither. */
int bx_node_current(void) { return node_count > 1 ? bx_node_of_cpu(bx_os_current_cpu()) : 0; }

static void bind_to(void *p, size_t size, void *node) { bx_os_bind(p, size, *(const int *)node); }

static void release(bx_superblock_t *sb) {
    if (bx_in_small_arena(sb))
        bx_arena_release(sb);
    else
        bx_os_unmap(sb, BX_SUPERBLOCK_SIZE);
}

/* Unlinks the newest cached superblock that may take `tag` (the arena's hold small blocks
 * only; a small one takes a mapped one when the arena has none cached), or NULL. Called with
 * the node's lock held. */
static bx_superblock_t *take_cached(bx_node_t *n, unsigned tag) {
    bx_superblock_t **fallback = NULL;
    for (bx_superblock_t **link = &n->cache; *link; link = &(*link)->next) {
        bool in_arena = bx_in_small_arena(*link);
        if (tag == BX_TAG_SMALL ? in_arena : !in_arena) {
            fallback = link;
            break;
        }
        if (tag == BX_TAG_SMALL && !fallback) fallback = link;
    }
    if (!fallback) return NULL;
    bx_superblock_t *sb = *fallback;
    *fallback = sb->next;
    n->cached--;
    return sb;
}

/* Unlinks and returns, in `out`, superblocks beyond the cache's size or age limits at time
 * `now` (ms, read before the lock: an interposed clock may allocate). Called with the node's
 * lock held; the caller unmaps them after unlocking. */
static bx_superblock_t *collect_expired(bx_node_t *n, bool all, uint64_t now) {
    size_t keep_max = bx_options.cache_bytes / BX_SUPERBLOCK_SIZE;
    bx_superblock_t *out = NULL, **link = &n->cache;
    size_t kept = 0;
    while (*link) {
        bx_superblock_t *sb = *link;
        bool expired =
            all || kept >= keep_max || (now > sb->cached_since_ms && now - sb->cached_since_ms >= bx_options.decay_ms);
        if (expired) {
            *link = sb->next;
            sb->next = out;
            out = sb;
            n->cached--;
        } else {
            kept++;
            link = &sb->next;
        }
    }
    return out;
}

static size_t release_list(bx_superblock_t *sb) {
    size_t bytes = 0;
    while (sb) {
        bx_superblock_t *next = sb->next;
        release(sb);
        bytes += BX_SUPERBLOCK_SIZE;
        sb = next;
    }
    return bytes;
}

bx_superblock_t *bx_node_take(int node, unsigned tag) {
    if (node < 0 || node >= node_count) node = 0;
    bx_node_t *n = &nodes[node];
    uint64_t now = bx_now_ms();
    bx_lock(&n->lock);
    bx_superblock_t *sb = take_cached(n, tag);
    n->in_use++;
    bx_superblock_t *expired = collect_expired(n, false, now);
    bx_unlock(&n->lock);
    release_list(expired);

    if (!sb) {
        bx_os_place_fn *place = node_count > 1 ? bind_to : NULL;
        if (tag == BX_TAG_SMALL) sb = bx_arena_take(place, &node);
        /* aligned: block.h */
        if (!sb) sb = bx_os_map_placed(BX_SUPERBLOCK_SIZE, BX_SUPERBLOCK_ALIGN, 0, place, &node);
        /* The advice stays with the mapping while it waits in the cache, the frontier
         * with the superblock. */
        if (sb) {
            bx_os_advise_huge(sb, BX_SUPERBLOCK_SIZE, bx_thp_advice(true));
            bx_sb_seal_fresh(sb);
        }
    }
    if (!sb || !bx_pagemap_set(sb, BX_SUPERBLOCK_SIZE, (uintptr_t)sb | tag)) {
        if (sb) release(sb);
        bx_lock(&n->lock);
        n->in_use--;
        bx_unlock(&n->lock);
        return NULL;
    }
    sb->node = node;
    sb->tag = tag;
    sb->next = NULL;
    return sb;
}

__thread bool bx_node_giving_idle;

void bx_node_give(bx_superblock_t *sb) {
    /* Stale pointers into it must no longer look like ours. */
    bx_pagemap_set(sb, BX_SUPERBLOCK_SIZE, 0);
    bx_node_t *n = &nodes[sb->node];
    sb->tag = 0;
    uint64_t now = bx_now_ms();
    sb->cached_since_ms = bx_node_giving_idle && now > bx_options.decay_ms ? now - bx_options.decay_ms : now;
    bx_lock(&n->lock);
    n->in_use--;
    sb->next = n->cache;
    n->cache = sb;
    n->cached++;
    bx_superblock_t *expired = collect_expired(n, false, now);
    bx_unlock(&n->lock);
    release_list(expired);
}

size_t bx_node_purge(bool all) {
    size_t bytes = 0;
    uint64_t now = bx_now_ms();
    for (int i = 0; i < node_count; i++) {
        bx_node_t *n = &nodes[i];
        if (!atomic_load_explicit(&n->cached, memory_order_relaxed)) continue;
        bx_lock(&n->lock);
        bx_superblock_t *expired = collect_expired(n, all, now);
        bx_unlock(&n->lock);
        bytes += release_list(expired);
    }
    return bytes;
}

size_t bx_node_superblocks_in_use_on(int node) { return nodes[node].in_use; }
size_t bx_node_superblocks_cached_on(int node) { return nodes[node].cached; }

size_t bx_node_superblocks_in_use(void) {
    size_t total = 0;
    for (int i = 0; i < node_count; i++) total += nodes[i].in_use;
    return total;
}

size_t bx_node_superblocks_cached(void) {
    size_t total = 0;
    for (int i = 0; i < node_count; i++) total += nodes[i].cached;
    return total;
}

void bx_node_lock_all(void) {
    for (int i = 0; i < BX_MAX_NODES; i++) bx_lock(&nodes[i].lock);
    bx_arena_lock();
}
void bx_node_unlock_all(void) {
    bx_arena_unlock();
    for (int i = BX_MAX_NODES - 1; i >= 0; i--) bx_unlock(&nodes[i].lock);
}
void bx_node_reset_locks(void) {
    for (int i = 0; i < BX_MAX_NODES; i++) bx_lock_reset(&nodes[i].lock);
    bx_arena_reset_lock();
}

#ifdef BX_TESTING
void bx_node_set_map(const int *map, int cpus, int count) {
    for (int cpu = 0; cpu < BX_MAX_CPUS; cpu++) cpu_node[cpu] = (int16_t)(cpu < cpus ? map[cpu] : 0);
    node_count = count < 1 ? 1 : count > BX_MAX_NODES ? BX_MAX_NODES : count;
}
#endif
