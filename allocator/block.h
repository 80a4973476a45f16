/* block.h - a 64 KB small-object block (DESIGN §3).
 *
 * Blocks start at multiples of 64 KB, so the header of an object's block is found by
 * masking the object's address: no per-object header. A block keeps a LIFO list of its
 * free objects plus a bump pointer to the first object never handed out, so a fresh
 * block needs no list built up front. */
#ifndef BX_BLOCK_H
#define BX_BLOCK_H

#include "secret.h"

struct bx_heap;
struct bx_bin;

/* Owner of a block that sits free in a cache: matches no thread's heap, so a stale
 * pointer into it leaves the fast path of free. */
#define BX_BLOCK_NO_OWNER ((struct bx_heap *)(uintptr_t)1)

/* Which of its bin's four lists a block is on (DESIGN §3). */
enum bx_block_list {
    BX_LIST_NONE = 0,     /* not owned by a bin: free in its superblock or in a block cache */
    BX_LIST_QUEUE,        /* referenced by chain records in the chain stack */
    BX_LIST_FULL,         /* no free object */
    BX_LIST_ALMOST_FULL,  /* at most half free */
    BX_LIST_ALMOST_EMPTY, /* more than half free */
    BX_LIST_COUNT
};

typedef struct bx_block {
    void *free;                  /* free objects, linked through their first word (mangled) */
    char *bump;                  /* first object never handed out */
    struct bx_heap *heap;        /* owner; other threads' frees go to its remote list */
    struct bx_bin *owner_bin;    /* the owner's bin of this size: one load on local frees */
    struct bx_block *prev, *next;/* links of the list named by `list` */
    uint32_t size;               /* object size */
    uint32_t div_magic;          /* (offset * div_magic) >> 32 == offset / size */
    uint16_t used;               /* objects handed out and not freed */
    uint16_t capacity;           /* objects that fit */
    uint16_t chain_refs;         /* chain records naming this block */
    uint8_t bin;
    uint8_t list;                /* enum bx_block_list */
} bx_block_t;

BX_STATIC_ASSERT(sizeof(bx_block_t) <= BX_BLOCK_HEADER, "block header must fit in BX_BLOCK_HEADER");

static inline bx_block_t *bx_block_of(const void *p) {
    return (bx_block_t *)((uintptr_t)p & ~(uintptr_t)BX_BLOCK_MASK);
}
static inline char *bx_block_first(bx_block_t *b) { return (char *)b + BX_BLOCK_HEADER; }
static inline char *bx_block_bump(const bx_block_t *b) { return __atomic_load_n(&b->bump, __ATOMIC_RELAXED); }
static inline uint32_t bx_block_free_count(const bx_block_t *b) { return (uint32_t)(b->capacity - b->used); }

/* Formats a fresh (or reused) 64 KB block for objects of `size` owned by `heap`. */
void bx_block_init(bx_block_t *b, struct bx_heap *heap, struct bx_bin *owner_bin, unsigned bin, uint32_t size);

/* Validation (bobox_check_heap, BOBOX_CHECK=1). The header's shape holds for any thread
 * while the block has live objects; the free list only for its owner. */
bool bx_block_check_header(const bx_block_t *b);
/* obj may be the next object handed out: a slot below the bump pointer, marked free. */
bool bx_block_check_free_object(const bx_block_t *b, const void *obj);
/* Header, every link of the free list, and the count of free objects. */
bool bx_block_check(const bx_block_t *b);

/* The start of the object slot containing p, or NULL if p is outside every slot. */
static inline char *bx_block_object(bx_block_t *b, const void *p) {
    if (BX_UNLIKELY((uintptr_t)p < (uintptr_t)bx_block_first(b))) return NULL;
    uint32_t off = (uint32_t)((const char *)p - bx_block_first(b));
    uint32_t index = (uint32_t)(((uint64_t)off * b->div_magic) >> 32);
    if (BX_UNLIKELY(index >= b->capacity)) return NULL;
    return bx_block_first(b) + index * b->size;
}

/* Marks free small objects in their second word (as glibc's tcache key does), so a double
 * free costs one compare to catch. Random per process; zero in a handed-out object. */
static inline bool bx_object_is_free(const void *obj) { return ((const uintptr_t *)obj)[1] == bx_free_key; }
static inline void bx_object_mark_free(void *obj) { ((uintptr_t *)obj)[1] = bx_free_key; }

/* An over-allocated aligned object hands out an address inside itself; its first two
 * words (before that address) record which, so free() can tell it from a stray pointer. */
static inline void bx_object_mark_aligned(void *obj, const void *handed_out) {
    ((uintptr_t *)obj)[0] = (uintptr_t)handed_out;
    ((uintptr_t *)obj)[1] = ~bx_free_key;
}
static inline bool bx_object_is_aligned(const void *obj) { return ((const uintptr_t *)obj)[1] == ~bx_free_key; }
static inline bool bx_object_handed_out(const void *obj, const void *p) {
    if (bx_object_is_aligned(obj)) return ((const uintptr_t *)obj)[0] == (uintptr_t)p;
    return obj == p;
}
/* Neither free nor the start of an over-allocated aligned object: one add and one compare
 * (the second word is the key for free objects and its complement for aligned ones). */
static inline bool bx_object_plain_live(const void *obj) {
    return (((const uintptr_t *)obj)[1] ^ bx_free_key) + 1 > 1;
}

/* The slot start for p, without range checks: only for comparing with p. A p below the
 * first slot or past the last one never equals the result within the block, or is at or
 * above the bump pointer. */
static inline char *bx_block_slot_fast(bx_block_t *b, const void *p) {
    uint32_t off = (uint32_t)((const char *)p - bx_block_first(b));
    return bx_block_first(b) + (uint32_t)(((uint64_t)off * b->div_magic) >> 32) * b->size;
}

/* Takes one free object; the caller knows one exists (a chain counts it). */
static inline void *bx_block_pop(bx_block_t *b) {
    void *obj = b->free;
    if (BX_LIKELY(obj != NULL)) {
        b->free = bx_link_get(obj);
    } else {
        /* Relaxed atomic: other threads' frees compare with it (it only grows while the
         * block holds live objects); a plain move on x86. */
        obj = b->bump;
        __atomic_store_n(&b->bump, b->bump + b->size, __ATOMIC_RELAXED);
    }
    ((uintptr_t *)obj)[1] = 0;
    b->used++;
    return obj;
}

static inline void bx_block_push(bx_block_t *b, void *obj) {
    bx_link_set(obj, b->free);
    bx_object_mark_free(obj);
    b->free = obj;
    b->used--;
}

#endif
