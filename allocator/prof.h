/* prof.h - the sampling heap profiler (BOBOX_PROF, docs/profiling.md).
 *
 * Off, it costs nothing: malloc's fast path is the same code. On, the thread's bin table
 * stays at the stand-in (thread.c), so every malloc reaches bx_malloc_slow, which takes
 * bx_prof_malloc first: one counter decrement and the thread's real bin. About one
 * allocation per BOBOX_PROF_RATE bytes (exponential intervals) is sampled: its stack is
 * recorded and it is served as a large object, so that its free reaches the general path
 * (bx_free_resolved), where bx_prof_forget drops it from the live set. */
#ifndef BX_PROF_H
#define BX_PROF_H

#include "thread.h"

extern bool bx_prof_on;

/* After the settings are read, before the allocator is published: the tables, the
 * unwinder's warm-up. Allocates nothing through us. */
void bx_prof_init(void);
/* Once the allocator works: fork handlers and the dump signal. */
void bx_prof_start(void);
extern BX_TLS int64_t bx_prof_left; /* bytes until this thread's next sample */
extern BX_TLS bool bx_prof_busy;    /* inside the profiler: its own mallocs are not sampled */
/* Samples this allocation (it is due); NULL lets bx_malloc_slow carry on as usual. */
void *bx_prof_sample(size_t size);
/* malloc's path while profiling: inline, so that an unsampled malloc costs the failed fast
 * path, one call, one decrement and the bin's pop. NULL lets bx_malloc_slow carry on. */
static inline void *bx_prof_malloc(size_t size) {
    if (BX_UNLIKELY((bx_prof_left -= (int64_t)size) <= 0) && !bx_prof_busy) return bx_prof_sample(size);
    bx_heap_t *h = bx_tls_fast;
    if (BX_LIKELY(h != NULL) && size <= BX_SMALL_MAX)
        return bx_bin_alloc(__atomic_load_n(&h->bin_for[(size + 15) >> 4], __ATOMIC_RELAXED));
    return NULL;
}
/* A large object is freed or moved: forget it if it was sampled. */
void bx_prof_forget(const void *p);

struct bx_prof_state {
    size_t samples, live_samples, live_sampled_bytes, dropped, dumps, stacks;
    size_t rate;
};
void bx_prof_state(struct bx_prof_state *out);

#endif
