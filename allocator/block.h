/* block.h - a 64 KB small-object block (DESIGN §3).
 *
 * Blocks start at multiples of 64 KB, so the header of an object's block is found by
 * masking the object's address: no per-object header. A block keeps a LIFO list of its
 * free objects plus a bump pointer to the first object never handed out, so a fresh
 * block needs no list built up front. */
#ifndef BX_BLOCK_H
#define BX_BLOCK_H

#include "common.h"

struct bx_heap;

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

enum bx_block_flags {
    BX_BLOCK_HAS_ALIGNED = 1, /* holds over-allocated aligned objects: interior pointers round down */
};

typedef struct bx_block {
    void *free;                  /* free objects, linked through their first word */
    char *bump;                  /* first object never handed out */
    struct bx_heap *heap;        /* owner; other threads' frees go to its remote list */
    struct bx_block *prev, *next;/* links of the list named by `list` */
    uint32_t size;               /* object size */
    uint32_t div_magic;          /* (offset * div_magic) >> 32 == offset / size */
    uint16_t used;               /* objects handed out and not freed */
    uint16_t capacity;           /* objects that fit */
    uint16_t chain_refs;         /* chain records naming this block */
    uint8_t bin;
    uint8_t list;                /* enum bx_block_list */
    uint8_t flags;               /* enum bx_block_flags */
} bx_block_t;

BX_STATIC_ASSERT(sizeof(bx_block_t) <= BX_BLOCK_HEADER, "block header must fit in BX_BLOCK_HEADER");

static inline bx_block_t *bx_block_of(const void *p) {
    return (bx_block_t *)((uintptr_t)p & ~(uintptr_t)BX_BLOCK_MASK);
}
static inline char *bx_block_first(bx_block_t *b) { return (char *)b + BX_BLOCK_HEADER; }
static inline uint32_t bx_block_free_count(const bx_block_t *b) { return (uint32_t)(b->capacity - b->used); }

/* Formats a fresh (or reused) 64 KB block for objects of `size` owned by `heap`. */
void bx_block_init(bx_block_t *b, struct bx_heap *heap, unsigned bin, uint32_t size);

/* The object containing p, or NULL if p is not an object start (nor, in a block with
 * aligned objects, inside one). */
static inline void *bx_block_object(bx_block_t *b, const void *p) {
    uint32_t off = (uint32_t)((const char *)p - bx_block_first(b));
    if (BX_UNLIKELY((uintptr_t)p < (uintptr_t)bx_block_first(b))) return NULL;
    uint32_t index = (uint32_t)(((uint64_t)off * b->div_magic) >> 32);
    uint32_t start = index * b->size;
    if (BX_UNLIKELY(index >= b->capacity)) return NULL;
    if (BX_LIKELY(start == off)) return (void *)p;
    if (b->flags & BX_BLOCK_HAS_ALIGNED) return bx_block_first(b) + start;
    return NULL;
}

/* Takes one free object; the caller knows one exists (a chain counts it). */
static inline void *bx_block_pop(bx_block_t *b) {
    void *obj = b->free;
    if (BX_LIKELY(obj != NULL)) {
        b->free = *(void **)obj;
    } else {
        obj = b->bump;
        b->bump += b->size;
    }
    b->used++;
    return obj;
}

static inline void bx_block_push(bx_block_t *b, void *obj) {
    *(void **)obj = b->free;
    b->free = obj;
    b->used--;
}

#endif
