/* prof.h - the sampling heap profiler (BOBOX_PROF, docs/profiling.md).
 *
 * Every malloc subtracts its size from the thread's countdown (bx_tls_alloc.sample_left,
 * thread.h), on or off: one instruction of the fast path. Below zero, bx_malloc_slow calls
 * bx_prof_due. Off, the countdown starts at INT64_MAX and is only ever reset. On, about one
 * allocation per BOBOX_PROF_RATE bytes (exponential intervals) is sampled: its stack is
 * recorded and it is served as a large object, so that its free reaches the general path
 * (bx_free_resolved), whose large-object hook (bx_core_set_large_free_hook) is
 * bx_prof_forget: it drops the object from the live set. Aligned allocations are neither
 * counted nor sampled. */
#ifndef BX_PROF_H
#define BX_PROF_H

#include "core/core.h"

extern bool bx_prof_on;

/* After the settings are read, before the allocator is published: the tables, the
 * unwinder's warm-up. Allocates nothing through us. */
void bx_prof_init(void);
/* Once the allocator works: fork handlers and the dump signal. */
void bx_prof_start(void);
extern BX_TLS bool bx_prof_busy; /* inside the profiler: its own mallocs are not sampled */
/* The countdown went below zero with this allocation: samples it while profiling (NULL: not
 * sampled, bx_malloc_slow carries on as usual) and starts the next countdown. */
void *bx_prof_due(size_t size);
/* A large object is freed or moved: forget it if it was sampled (and free what its bin held
 * aside for it). */
void bx_prof_forget(const void *p);

struct bx_prof_state {
    size_t samples, live_samples, live_sampled_bytes, dropped, dumps, stacks;
    size_t rate;
};
void bx_prof_state(struct bx_prof_state *out);

#endif
