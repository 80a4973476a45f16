/* common.h - constants and helpers shared by every part of the allocator. */
#ifndef BX_COMMON_H
#define BX_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#define BX_LIKELY(x) __builtin_expect(!!(x), 1)
#define BX_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define BX_NOINLINE __attribute__((noinline))
/* Ends an inline fast path in fn(arg), a noreturn report that realigns the stack itself
 * (force_align_arg_pointer), by a jump: a call, even one that never returns, costs the fast
 * path a stack frame. */
#if defined(__x86_64__)
#define BX_JUMP_TO_REPORT(fn, arg)                      \
    do {                                                \
        __asm__ volatile("jmp " #fn : : "D"(arg));      \
        __builtin_unreachable();                        \
    } while (0)
#else
#define BX_JUMP_TO_REPORT(fn, arg) fn(arg)
#endif
#define BX_API __attribute__((visibility("default")))
/* malloc and free start on a cache line: the same code 0x30 bytes further on ran a tight
 * free loop 10-15% slower, so where the linker happened to put them moved benchmarks. */
#define BX_HOT __attribute__((aligned(64)))
#define BX_TLS __thread __attribute__((tls_model("initial-exec")))
#ifdef __cplusplus
#define BX_STATIC_ASSERT static_assert
#else
#define BX_STATIC_ASSERT _Static_assert
#endif

#define BX_KB ((size_t)1024)
#define BX_MB (1024 * BX_KB)

/* Small objects live in 64 KB blocks aligned to 64 KB (DESIGN §3). */
#define BX_BLOCK_SHIFT 16
#define BX_BLOCK_SIZE ((size_t)1 << BX_BLOCK_SHIFT)
#define BX_BLOCK_MASK (BX_BLOCK_SIZE - 1)
/* Largest small object: four fit in a block (scripts/gen/gen-sizeclass.py makes the tables for it). */
#define BX_SMALL_MAX ((size_t)16352)
#define BX_MIN_OBJECT 16
#define BX_ALIGNMENT 16

/* Medium objects are blocks of 10 MB superblocks; 510 KB does not divide 10 MB (DESIGN §2). */
#define BX_SUPERBLOCK_SIZE (10 * BX_MB)
/* Superblocks start at multiples of this, so that a block's descriptor, in its superblock's
 * first 64 KB, is found from any address in the block by arithmetic (block.h). */
#define BX_SUPERBLOCK_ALIGN (16 * BX_MB)
#define BX_BLOCK_DESC 128          /* bytes per block descriptor: two cache lines (block.h) */
#define BX_SB_DESCS_OFFSET 1024    /* where a superblock's descriptors start, past its header */
#define BX_MEDIUM_GRAIN 512
#define BX_MEDIUM_MAX (510 * BX_KB)

/* What owns a 64 KB chunk of address space (the pagemap's tags, in the low bits of a
 * header address). Only SMALL has bit 0 set: free's fast path tests one bit. */
enum bx_span_tag {
    BX_TAG_SMALL = 1,  /* superblock cut into 64 KB small-object blocks */
    BX_TAG_MEDIUM = 2, /* superblock cut into medium objects */
    BX_TAG_LARGE = 4,  /* one large mmap'ed object; only the chunk of its pointer is registered */
};
#define BX_TAG_MASK ((uintptr_t)7)

static inline size_t bx_align_up(size_t n, size_t a) { return (n + a - 1) & ~(a - 1); }
static inline uintptr_t bx_align_down_ptr(uintptr_t p, size_t a) { return p & ~(uintptr_t)(a - 1); }
static inline bool bx_is_pow2(size_t n) { return n && !(n & (n - 1)); }

#include "base/diag.h"

#endif
