/* block.h - a 64 KB small-object block (DESIGN §3).
 *
 * Blocks start at multiples of 64 KB and hold objects only. Each has a descriptor (the
 * thesis's block header) in the first 64 KB of its superblock, side by side with the other
 * blocks' descriptors, found from any address in the block by arithmetic (superblocks start
 * at multiples of BX_SUPERBLOCK_ALIGN): no per-object header, and no load before the
 * descriptor's. Headers at the start of each block sit 64 KB apart and all fall into the
 * same two sets of a cache indexed by the low 16 address bits, so a program touching a few
 * hundred blocks missed on nearly every header access. A block keeps a LIFO list of its
 * free objects plus a bump pointer to the first object never handed out, so a fresh block
 * needs no list built up front.
 *
 * The list is kept as offsets within the block: the descriptor holds the first free object's,
 * each free object the next one's, mangled (secret.h). An offset is all a 16-bit store of
 * the object's address writes, and a link that a write after free changed is caught when
 * malloc decodes it, with one test: the offset of a slot is below 64 KB and a multiple of
 * 16, and the secret's top bits turn anything written over the link into a value that is
 * not (bx_block_pop). A keep block (keep.h) holds objects of other blocks in an array. */
#ifndef BX_BLOCK_H
#define BX_BLOCK_H

#include "base/secret.h"

struct bx_heap;
struct bx_bin;
struct bx_remote;

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

/* The descriptor's two cache lines: what the owner writes on its fast paths, and what other
 * threads' frees read first (the owner) and then need (size, bin), written only when the
 * block is formatted. One line that the owner keeps writing has to travel back to every
 * core that frees into the block: in one line, `server` took 10% longer with two threads. */
typedef struct bx_block {
    /* Written by the owner on every malloc and free of the block. */
    uint16_t free;                /* offset of the first free object, BX_FREE_END if none;
                                  * BX_FREE_KEPT in a keep block (its objects are in `kept`) */
    uint32_t carved;              /* bytes of slots from the first one that were handed out at
                                  * least once: the rest were never used (a bump allocation);
                                  * the owner's alone (others test slot_limit) */
    uint32_t slot_limit;          /* (slots carved) x bx_block_slot_step: bx_block_is_slot;
                                  * carving writes it with each fresh slot (on the other
                                  * line: batches +4-14%) */
    uint16_t used;                /* objects handed out and not freed */
    uint16_t chain_refs;          /* chain records naming this block */
    uint8_t list;                 /* enum bx_block_list */
    uint16_t purged;              /* pages given back while every slot on them was free, one
                                  * bit per BX_PURGE_PAGE: the slots starting on them are off
                                  * the list until bx_block_unpurge (the owner's alone) */
    uint16_t purged_slots;        /* those slots: free, neither listed nor fresh */
    uint16_t purge_seen;          /* free count at the last bx_block_purge_pages */
    struct bx_block *prev, *next; /* links of the list named by `list` */
    union {
        void **kept;                     /* a keep block's objects, `carved` of them (keep.h) */
        struct bx_mixed *mixed_state;    /* a mixed block's bitmaps (mixed.h) */
    };
    char *mem;                    /* the block's 64 KB (malloc's pop adds the offset to it) */
    /* Written when the block is formatted. */
    struct bx_heap *heap __attribute__((aligned(64))); /* owner; other threads' frees go to
                                  * its remote list */
    struct bx_bin *owner_bin;                          /* the owner's bin of this size: one load on local frees */
    struct bx_remote *home;                            /* the owner's receiving end of remote frees (remote.h) */
    uintptr_t free_key;                                /* marks this format's free objects (bx_block_key) */
    uint32_t size;                                     /* object size */
    uint32_t div_magic;                                /* floor(2^32 / size) + 1: quotients and divisibility by size */
    uint16_t capacity;                                 /* objects that fit */
    uint8_t bin;
    uint8_t mixed;              /* a mixed block (mixed.h): set by its owner, read by any thread */
    uint32_t shared_slot_limit; /* a past slot_limit, published when a chain of the block
                                  * runs out: other threads test it first, so their frees
                                  * leave the owner's line alone */
} bx_block_t;

BX_STATIC_ASSERT(sizeof(bx_block_t) <= BX_BLOCK_DESC, "a block descriptor fits BX_BLOCK_DESC");
BX_STATIC_ASSERT(BX_SB_DESCS_OFFSET + BX_SUPERBLOCK_ALIGN / BX_BLOCK_SIZE * BX_BLOCK_DESC <= BX_BLOCK_SIZE,
                 "a superblock's descriptors fit its first 64 KB");
BX_STATIC_ASSERT(offsetof(bx_block_t, mem) < 64, "the fast paths' fields share the first line");

/* Values of `free` that are no slot's offset: the last 16 bytes of a block start no slot
 * (bx_block_capacity), and every offset below them is a slot's for 16-byte objects. */
#define BX_FREE_END 0xfff0 /* no free object listed: the next one is cut at the bump pointer */
#define BX_FREE_KEPT 0xfff1 /* a keep block: its objects are in `kept` */
#define BX_FREE_MIXED 0xfff2 /* a mixed block: its free space is in its bitmaps (mixed.h) */
/* Bits that no decoded link of a block's list has: offsets are below 64 KB, multiples of 16
 * (the end's included). */
#define BX_FREE_LINK_BAD (~(uintptr_t)0xfff0)
BX_STATIC_ASSERT(BX_BLOCK_SIZE == 1u << 16 && BX_ALIGNMENT == 16, "a link is an offset of a 16-byte slot");

/* The empty chain stack's block (chainstack.h): no free object, and no owner. */
extern bx_block_t bx_block_none __attribute__((visibility("hidden")));

/* The descriptor of the block holding p, an address in a small-object superblock: the
 * superblock's start, then the block's index in it. Addresses in the superblock's first
 * 64 KB (its header) map to descriptor 0, which is no block's (superblock.c). */
static inline bx_block_t *bx_block_of(const void *p) {
    uintptr_t a = (uintptr_t)p;
    uintptr_t index = (a & (BX_SUPERBLOCK_ALIGN - 1)) >> BX_BLOCK_SHIFT;
    return (bx_block_t *)((a & ~(uintptr_t)(BX_SUPERBLOCK_ALIGN - 1)) + BX_SB_DESCS_OFFSET + index * BX_BLOCK_DESC);
}
/* The same, given any `off` that equals p modulo BX_SUPERBLOCK_ALIGN (p's arena offset): the
 * block's index comes from off, which the caller no longer needs, and only the superblock's
 * start from p. */
static inline bx_block_t *bx_block_of_offset(const void *p, uintptr_t off) {
    uintptr_t index = (off & (BX_SUPERBLOCK_ALIGN - 1)) >> BX_BLOCK_SHIFT;
    return (bx_block_t *)(((uintptr_t)p & ~(uintptr_t)(BX_SUPERBLOCK_ALIGN - 1)) + BX_SB_DESCS_OFFSET + index * BX_BLOCK_DESC);
}
/* The start of the block holding p. */
static inline char *bx_block_mem_of(const void *p) { return (char *)((uintptr_t)p & ~(uintptr_t)BX_BLOCK_MASK); }
static inline char *bx_block_first(const bx_block_t *b) { return b->mem; }
/* Objects of `size` a block holds: all that fit, but none starting at BX_FREE_END. */
static inline uint32_t bx_block_capacity(uint32_t size) {
    uint32_t n = (uint32_t)(BX_BLOCK_SIZE / size);
    return (n - 1) * size == BX_FREE_END ? n - 1 : n;
}
/* Relaxed atomic: other threads' frees and checks read it (it only grows while the block
 * holds live objects); a plain move on x86. */
static inline uint32_t bx_block_slot_limit(const bx_block_t *b) {
    return __atomic_load_n(&b->slot_limit, __ATOMIC_RELAXED);
}
static inline uint32_t bx_block_shared_slot_limit(const bx_block_t *b) {
    return __atomic_load_n(&b->shared_slot_limit, __ATOMIC_RELAXED);
}
/* The owner, off its hot paths: one write of the read-mostly line per change. */
static inline void bx_block_share_slot_limit(bx_block_t *b) {
    if (b->shared_slot_limit != b->slot_limit) __atomic_store_n(&b->shared_slot_limit, b->slot_limit, __ATOMIC_RELAXED);
}
/* What slot_limit grows by per slot carved: div_magic x size - 2^32, from 1 to size. */
static inline uint32_t bx_block_slot_step(const bx_block_t *b) { return b->div_magic * b->size; }
/* The first slot never handed out (for the owner). */
static inline char *bx_block_bump(const bx_block_t *b) { return b->mem + b->carved; }
static inline uint32_t bx_block_free_count(const bx_block_t *b) { return (uint32_t)(b->capacity - b->used); }
/* At least 3/4 free: a block of an idle size this sparse may mix (heap.c, mixed.h). */
static inline bool bx_block_sparse(const bx_block_t *b) { return 4 * bx_block_free_count(b) >= 3u * b->capacity; }

/* Formats descriptor b for its fresh (or reused) 64 KB block at mem, for objects of `size`
 * owned by `heap`. */
void bx_block_init(bx_block_t *b, void *mem, struct bx_heap *heap, struct bx_remote *home, struct bx_bin *owner_bin,
                   unsigned bin, uint32_t size);

/* A block's memory is given back a page at a time, in pages of this size (the smallest a
 * kernel maps: with larger pages nothing is given back before the block empties). */
#define BX_PURGE_PAGE 4096u
#define BX_PURGE_PAGES (BX_BLOCK_SIZE / BX_PURGE_PAGE)
BX_STATIC_ASSERT(BX_PURGE_PAGES <= 16, "a block's purged pages fit `purged`");
/* For the owner of a block that no chain counts: gives back every page whose slots are all
 * free, takes the slots starting on them off the list (a zeroed page holds no link) and
 * returns the bytes given back. Walks the list only when the free count changed since the
 * last call. Aborts like malloc on a list a write after free changed. */
size_t bx_block_purge_pages(bx_block_t *b);
/* Gives the pages set in `pages` (bit i: the block's i-th BX_PURGE_PAGE) back to the OS, one
 * call per run; the bytes. */
size_t bx_block_give_pages(const bx_block_t *b, uint16_t pages);
/* For the owner: sets in map (zeroed, a bit per slot index) the slots on b's free list,
 * following it as malloc would (aborts naming the object whose link a write after free
 * changed). */
#define BX_BLOCK_MAP_WORDS (BX_BLOCK_SIZE / BX_ALIGNMENT / 64)
void bx_block_map_list(const bx_block_t *b, uint64_t *map);
/* Before a chain counts all of b's free objects: puts the purged pages' slots back on the
 * list (touching those pages again). One of them marked free was freed a second time after
 * its page went: aborts with a double free. */
void bx_block_unpurge(bx_block_t *b);

/* Validation (bobox_check_heap, BOBOX_CHECK=1). The header's shape holds for any thread
 * while the block has live objects; the free list only for its owner. */
bool bx_block_check_header(const bx_block_t *b);
/* obj may be the next object handed out: a slot below the bump pointer, marked free. */
bool bx_block_check_free_object(const bx_block_t *b, const void *obj);
/* Header, every link of the free list, and the count of free objects. */
bool bx_block_check(const bx_block_t *b);
/* For the owner: the first free object of b's list and its link, as the next malloc would
 * follow them; aborts naming `op` when a write after free changed them. */
void bx_block_check_head(const bx_block_t *b, const char *op);

/* p's offset from the first slot, its block's start. */
static inline uint32_t bx_block_offset(const void *p) { return (uint16_t)(uintptr_t)p; }

/* The start of the object slot containing p, or NULL if p is outside every slot. */
static inline char *bx_block_object(bx_block_t *b, const void *p) {
    uint32_t off = bx_block_offset(p);
    /* Exact for offsets below 64 KB: the rounding error of div_magic stays under 1/size. */
    uint32_t index = (uint32_t)(((uint64_t)off * b->div_magic) >> 32);
    if (BX_UNLIKELY(index >= b->capacity)) return NULL;
    return bx_block_mem_of(p) + index * b->size;
}

/* Whether p is the start of a slot handed out at least once, with one multiply and one
 * compare. For an offset o below 2^16 and sizes below 2^14, o x div_magic mod 2^32 is at
 * least div_magic unless size divides o (Lemire, Kaser and Kurz, "Faster remainder by
 * direct computation"), and is (o / size) x slot_step when it does. slot_limit, the slots
 * carved times slot_step, stays below div_magic: the product is below it exactly for the
 * carved slots. Checked for every size and offset by test_block.cpp. Any thread: the
 * published bound first, which holds for the slots of all but a block's last chain. */
BX_STATIC_ASSERT(BX_SMALL_MAX < (1u << 14) && BX_BLOCK_SIZE <= (1u << 16), "bx_block_is_slot's bounds");
static inline bool bx_block_is_slot(const bx_block_t *b, const void *p) {
    uint32_t product = bx_block_offset(p) * b->div_magic;
    return product < bx_block_shared_slot_limit(b) || product < bx_block_slot_limit(b);
}
/* The same for the owner, the only writer of slot_limit: a plain read, folded into the compare. */
static inline bool bx_block_is_own_slot(const bx_block_t *b, const void *p) {
    return bx_block_offset(p) * b->div_magic < b->slot_limit;
}

/* A small object's second word is its block's free key when it is free or the start of an
 * over-allocated aligned object, and anything else when it is a plain live object: free's
 * fast path tells them apart with one compare. The first word then says which: a free
 * object's is a mangled link (top bit set, secret.h), an aligned object's is the address it
 * handed out (a user-space pointer, top bit clear). Medium objects use their superblock's. */
static inline bool bx_object_keyed(const void *obj, uintptr_t key) { return ((const uintptr_t *)obj)[1] == key; }
static inline bool bx_object_is_free(const void *obj, uintptr_t key) {
    return bx_object_keyed(obj, key) && (intptr_t)((const uintptr_t *)obj)[0] < 0;
}
/* Free but on no block's list yet (on its way to its owner): a mangled null link. */
static inline void bx_object_mark_free(void *obj, uintptr_t key) {
    bx_link_set(obj, NULL);
    ((uintptr_t *)obj)[1] = key;
}

/* An over-allocated aligned object hands out an address inside itself; its first two
 * words (before that address) record which, so free() can tell it from a stray pointer. */
static inline void bx_object_mark_aligned(void *obj, const void *handed_out, uintptr_t key) {
    ((uintptr_t *)obj)[0] = (uintptr_t)handed_out;
    ((uintptr_t *)obj)[1] = key;
}
static inline bool bx_object_is_aligned(const void *obj, uintptr_t key) {
    return bx_object_keyed(obj, key) && (intptr_t)((const uintptr_t *)obj)[0] >= 0;
}
static inline bool bx_object_handed_out(const void *obj, const void *p, uintptr_t key) {
    if (bx_object_is_aligned(obj, key)) return ((const uintptr_t *)obj)[0] == (uintptr_t)p;
    return obj == p;
}
/* Neither free nor the start of an over-allocated aligned object. */
static inline bool bx_object_plain_live(const void *obj, uintptr_t key) { return !bx_object_keyed(obj, key); }

/* The key of a block's free objects: the process's key mixed with the block's address and
 * object size, so that no record a past format left in the block's memory matches. Within
 * one format every record sits at a slot start, and malloc clears the key word of each
 * slot start it hands out; a record of another format (another size, or another block) that
 * a program copies out of bytes it never wrote no longer reads as a free object. */
static inline uintptr_t bx_block_key(const bx_block_t *b) { return b->free_key; }

/* The address at offset `off` of block memory `mem`. One lea on x86: the compiler's mov and
 * add cost malloc's fast path an instruction. */
static inline char *bx_block_at(const char *mem, uintptr_t off) {
#if defined(__x86_64__)
    char *at;
    __asm__("lea (%1,%2),%0" : "=r"(at) : "r"(mem), "r"(off));
    return at;
#else
    return (char *)mem + off;
#endif
}

/* A decoded link that no slot has (a write after free changed it), or a head that is no
 * offset or marker: aborts, naming the object whose link it was (the head, not yet taken). */
__attribute__((noreturn, cold)) void bx_block_corrupt(const bx_block_t *b);
/* A free object of ours at obj (a block's or a front cache's) was written after it was freed:
 * aborts naming `op`, obj and its block. */
__attribute__((noreturn, cold)) void bx_free_object_corrupt(const char *op, const void *obj);
/* The same, reached from bx_block_pop by a jump (BX_JUMP_TO_REPORT). */
static inline __attribute__((always_inline, noreturn)) void bx_block_corrupt_jump(const bx_block_t *b) {
    BX_JUMP_TO_REPORT(bx_block_corrupt, b);
}

/* What takes a block's next fresh slot instead of bx_block_pop's bump, and returns it
 * (handed out: its key word cleared, counted in `used`). */
typedef void *bx_block_fresh_fn(void *arg);

/* Takes one free object; the caller knows one exists (a chain counts it). The check of the
 * link costs one test: a wild link never becomes the head, and a head past the last slot (the
 * end, or a keep block) takes the slow branch. With `fresh`, a fresh slot is fresh(arg)'s to
 * take (a tail call; a constant at each call site, so the branch not taken is compiled out). */
static inline __attribute__((always_inline)) void *bx_block_pop_or(bx_block_t *b, bx_block_fresh_fn *fresh,
                                                                   void *arg) {
    uint32_t off = b->free;
    char *obj;
    if (BX_LIKELY(off < BX_FREE_END)) {
        obj = bx_block_at(b->mem, off);
        uintptr_t next = *(const uintptr_t *)obj ^ bx_link_secret;
        if (BX_UNLIKELY(next & BX_FREE_LINK_BAD)) bx_block_corrupt_jump(b);
        b->free = (uint16_t)next;
        /* The next malloc reads next's link: fetch its line now, while the program works
         * (perf: 3/4 of malloc's time in `pipeline` was that load missing). */
        __builtin_prefetch(b->mem + next);
    } else if (off == BX_FREE_END) {
        if (fresh) {
            obj = (char *)fresh(arg);
            if (!obj) __builtin_unreachable(); /* never NULL: the caller's test is compiled out */
            return obj;
        }
        obj = bx_block_bump(b);
        b->carved += b->size;
        __atomic_store_n(&b->slot_limit, b->slot_limit + bx_block_slot_step(b), __ATOMIC_RELAXED);
    } else if (BX_LIKELY(off == BX_FREE_KEPT)) {
        /* Counted by `carved`, not `used`: a read of used here, shared with the common tail,
         * turns its increment into a load, an add and a store. */
        obj = (char *)b->kept[--b->carved];
    } else {
        bx_block_corrupt_jump(b);
    }
    ((uintptr_t *)obj)[1] = 0;
    b->used++;
    return obj;
}
static inline void *bx_block_pop(bx_block_t *b) { return bx_block_pop_or(b, NULL, NULL); }

/* For b's owner, after freeing obj, now the head of b's list: moves it one place down, so
 * that the next allocation from b takes another slot (realloc: a stale pointer to the old
 * object does not alias the next object of its size). Chain records count a prefix of the
 * list, so order within it is free; when obj is the only one listed, a slot never used goes
 * first. False if b has no other free slot. */
bool bx_block_demote_head(bx_block_t *b, const void *obj);

/* Pushes obj, one of b's slots, marked free with b's key. */
static inline void bx_block_push(bx_block_t *b, void *obj) {
    uintptr_t key = bx_block_key(b); /* read before the link store, which could alias it */
    *(uintptr_t *)obj = b->free ^ bx_link_secret;
    ((uintptr_t *)obj)[1] = key;
    b->free = (uint16_t)(uintptr_t)obj; /* its offset: blocks are 64 KB aligned */
    b->used--;
}
/* Pushes obj, of block blk, onto keep block k, marked free with `key` (blk's). */
static inline void bx_block_push_keyed(bx_block_t *k, void *obj, uintptr_t key) {
    k->kept[k->carved++] = obj;
    bx_object_mark_free(obj, key);
    k->used--;
}

#endif
