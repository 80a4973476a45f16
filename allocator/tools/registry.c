/* registry.c - checked mode's set of live objects (registry.h). */
#include "tools/registry.h"

#include "base/lock.h"
#include "os/os.h"

#define SHARD_BITS 6
#define SHARDS (1u << SHARD_BITS)
#define CHUNK_SHIFT 16                  /* a bitmap covers 64 KB of address space */
#define SLOTS (1u << (CHUNK_SHIFT - 4)) /* one bit per 16 bytes: 4096 */
#define WORDS (SLOTS / 64)              /* 64 words: 512 bytes */
#define META_PLANES 4                   /* one bitmap per bit of meta */
#define MIN_BITS 6                      /* 64 records to start with */
#define PIECE_BYTES (WORDS * sizeof(uint64_t))
#define SLAB_BYTES ((size_t)64 << 10)

/* One 64 KB chunk of address space holding live objects: a bit per 16 bytes, and the
 * meta's bit planes once any object of the chunk has meta. */
typedef struct {
    uintptr_t chunk; /* address >> CHUNK_SHIFT, plus 1: 0 is an empty record */
    size_t count;    /* bits set in live */
    uint64_t *live;  /* WORDS words */
    uint64_t *meta;  /* META_PLANES * WORDS words, or NULL: every object's meta is 0 */
} record_t;

typedef struct {
    bx_lock_t lock;
    unsigned bits;  /* the table has 1 << bits records; 0: none yet */
    size_t records; /* records in use */
    size_t entries; /* live objects */
    record_t *table;
    uint64_t *free_live, *free_meta; /* zeroed pieces, linked through their first word */
    char *slab, *slab_end;           /* the rest of the last slab */
} __attribute__((aligned(64))) shard_t;

static shard_t shards[SHARDS];

static uint64_t hash_of(uintptr_t chunk) { return (uint64_t)chunk * 0x9E3779B97F4A7C15ull; }
/* The top bits pick the shard, the bits below them the home record. */
static shard_t *shard_of(uintptr_t chunk) { return &shards[hash_of(chunk) >> (64 - SHARD_BITS)]; }
static size_t home_of(uintptr_t chunk, unsigned bits) {
    return (size_t)((hash_of(chunk) << SHARD_BITS) >> (64 - bits));
}
static size_t capacity(const shard_t *s) { return s->bits ? (size_t)1 << s->bits : 0; }

/* ---- pieces: zeroed bitmaps from slabs of the shard's own ------------------------------ */

/* `bytes` of zeroed memory, or NULL. Called with the shard's lock held. */
static uint64_t *carve(shard_t *s, size_t bytes) {
    if ((size_t)(s->slab_end - s->slab) < bytes) {
        char *slab = bx_os_map(SLAB_BYTES);
        if (!slab) return NULL;
        s->slab = slab; /* the rest of the old slab is dropped: at most a few KB per slab */
        s->slab_end = slab + SLAB_BYTES;
    }
    uint64_t *piece = (uint64_t *)s->slab;
    s->slab += bytes;
    return piece;
}
static uint64_t *take(shard_t *s, uint64_t **list, size_t bytes) {
    uint64_t *piece = *list;
    if (!piece) return carve(s, bytes);
    *list = (uint64_t *)piece[0];
    piece[0] = 0;
    return piece;
}
static void give(uint64_t **list, uint64_t *piece) {
    piece[0] = (uint64_t)*list;
    *list = piece;
}

/* ---- the table of records ---------------------------------------------------------------- */

static void place(record_t *table, unsigned bits, const record_t *r) {
    size_t mask = ((size_t)1 << bits) - 1, i = home_of(r->chunk, bits);
    while (table[i].chunk) i = (i + 1) & mask;
    table[i] = *r;
}

/* A table of 1 << bits records holding the shard's; false (the old one kept) if no memory. */
static bool resize(shard_t *s, unsigned bits) {
    size_t cap = (size_t)1 << bits;
    record_t *table = bx_os_map(bx_align_up(cap * sizeof(record_t), bx_os_page_size()));
    if (!table) return false;
    size_t old = capacity(s);
    for (size_t i = 0; i < old; i++)
        if (s->table[i].chunk) place(table, bits, &s->table[i]);
    if (s->table) bx_os_unmap(s->table, bx_align_up(old * sizeof(record_t), bx_os_page_size()));
    s->table = table;
    s->bits = bits;
    return true;
}

static record_t *find_record(const shard_t *s, uintptr_t chunk) {
    if (!s->records) return NULL;
    size_t mask = capacity(s) - 1;
    for (size_t i = home_of(chunk, s->bits); s->table[i].chunk; i = (i + 1) & mask)
        if (s->table[i].chunk == chunk) return &s->table[i];
    return NULL;
}

/* Empties record r (its pieces back to the free lists, zeroed) and closes the hole by
 * backward shift: each later record of the run that may sit in the hole moves into it. */
static void drop_record(shard_t *s, record_t *r) {
    give(&s->free_live, r->live);
    if (r->meta) give(&s->free_meta, r->meta);
    size_t mask = capacity(s) - 1, i = (size_t)(r - s->table);
    for (size_t j = (i + 1) & mask; s->table[j].chunk; j = (j + 1) & mask) {
        size_t home = home_of(s->table[j].chunk, s->bits);
        bool stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (!stays) {
            s->table[i] = s->table[j];
            i = j;
        }
    }
    s->table[i] = (record_t){0};
    s->records--;
}

/* ---- the set ----------------------------------------------------------------------------- */

static uintptr_t chunk_of(uintptr_t p) { return (p >> CHUNK_SHIFT) + 1; }
static unsigned slot_of(uintptr_t p) { return (unsigned)(p >> 4) & (SLOTS - 1); }
static bool has(const uint64_t *bits, unsigned slot) { return bits[slot / 64] >> (slot % 64) & 1; }

static unsigned meta_of(const record_t *r, unsigned slot) {
    unsigned meta = 0;
    if (r->meta)
        for (unsigned k = 0; k < META_PLANES; k++) meta |= (unsigned)has(r->meta + k * WORDS, slot) << k;
    return meta;
}

bool bx_registry_add(const void *p, unsigned meta) {
    uintptr_t chunk = chunk_of((uintptr_t)p);
    unsigned slot = slot_of((uintptr_t)p);
    shard_t *s = shard_of(chunk);
    bool done = false;
    bx_lock(&s->lock);
    record_t *r = find_record(s, chunk);
    if (!r) {
        /* Half full: twice the room; if that cannot be had, up to one free record. */
        if ((s->records + 1) * 2 > capacity(s) && !resize(s, s->bits ? s->bits + 1 : MIN_BITS) &&
            s->records + 1 >= capacity(s))
            goto out;
        record_t fresh = {chunk, 0, take(s, &s->free_live, PIECE_BYTES), NULL};
        if (!fresh.live) goto out;
        place(s->table, s->bits, &fresh);
        s->records++;
        r = find_record(s, chunk);
    }
    meta &= BX_REGISTRY_META_MASK;
    if (meta && !r->meta && !(r->meta = take(s, &s->free_meta, META_PLANES * PIECE_BYTES))) {
        if (!r->count) drop_record(s, r);
        goto out;
    }
    r->live[slot / 64] |= (uint64_t)1 << (slot % 64);
    for (unsigned k = 0; k < META_PLANES; k++)
        if (meta >> k & 1) r->meta[k * WORDS + slot / 64] |= (uint64_t)1 << (slot % 64);
    r->count++;
    s->entries++;
    done = true;
out:
    bx_unlock(&s->lock);
    return done;
}

int bx_registry_remove(const void *p) {
    if ((uintptr_t)p & 15) return -1; /* never added: its bit is another address's */
    uintptr_t chunk = chunk_of((uintptr_t)p);
    unsigned slot = slot_of((uintptr_t)p);
    shard_t *s = shard_of(chunk);
    bx_lock(&s->lock);
    record_t *r = find_record(s, chunk);
    int meta = -1;
    if (r && has(r->live, slot)) {
        meta = (int)meta_of(r, slot);
        uint64_t keep = ~((uint64_t)1 << (slot % 64));
        r->live[slot / 64] &= keep;
        if (r->meta)
            for (unsigned k = 0; k < META_PLANES; k++) r->meta[k * WORDS + slot / 64] &= keep;
        s->entries--;
        if (--r->count == 0) drop_record(s, r);
    }
    bx_unlock(&s->lock);
    return meta;
}

int bx_registry_find(const void *p) {
    if ((uintptr_t)p & 15) return -1;
    uintptr_t chunk = chunk_of((uintptr_t)p);
    unsigned slot = slot_of((uintptr_t)p);
    shard_t *s = shard_of(chunk);
    bx_lock(&s->lock);
    const record_t *r = find_record(s, chunk);
    int meta = r && has(r->live, slot) ? (int)meta_of(r, slot) : -1;
    bx_unlock(&s->lock);
    return meta;
}

void bx_registry_each(void (*fn)(void *p, unsigned meta, void *arg), void *arg) {
    for (unsigned k = 0; k < SHARDS; k++) {
        shard_t *s = &shards[k];
        bx_lock(&s->lock);
        size_t cap = s->records ? capacity(s) : 0;
        for (size_t i = 0; i < cap; i++) {
            const record_t *r = &s->table[i];
            if (!r->chunk) continue;
            uintptr_t base = (r->chunk - 1) << CHUNK_SHIFT;
            for (unsigned w = 0; w < WORDS; w++)
                for (uint64_t bits = r->live[w]; bits; bits &= bits - 1) {
                    unsigned slot = w * 64 + (unsigned)__builtin_ctzll(bits);
                    fn((void *)(base + ((uintptr_t)slot << 4)), meta_of(r, slot), arg);
                }
        }
        bx_unlock(&s->lock);
    }
}

size_t bx_registry_count(void) {
    size_t n = 0;
    for (unsigned k = 0; k < SHARDS; k++) n += __atomic_load_n(&shards[k].entries, __ATOMIC_RELAXED);
    return n;
}

void bx_registry_fork_prepare(void) {
    for (unsigned k = 0; k < SHARDS; k++) bx_lock(&shards[k].lock);
}

void bx_registry_fork_release(void) {
    for (unsigned k = SHARDS; k-- > 0;) bx_unlock(&shards[k].lock);
}
