/* secret.h - per-process secrets that keep heap metadata in free memory hard to forge.
 *
 * The free key, mixed per block format (bx_format_key), marks freed small objects (a double
 * free costs one compare to catch). The link secret mangles every free-list link stored
 * inside free memory (safe-linking, as glibc and mimalloc do): a link overwritten by a heap
 * overflow or a write after free decodes to a value no link has (its top bits set, or its
 * low 4 bits: the secret's are clear), which is checked before the link is followed (block.h,
 * blockcache.c, superblock.c, heap.c's drain). Both are fixed before the first allocation. */
#ifndef BX_SECRET_H
#define BX_SECRET_H

#include "base/common.h"

extern __attribute__((visibility("hidden"))) uintptr_t bx_free_key;
extern __attribute__((visibility("hidden"))) uintptr_t bx_link_secret;

/* Draws both secrets (getrandom; no malloc). */
void bx_secrets_init(void);

/* The free key of one format of a block or superblock: objects of `size` from `base`. A
 * record (free link and key) left in memory by another format never matches it, so bytes a
 * program copies out of memory it never wrote cannot make an object look freed. Distinct
 * for every pair when base is aligned above size; odd and above user space, as bx_free_key. */
uintptr_t bx_format_key(const void *base, uint32_t size);

/* One xor each way: x86 folds the secret's load into it. */
static inline void bx_link_set(void *at, const void *next) { *(uintptr_t *)at = (uintptr_t)next ^ bx_link_secret; }
static inline void *bx_link_get(const void *at) { return (void *)(*(const uintptr_t *)at ^ bx_link_secret); }

#endif
