/* registry.c - checked mode's set of live objects (registry.h). */
#include "tools/registry.h"

#include "base/lock.h"
#include "os/os.h"

#define SHARD_BITS 6
#define SHARDS (1u << SHARD_BITS)
#define MIN_BITS 9 /* 512 entries: one 4 KB page */

typedef struct {
    bx_lock_t lock;
    unsigned bits;    /* the table has 1 << bits entries; 0: none yet */
    size_t count;
    uintptr_t *slots; /* 0: empty; else the address | meta */
} __attribute__((aligned(64))) shard_t;

static shard_t shards[SHARDS];

/* The top SHARD_BITS bits pick the shard, the bits below them the home slot: the low bits
 * of a product repeat the low bits of the address, which objects of one size share. */
static uint64_t hash_of(uintptr_t p) { return (uint64_t)(p >> 4) * 0x9E3779B97F4A7C15ull; }
static shard_t *shard_of(uint64_t h) { return &shards[h >> (64 - SHARD_BITS)]; }
static size_t home_of(uint64_t h, unsigned bits) { return (size_t)((h << SHARD_BITS) >> (64 - bits)); }
static uintptr_t key_of(uintptr_t entry) { return entry & ~(uintptr_t)BX_REGISTRY_META_MASK; }
static size_t capacity(const shard_t *s) { return s->bits ? (size_t)1 << s->bits : 0; }

static void place(uintptr_t *slots, unsigned bits, uintptr_t entry) {
    size_t mask = ((size_t)1 << bits) - 1, i = home_of(hash_of(key_of(entry)), bits);
    while (slots[i]) i = (i + 1) & mask;
    slots[i] = entry;
}

/* A table of 1 << bits entries holding the shard's entries; false (the old one kept) if no
 * memory could be had. Called with the shard's lock held. */
static bool resize(shard_t *s, unsigned bits) {
    uintptr_t *slots = bx_os_map(((size_t)1 << bits) * sizeof(uintptr_t));
    if (!slots) return false;
    size_t old = capacity(s);
    for (size_t i = 0; i < old; i++)
        if (s->slots[i]) place(slots, bits, s->slots[i]);
    if (s->slots) bx_os_unmap(s->slots, old * sizeof(uintptr_t));
    s->slots = slots;
    s->bits = bits;
    return true;
}

/* The slot holding p, or SIZE_MAX. Called with the shard's lock held. */
static size_t slot_of(const shard_t *s, uintptr_t p, uint64_t h) {
    if (!s->count) return SIZE_MAX;
    size_t mask = capacity(s) - 1;
    for (size_t i = home_of(h, s->bits); s->slots[i]; i = (i + 1) & mask)
        if (key_of(s->slots[i]) == p) return i;
    return SIZE_MAX;
}

bool bx_registry_add(const void *p, unsigned meta) {
    uintptr_t key = (uintptr_t)p;
    uint64_t h = hash_of(key);
    shard_t *s = shard_of(h);
    bx_lock(&s->lock);
    /* Half full: twice the room. If that cannot be had, the table fills further, up to one
     * free slot (the end of every probe). */
    if ((s->count + 1) * 2 > capacity(s) && !resize(s, s->bits ? s->bits + 1 : MIN_BITS) &&
        s->count + 1 >= capacity(s)) {
        bx_unlock(&s->lock);
        return false;
    }
    place(s->slots, s->bits, key | (meta & BX_REGISTRY_META_MASK));
    s->count++;
    bx_unlock(&s->lock);
    return true;
}

int bx_registry_remove(const void *p) {
    uintptr_t key = (uintptr_t)p;
    uint64_t h = hash_of(key);
    shard_t *s = shard_of(h);
    bx_lock(&s->lock);
    size_t i = slot_of(s, key, h);
    if (i == SIZE_MAX) {
        bx_unlock(&s->lock);
        return -1;
    }
    int meta = (int)(s->slots[i] & BX_REGISTRY_META_MASK);
    /* Backward shift: each later entry of the run that may sit in the hole moves into it, so
     * that no probe meets an empty slot before its entry. */
    size_t mask = capacity(s) - 1;
    for (size_t j = (i + 1) & mask; s->slots[j]; j = (j + 1) & mask) {
        size_t home = home_of(hash_of(key_of(s->slots[j])), s->bits);
        /* The entry at j may move to i unless its home lies cyclically in (i, j]. */
        bool stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (!stays) {
            s->slots[i] = s->slots[j];
            i = j;
        }
    }
    s->slots[i] = 0;
    s->count--;
    if (s->bits > MIN_BITS && s->count * 8 < capacity(s)) resize(s, s->bits - 1); /* kept if refused */
    bx_unlock(&s->lock);
    return meta;
}

int bx_registry_find(const void *p) {
    uintptr_t key = (uintptr_t)p;
    uint64_t h = hash_of(key);
    shard_t *s = shard_of(h);
    bx_lock(&s->lock);
    size_t i = slot_of(s, key, h);
    int meta = i == SIZE_MAX ? -1 : (int)(s->slots[i] & BX_REGISTRY_META_MASK);
    bx_unlock(&s->lock);
    return meta;
}

void bx_registry_each(void (*fn)(void *p, unsigned meta, void *arg), void *arg) {
    for (unsigned k = 0; k < SHARDS; k++) {
        shard_t *s = &shards[k];
        bx_lock(&s->lock);
        size_t cap = s->count ? capacity(s) : 0;
        for (size_t i = 0; i < cap; i++)
            if (s->slots[i]) fn((void *)key_of(s->slots[i]), (unsigned)(s->slots[i] & BX_REGISTRY_META_MASK), arg);
        bx_unlock(&s->lock);
    }
}

size_t bx_registry_count(void) {
    size_t n = 0;
    for (unsigned k = 0; k < SHARDS; k++) n += __atomic_load_n(&shards[k].count, __ATOMIC_RELAXED);
    return n;
}

void bx_registry_fork_prepare(void) {
    for (unsigned k = 0; k < SHARDS; k++) bx_lock(&shards[k].lock);
}

void bx_registry_fork_release(void) {
    for (unsigned k = SHARDS; k-- > 0;) bx_unlock(&shards[k].lock);
}
