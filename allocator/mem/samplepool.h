/* samplepool.h - the mappings of the profiler's sampled objects, waiting for the next sample
 * (large.h serves them: bx_large_alloc_sample).
 *
 * A sample of up to BX_MEDIUM_MAX bytes gets a mapping of a header page and a whole number of
 * 64 KB steps. Freed, the mapping waits in the list of its step, newest first: a sample takes
 * the first of its node, with no search. In the shared large cache, a sample looked at up to
 * 40 other mappings' headers (a page each) to find the closest size, and larger requests took
 * the sample mappings and grew them with mremap (realloc under the profiler: 957 mremap and
 * 578 mmap calls, against 111 and 166 without). The pool is bounded by the caller and goes
 * back to the OS whole once BOBOX_DECAY_MS pass without a put. */
#ifndef BX_SAMPLEPOOL_H
#define BX_SAMPLEPOOL_H

#include "mem/large.h"

#define BX_SAMPLE_STEPS (BX_MEDIUM_MAX / BX_BLOCK_SIZE + 1)

/* A pooled mapping of `steps` 64 KB steps and node `node`, or NULL. */
bx_large_t *bx_samplepool_take(size_t steps, int node);
/* Pools a freed sample mapping; false (the caller unmaps it) if the pool would pass `limit`
 * bytes. */
bool bx_samplepool_put(bx_large_t *l, size_t limit);
/* Unlinks the whole pool (all), or the pool if it sat idle past the decay delay, into a list
 * through `anext` for the caller to unmap. */
bx_large_t *bx_samplepool_collect(bool all);
size_t bx_samplepool_bytes(void);

/* Fork: taken after the large cache's lock (thread.h's lock order). */
void bx_samplepool_lock(void);
void bx_samplepool_unlock(void);
void bx_samplepool_reset_lock(void);

#endif
