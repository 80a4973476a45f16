/* large.h - objects above the medium range: one mapping each (DESIGN §6).
 *
 * The header takes the first page, so the object is page aligned; the pagemap holds the
 * chunk of the object's address. Freed mappings wait in a bounded cache with decay, so a
 * loop that mallocs, fills and frees one large size does not page-fault each time
 * (thesis programs 7.1/7.2, DESIGN §1). */
#ifndef BX_LARGE_H
#define BX_LARGE_H

#include "base/common.h"

typedef struct bx_large {
    char *base;                     /* start of the mapping (this header) */
    size_t map_size;                /* bytes mapped */
    char *user;                     /* the object */
    size_t usable;                  /* bytes from user to the end of the mapping */
    struct bx_large *bnext, *bprev; /* the cache's list of its size */
    struct bx_large *anext, *aprev; /* the cache's list by age */
    uint64_t cached_since_ms;
    /* Mappings cut from one mapping that lie next to each other, below and above (NULL when
     * none does); a freed one merges with those in the cache. Changed under the cache's lock. */
    struct bx_large *left, *right;
    int node;
    bool cached; /* in the cache (not live, not in the samples' pool) */
    bool sample; /* a mapping of the samples' pool (bx_large_alloc_sample) */
} bx_large_t;

/* An object of at least `size` bytes aligned to `alignment`, or NULL (ENOMEM).
 * *fresh is set when the memory comes straight from the OS (already zero). */
void *bx_large_alloc(size_t size, size_t alignment, int node, bool *fresh);
/* A sampled object of the profiler (prof.c) of at most BX_MEDIUM_MAX bytes, or NULL (ENOMEM):
 * a mapping from a pool of the samples' own (samplepool.h), never handed to other requests. */
void *bx_large_alloc_sample(size_t size, int node);
/* Frees into the cache (straight back to the OS when it does not fit there). */
void bx_large_free(bx_large_t *large);
/* Resizes in place or by moving the mapping; NULL if it cannot (the old object stays). */
void *bx_large_realloc(bx_large_t *large, size_t size);
/* Returns cached mappings to the OS: those idle past the decay delay, or all. */
size_t bx_large_purge(bool all);
size_t bx_large_cached_bytes(void);
size_t bx_large_live_objects(void);
size_t bx_large_live_bytes(void);

void bx_large_lock(void);
void bx_large_unlock(void);
void bx_large_reset_lock(void);

#endif
