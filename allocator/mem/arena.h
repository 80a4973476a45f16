/* arena.h - one reservation of address space for the small superblocks, so that free's first
 * question, whether a pointer may lie in a small-object block, is a subtraction and a
 * compare, with no table (docs/design.md, "The small arena").
 *
 * The arena is up to 256 GB reserved at start-up, read-only, in slots 16 MB apart
 * (superblocks are aligned to that, block.h). A slot in use or cached holds a small
 * superblock, whose block descriptors say which chunks are formatted blocks and whose; every
 * other slot, never used or given back to the OS, reads as zeros: no owner. So free can read
 * the descriptor of any address inside before it knows the pointer is ours, and it names a
 * heap only for a formatted block. Medium superblocks never come from it (their objects cover
 * the descriptors' place). Not reserved under a finite RLIMIT_AS, or when the kernel refuses:
 * small superblocks are then mapped one by one, and free asks the pagemap, as it does for
 * superblocks past a full arena. A limit set later shrinks it to the slots used so far
 * (bx_arena_shrink). */
#ifndef BX_ARENA_H
#define BX_ARENA_H

#include "base/common.h"
#include "os/os.h"

#define BX_ARENA_MAX_SHIFT 38 /* at most 256 GB of address space: 160 GB of small superblocks */
#define BX_ARENA_MIN_SHIFT 32 /* smaller when refused (valgrind grants 32 GB) */
#define BX_ARENA_SLOTS (((uintptr_t)1 << BX_ARENA_MAX_SHIFT) / BX_SUPERBLOCK_ALIGN)

/* Set once, by bx_arena_init at start-up, before any pointer of ours exists: every thread
 * that frees one has synchronized with start-up since, so plain loads suffice (each folds
 * into the instruction that uses it). The base stays a non-canonical address, and the size
 * 0, without an arena. */
typedef struct {
    uintptr_t base, bytes; /* on one line */
} __attribute__((aligned(16))) bx_arena_range_t;
extern bx_arena_range_t bx_arena __attribute__((visibility("hidden")));

static inline bool bx_in_small_arena(const void *p) { return (uintptr_t)p - bx_arena.base < bx_arena.bytes; }
/* p's offset in the arena (below bx_arena.bytes when p lies in it): the base is a multiple of
 * BX_SUPERBLOCK_ALIGN, so the offset's low bits are p's, and bx_block_of_offset finds p's
 * descriptor from it with no copy of p (free: one instruction fewer). */
static inline uintptr_t bx_arena_offset(const void *p) { return (uintptr_t)p - bx_arena.base; }

/* Reserves the arena (start-up, before any pointer of ours exists); once. */
void bx_arena_init(void);
/* A committed slot for a small superblock (`place` applied first), or NULL if there is no
 * arena or it is full (the caller maps one elsewhere). */
void *bx_arena_take(bx_os_place_fn *place, void *arg);
/* Gives a slot's memory back to the OS and the slot back to the arena. */
void bx_arena_release(void *sb);
/* Under a finite RLIMIT_AS, gives back the slots never handed out, for good: a program that
 * lowers its own limit at run time keeps that address space, and its memory stays bounded
 * by it. Called by setrlimit, malloc_trim and out of memory; a slot never used is not handed
 * out under a limit either (bx_arena_take). */
void bx_arena_shrink(void);
/* Address space of slots given back to the OS and still reserved for reuse (jemalloc's
 * "retained"), and of slots never handed out (the reservation the limit sees, rlimit.c). */
size_t bx_arena_retained_bytes(void);
size_t bx_arena_unused_bytes(void);
/* fork: the arena's lock, taken last. */
void bx_arena_lock(void);
void bx_arena_unlock(void);
void bx_arena_reset_lock(void);
#ifdef BX_TESTING
bool bx_arena_contains(const void *p); /* bx_in_small_arena for C++ tests */
#endif

#endif
