/* init.h - start-up: on the first call of any entry point (or at load), once. Nothing in it
 * allocates. Layers above the front end (the C++ glue) add steps of their own with
 * BX_INIT_STEP: registered at link time, so they run even when malloc's first call comes
 * before any constructor. */
#ifndef BX_INIT_H
#define BX_INIT_H

#include <stdatomic.h>

#include "base/common.h"

enum { BX_INIT_NONE, BX_INIT_RUNNING, BX_INIT_DONE };
extern atomic_int bx_init_state __attribute__((visibility("hidden")));
void bx_init_slow(void);
static inline void bx_ensure_init(void) {
    if (BX_UNLIKELY(atomic_load_explicit(&bx_init_state, memory_order_acquire) != BX_INIT_DONE)) bx_init_slow();
}

/* fn runs at start-up after the settings are read and before the allocator is published. */
typedef void bx_init_step_fn(void);
#define BX_INIT_STEP(fn) \
    static bx_init_step_fn *bx_init_step_##fn __attribute__((used, section("bx_init_steps"))) = fn;

#endif
