/* mixed.c - mixed blocks (mixed.h). */
#include "mem/mixed.h"

#include "base/lock.h"
#include "os/os.h"

#define GRANULE_SHIFT 4
#define PAGE_GRANULES (BX_PURGE_PAGE / BX_ALIGNMENT)
BX_STATIC_ASSERT(BX_ALIGNMENT == 1u << GRANULE_SHIFT && BX_MIXED_GRANULES % 64 == 0, "granules fill the words");

/* A few locks for all mixed blocks, by address: frees from any thread are rare enough here
 * that a lock per block would buy nothing, and fork takes them all. */
#define STRIPES 16
static bx_lock_t stripe_lock[STRIPES] = {[0 ... STRIPES - 1] = BX_LOCK_INIT};
static bx_lock_t *lock_of(const bx_block_t *b) {
    return &stripe_lock[((uintptr_t)b->mem >> BX_BLOCK_SHIFT) % STRIPES];
}

/* Records come from 64 KB mappings, never unmapped (one per 60 mixed blocks). */
#define POOL_CHUNK BX_BLOCK_SIZE
static bx_lock_t pool_lock = BX_LOCK_INIT;
static bx_mixed_t *pool_free;

static bx_mixed_t *record_take(void) {
    bx_lock(&pool_lock);
    if (!pool_free) {
        bx_mixed_t *chunk = bx_os_map(POOL_CHUNK);
        if (chunk)
            for (size_t i = 0; i < POOL_CHUNK / sizeof(bx_mixed_t); i++) {
                chunk[i].next = pool_free;
                pool_free = &chunk[i];
            }
    }
    bx_mixed_t *m = pool_free;
    if (m) pool_free = m->next;
    bx_unlock(&pool_lock);
    return m;
}

static void record_give(bx_mixed_t *m) {
    bx_lock(&pool_lock);
    m->next = pool_free;
    pool_free = m;
    bx_unlock(&pool_lock);
}

/* The process's mixed blocks and the bytes of their live objects (statistics). */
static size_t blocks_total, live_granules_total;
size_t bx_mixed_blocks(void) { return __atomic_load_n(&blocks_total, __ATOMIC_RELAXED); }
size_t bx_mixed_live_bytes(void) { return __atomic_load_n(&live_granules_total, __ATOMIC_RELAXED) << GRANULE_SHIFT; }

/* Relaxed: a thread that finds the block mixed reads the record under its lock. */
static bx_mixed_t *state_of(const bx_block_t *b) { return __atomic_load_n(&b->mixed_state, __ATOMIC_RELAXED); }

static bool bit(const uint64_t *map, uint32_t g) { return map[g / 64] >> (g % 64) & 1; }
static void set_range(uint64_t *map, uint32_t from, uint32_t n, bool on) { /* n > 0 */
    uint32_t first = from / 64, last = (from + n - 1) / 64;
    uint64_t head = ~(uint64_t)0 << (from % 64), tail = ~(uint64_t)0 >> (63 - (from + n - 1) % 64);
    if (first == last) head &= tail;
    if (on) {
        map[first] |= head;
        for (uint32_t i = first + 1; i < last; i++) {
            map[i] = ~(uint64_t)0;
            __asm__ volatile("" ::: "memory"); /* no call to memset (above: convert) */
        }
        if (last > first) map[last] |= tail;
    } else {
        map[first] &= ~head;
        for (uint32_t i = first + 1; i < last; i++) {
            map[i] = 0;
            __asm__ volatile("" ::: "memory");
        }
        if (last > first) map[last] &= ~tail;
    }
}
/* The first granule at or after `from` and below `limit` whose bit is `want`; at least
 * `limit` if none (BX_MIXED_GRANULES at most). */
static inline __attribute__((always_inline)) uint32_t next_bit_below(const uint64_t *map, uint32_t from, bool want,
                                                                      uint32_t limit) {
    if (from >= limit) return limit;
    uint32_t i = from / 64, last = (limit - 1) / 64;
    uint64_t w = (want ? map[i] : ~map[i]) & (~(uint64_t)0 << (from % 64));
    while (!w) {
        if (++i > last) return limit;
        w = want ? map[i] : ~map[i];
    }
    return i * 64 + (uint32_t)__builtin_ctzll(w);
}
static inline __attribute__((always_inline)) uint32_t next_bit(const uint64_t *map, uint32_t from, bool want) {
    return next_bit_below(map, from, want, BX_MIXED_GRANULES);
}
static uint32_t granule_of(const bx_block_t *b, const void *p) {
    return (uint32_t)((uintptr_t)((const char *)p - b->mem) >> GRANULE_SHIFT);
}
/* The first granule of the object holding used granule g. */
static uint32_t start_of(const bx_mixed_t *m, uint32_t g) {
    while (g > 0 && bit(m->used, g - 1) && !bit(m->last, g - 1)) g--;
    return g;
}

/* Under b's lock: whether p names a live object of b, its first granule or the address an
 * aligned allocation handed out inside it (block.h's mark at its start); *start: its first
 * granule. */
static bool names_object(const bx_block_t *b, const bx_mixed_t *m, const void *p, uint32_t *start) {
    if ((uintptr_t)p & (BX_ALIGNMENT - 1)) return false;
    uint32_t g = granule_of(b, p);
    if (!bit(m->used, g)) return false;
    *start = start_of(m, g);
    if (*start == g) return true;
    const uintptr_t *mark = (const uintptr_t *)(b->mem + ((size_t)*start << GRANULE_SHIFT));
    return bx_object_is_aligned(mark, bx_block_key(b)) && mark[0] == (uintptr_t)p;
}
/* Under b's lock: p lies on a free granule (freed twice, when it names no object). */
static bool on_free_granule(const bx_block_t *b, const bx_mixed_t *m, const void *p) {
    return !((uintptr_t)p & (BX_ALIGNMENT - 1)) && !bit(m->used, granule_of(b, p));
}

/* The first free run at or after granule *g: its start in *g (BX_MIXED_GRANULES: none), its
 * end returned. */
static uint32_t next_free_run(const bx_mixed_t *m, uint32_t *g) {
    *g = next_bit(m->used, *g, false);
    return next_bit(m->used, *g, true);
}

/* ---- the index of long free runs (the record's run_start and run_len) ---- */

static void run_add(bx_mixed_t *m, uint32_t g, uint32_t len) {
    if (m->runs == BX_MIXED_RUNS) {
        m->runs_partial = true;
        return;
    }
    m->run_start[m->runs] = (uint16_t)g;
    m->run_len[m->runs] = (uint16_t)len;
    m->runs++;
}
static void run_remove(bx_mixed_t *m, unsigned i) {
    m->runs--;
    m->run_start[i] = m->run_start[m->runs];
    m->run_len[i] = m->run_len[m->runs];
}
/* Every long run, from the bitmap. */
static void runs_index(bx_mixed_t *m) {
    m->runs = 0;
    m->runs_partial = m->runs_stale = false;
    for (uint32_t g = 0, end; (end = next_free_run(m, &g)), g < BX_MIXED_GRANULES; g = end)
        if (end - g >= BX_MIXED_RUN_MIN) run_add(m, g, end - g);
}

static void mark_object(bx_mixed_t *m, uint32_t g, uint32_t n) {
    set_range(m->used, g, n, true);
    m->last[(g + n - 1) / 64] |= (uint64_t)1 << ((g + n - 1) % 64);
    m->live++;
    m->free_granules -= n;
}

uint32_t bx_mixed_live(const bx_block_t *b) {
    bx_lock_t *lock = lock_of(b);
    bx_lock(lock); /* a free that emptied it is done with the record before the owner reuses it */
    uint32_t live = state_of(b)->live;
    bx_unlock(lock);
    return live;
}

bool bx_mixed_convert(bx_block_t *b) {
    bx_mixed_t *m = record_take();
    if (!m) return false;
    bx_lock_t *lock = lock_of(b);
    bx_lock(lock); /* what a thread that finds the block mixed reads next, under the lock */
    for (unsigned i = 0; i < BX_MIXED_WORDS; i++) {
        m->used[i] = m->last[i] = m->marked[i] = 0;
        __asm__ volatile("" ::: "memory"); /* no call to memset: front/ defines it, a layer above */
    }
    m->live = 0;
    m->free_granules = BX_MIXED_GRANULES;
    uint32_t size = b->size, carved = b->carved / size;
    uint64_t listed_map[BX_BLOCK_MAP_WORDS] = {0};
    bx_block_map_list(b, listed_map);
    /* Every other carved slot holds an object: live, or freed and on its way to the owner,
     * or kept by another thread for its mallocs. Slots on pages given back are free. */
    for (uint32_t i = 0; i < carved; i++) {
        uint32_t g = i * size >> GRANULE_SHIFT;
        if (bit(listed_map, i)) { /* its link and key, checked when an object is cut over it */
            m->marked[g / 64] |= (uint64_t)1 << (g % 64);
        } else if (!(b->purged >> (i * size / BX_PURGE_PAGE) & 1)) {
            mark_object(m, g, size >> GRANULE_SHIFT);
        }
    }
    m->purged = b->purged;
    runs_index(m);
    __atomic_fetch_add(&live_granules_total, BX_MIXED_GRANULES - m->free_granules, __ATOMIC_RELAXED);
    bx_unlock(lock);
    __atomic_fetch_add(&blocks_total, 1, __ATOMIC_RELAXED);
    __atomic_store_n(&b->mixed_state, m, __ATOMIC_RELAXED);
    b->free = BX_FREE_MIXED;
    /* Mixed first: a thread whose test of a slot fails on the zero limits then finds it so
     * (bx_block_became_mixed). Every such test fails from now on, and frees go to the
     * classifier, which asks here. */
    __atomic_store_n(&b->mixed, 1, __ATOMIC_RELEASE);
    __atomic_store_n(&b->slot_limit, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&b->shared_slot_limit, 0, __ATOMIC_RELEASE);
    return true;
}

void *bx_mixed_alloc(bx_block_t *b, uint32_t size) {
    bx_mixed_t *m = state_of(b);
    uint32_t n = size >> GRANULE_SHIFT, g = 0;
    bx_lock_t *lock = lock_of(b);
    bx_lock(lock);
    if (m->free_granules < n) {
        bx_unlock(lock);
        return NULL;
    }
    /* The smallest run that holds it (the lowest of equals), larger runs staying for larger
     * objects: the first run from where the last cut ended held 5% more at the shape change's
     * peak (memshapes, scale 0.3). The index spares a look at every gap between the
     * survivors: scanning the bitmap took 1,250 instructions a cut there. */
    if (m->runs_stale || (m->runs_partial && m->runs == 0)) runs_index(m);
    uint32_t best = BX_MIXED_GRANULES, best_len = UINT32_MAX;
    unsigned best_entry = BX_MIXED_RUNS;
    for (unsigned i = 0; i < m->runs; i++) {
        uint32_t len = m->run_len[i], start = m->run_start[i];
        if (len >= n && (len < best_len || (len == best_len && start < best))) {
            best_entry = i;
            best_len = len;
            best = start;
        }
    }
    if (best_entry == BX_MIXED_RUNS && m->runs_partial) { /* the runs left out of the index */
        for (uint32_t end; (end = next_free_run(m, &g)), g < BX_MIXED_GRANULES; g = end) {
            if (end - g >= n && end - g < best_len) {
                best = g;
                best_len = end - g;
            }
        }
        for (unsigned i = 0; i < m->runs && best_entry == BX_MIXED_RUNS; i++)
            if (m->run_start[i] == best) best_entry = i;
    }
    if (best == BX_MIXED_GRANULES) {
        bx_unlock(lock);
        return NULL;
    }
    g = best;
    if (best_entry < BX_MIXED_RUNS) { /* the rest of the run, if still long */
        m->run_start[best_entry] = (uint16_t)(g + n);
        m->run_len[best_entry] = (uint16_t)(best_len - n);
        if (best_len - n < BX_MIXED_RUN_MIN) run_remove(m, best_entry);
    }
    /* Every free mark under it as a free left it: a write after free aborts here, as it does
     * where a block's list is followed (a link that decodes to no offset, or a changed key). */
    uintptr_t key = bx_block_key(b);
    for (uint32_t at = g; (at = next_bit_below(m->marked, at, true, g + n)) < g + n; at++) {
        const uintptr_t *w = (const uintptr_t *)(b->mem + ((size_t)at << GRANULE_SHIFT));
        if (BX_UNLIKELY(((w[0] ^ bx_link_secret) & BX_FREE_LINK_BAD) || w[1] != key)) {
            bx_unlock(lock);
            bx_free_object_corrupt("malloc()", w);
        }
        m->marked[at / 64] &= ~((uint64_t)1 << (at % 64));
    }
    mark_object(m, g, n);
    __atomic_fetch_add(&live_granules_total, n, __ATOMIC_RELAXED);
    m->purged &= (uint16_t)~(((1u << ((g + n - 1) / PAGE_GRANULES + 1)) - 1) & ~((1u << (g / PAGE_GRANULES)) - 1));
    bx_unlock(lock);
    char *p = b->mem + ((size_t)g << GRANULE_SHIFT);
    ((uintptr_t *)p)[1] = 0; /* no free or aligned mark left by the block's past */
    return p;
}

uint32_t bx_mixed_free(bx_block_t *b, void *p, const char *op) {
    bx_mixed_t *m = state_of(b);
    uint32_t g;
    bx_lock_t *lock = lock_of(b);
    bx_lock(lock);
    if (BX_UNLIKELY(!names_object(b, m, p, &g))) {
        bool freed = on_free_granule(b, m, p);
        bx_unlock(lock);
        bx_fatalf("%s: %s %p", op, freed ? "double free" : "invalid pointer", p);
    }
    char *obj = b->mem + ((size_t)g << GRANULE_SHIFT);
    uint32_t last = next_bit(m->last, g, true), n = last - g + 1;
    set_range(m->used, g, n, false);
    m->last[last / 64] &= ~((uint64_t)1 << (last % 64));
    m->free_granules += n;
    /* Between used granules it is a run of its own; beside free ones, the index is rebuilt
     * at the next cut rather than merged here (which took 240 instructions a free on the
     * shape change, whose frees come in bursts with no cut between). */
    if ((g == 0 || bit(m->used, g - 1)) && (last + 1 == BX_MIXED_GRANULES || bit(m->used, last + 1))) {
        if (n >= BX_MIXED_RUN_MIN) run_add(m, g, n);
    } else {
        m->runs_stale = true;
    }
    __atomic_fetch_sub(&live_granules_total, n, __ATOMIC_RELAXED);
    bx_object_mark_free(obj, bx_block_key(b));
    m->marked[g / 64] |= (uint64_t)1 << (g % 64);
    uint32_t left = --m->live;
    bx_unlock(lock);
    return left;
}

bool bx_mixed_lookup(const bx_block_t *b, const void *p, void **object, size_t *usable, bool *freed) {
    const bx_mixed_t *m = state_of(b);
    uint32_t start = 0;
    bx_lock_t *lock = lock_of(b);
    bx_lock(lock);
    bool live = names_object(b, m, p, &start);
    *freed = !live && on_free_granule(b, m, p);
    uint32_t last = live ? next_bit(m->last, start, true) : 0;
    bx_unlock(lock);
    if (!live) return false;
    *object = b->mem + ((size_t)start << GRANULE_SHIFT);
    *usable = (size_t)(b->mem + ((size_t)(last + 1) << GRANULE_SHIFT) - (const char *)p);
    return true;
}

bool bx_mixed_locate(const bx_block_t *b, const void *q, char **start, char **end) {
    const bx_mixed_t *m = state_of(b);
    uint32_t g = granule_of(b, q);
    bx_lock_t *lock = lock_of(b);
    bx_lock(lock);
    bool live = bit(m->used, g);
    uint32_t first = live ? start_of(m, g) : 0, last = live ? next_bit(m->last, g, true) : 0;
    bx_unlock(lock);
    if (!live) return false;
    *start = b->mem + ((size_t)first << GRANULE_SHIFT);
    *end = b->mem + ((size_t)(last + 1) << GRANULE_SHIFT);
    return true;
}

size_t bx_mixed_purge(bx_block_t *b) {
    bx_mixed_t *m = state_of(b);
    if (bx_os_page_size() != BX_PURGE_PAGE) return 0;
    bx_lock_t *lock = lock_of(b);
    bx_lock(lock);
    uint16_t gone = 0;
    for (uint32_t page = 0; page < BX_PURGE_PAGES; page++) {
        if (m->purged >> page & 1) continue;
        uint32_t g = page * PAGE_GRANULES;
        if (next_bit(m->used, g, true) >= g + PAGE_GRANULES) gone = (uint16_t)(gone | 1u << page);
    }
    m->purged |= gone;
    for (uint32_t page = 0; page < BX_PURGE_PAGES; page++) /* their marks read as zeros now */
        if (gone >> page & 1) set_range(m->marked, page * PAGE_GRANULES, PAGE_GRANULES, false);
    bx_unlock(lock);
    /* Only the owner allocates: no object can land on these pages meanwhile. */
    return bx_block_give_pages(b, gone);
}

void bx_mixed_release(bx_block_t *b) {
    bx_mixed_t *m = state_of(b);
    __atomic_store_n(&b->mixed, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&b->mixed_state, NULL, __ATOMIC_RELAXED);
    b->free = BX_FREE_END;
    b->carved = 0;
    b->used = 0;
    b->purged = b->purged_slots = b->purge_seen = 0;
    __atomic_fetch_sub(&blocks_total, 1, __ATOMIC_RELAXED);
    record_give(m);
}

bool bx_mixed_check(const bx_block_t *b) {
    const bx_mixed_t *m = state_of(b);
    if (!m || b->free != BX_FREE_MIXED || bx_block_slot_limit(b) || bx_block_shared_slot_limit(b)) return false;
    bx_lock_t *lock = lock_of(b);
    bx_lock(lock);
    uint32_t used = 0, objects = 0;
    bool ok = true;
    for (uint32_t i = 0; i < BX_MIXED_WORDS; i++) {
        used += (uint32_t)__builtin_popcountll(m->used[i]);
        objects += (uint32_t)__builtin_popcountll(m->last[i]);
        ok &= (m->last[i] & ~m->used[i]) == 0 && (m->marked[i] & m->used[i]) == 0; /* lasts used, marks free */
    }
    /* A used run ends with a last granule. */
    for (uint32_t g = 0; ok && g < BX_MIXED_GRANULES; g++)
        if (bit(m->used, g) && (g + 1 == BX_MIXED_GRANULES || !bit(m->used, g + 1))) ok = bit(m->last, g);
    ok &= objects == m->live && BX_MIXED_GRANULES - used == m->free_granules;
    /* The index names long free runs, each once; unless stale (a free beside one), whole runs,
     * and all of them unless partial. */
    uint32_t long_runs = 0;
    for (uint32_t g = 0, end; (end = next_free_run(m, &g)), g < BX_MIXED_GRANULES; g = end)
        long_runs += end - g >= BX_MIXED_RUN_MIN;
    bool exact = !m->runs_stale;
    ok &= m->runs <= BX_MIXED_RUNS && (!exact || (m->runs_partial ? m->runs <= long_runs : m->runs == long_runs));
    for (unsigned i = 0; ok && i < m->runs; i++) {
        uint32_t g = m->run_start[i], len = m->run_len[i], used_at = next_bit(m->used, g, true);
        ok = len >= BX_MIXED_RUN_MIN && g + len <= BX_MIXED_GRANULES &&
             (exact ? (g == 0 || bit(m->used, g - 1)) && used_at == g + len : used_at >= g + len);
        for (unsigned j = 0; ok && j < i; j++) ok = m->run_start[j] != g;
    }
    bx_unlock(lock);
    return ok;
}

void bx_mixed_lock_all(void) {
    bx_lock(&pool_lock);
    for (unsigned i = 0; i < STRIPES; i++) bx_lock(&stripe_lock[i]);
}
void bx_mixed_unlock_all(void) {
    for (unsigned i = STRIPES; i-- > 0;) bx_unlock(&stripe_lock[i]);
    bx_unlock(&pool_lock);
}
void bx_mixed_reset_locks(void) {
    for (unsigned i = 0; i < STRIPES; i++) bx_lock_reset(&stripe_lock[i]);
    bx_lock_reset(&pool_lock);
}
