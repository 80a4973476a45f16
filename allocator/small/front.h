/* front.h - the front cache: per bin, the objects its thread freed last, which malloc hands
 * out first (docs/design.md, "A front cache in front of the chain stack").
 *
 * A free of the thread's own object pushes it here and a malloc pops it, with no decision
 * that depends on the order of frees: the chain stack behind it (chainstack.h) decided, on
 * most operations of a program that frees in random order, between the top chain and a new
 * one, and mispredicted. A free that finds the array full goes to its block through the
 * chain stack, which still decides which blocks drain and how many a thread pins; a batch of
 * such frees empties the array into the blocks and turns it off for a while (bin.h).
 *
 * The array lives in the bin, outside every object: a write after free cannot reach it.
 * Its objects stay counted as used by their blocks and read as free to every check
 * (classify.h): their key word is the block's free key and their link word the mangled null
 * link, which malloc compares before handing the object out again. */
#ifndef BX_FRONT_H
#define BX_FRONT_H

#include "mem/block.h"

#define BX_FRONT_SLOTS 32

typedef struct bx_front {
    /* Objects held (slot[0] the oldest, slot[n - 1] the newest). A word of its own, read and
     * written whole: a malloc's pop is one load and one store of it, its borrow the empty
     * test. Sharing it with the count of frees made the pop read it twice (fifo 4 KB: 1.10x
     * the time, one more store-to-load hop between a free and the next malloc). */
    uint64_t n;
    uint64_t pushes; /* frees it took since its bin was formatted */
    uint64_t cap;    /* objects held at most: the bin's front_max, or 0 while off and in the stand-in bin */
    void *slot[BX_FRONT_SLOTS];
} bx_front_t;

/* Objects held. */
static inline uint32_t bx_front_n(const bx_front_t *f) { return (uint32_t)f->n; }
/* Frees it took, since its bin was formatted. */
static inline uint64_t bx_front_pushes(const bx_front_t *f) { return f->pushes; }
/* Sets the objects held (a carve, an emptying), leaving the count of frees alone. */
static inline void bx_front_set_n(bx_front_t *f, uint32_t n) { f->n = n; }

/* At most one block's worth of bytes per bin, from 2 to BX_FRONT_SLOTS objects: a thread
 * that stops allocating a size pins little until its next tick empties the array. */
static inline uint32_t bx_front_capacity(uint32_t size) {
    uint32_t n = (uint32_t)(BX_BLOCK_SIZE / size);
    return n > BX_FRONT_SLOTS ? BX_FRONT_SLOTS : n < 2 ? 2 : n;
}

/* A cached object whose link word changed: aborts naming it. */
__attribute__((noreturn, cold)) void bx_front_corrupt(const void *obj);
/* Reached by a jump (BX_JUMP_TO_REPORT): no stack frame on malloc's path. */
static inline __attribute__((always_inline, noreturn)) void bx_front_corrupt_jump(const void *obj) {
    BX_JUMP_TO_REPORT(bx_front_corrupt, obj);
}

/* Caches obj, a slot of a block whose free key is `key`, and counts the free; false when the
 * array is full. */
static inline bool bx_front_push(bx_front_t *f, void *obj, uintptr_t key) {
    uint64_t n = f->n;
    if (BX_UNLIKELY(n >= f->cap)) return false;
    bx_object_mark_free(obj, key);
    f->slot[n] = obj;
    f->n = n + 1;
    f->pushes++;
    return true;
}

/* The object freed last, or NULL if none; aborts if its link word was written since. */
static inline void *bx_front_pop(bx_front_t *f) {
    uint64_t n;
    /* The borrow of the decrement is the empty test: no copy of the count. */
    if (__builtin_sub_overflow(f->n, 1, &n)) return NULL;
    f->n = n;
    void *obj = f->slot[n];
    if (BX_UNLIKELY(*(const uintptr_t *)obj != bx_link_secret)) bx_front_corrupt_jump(obj);
    ((uintptr_t *)obj)[1] = 0;
    return obj;
}

/* Whether obj, in the array, still reads as its block's free cached object. */
static inline bool bx_front_object_ok(const void *obj, uintptr_t key) {
    return *(const uintptr_t *)obj == bx_link_secret && ((const uintptr_t *)obj)[1] == key;
}

#endif
