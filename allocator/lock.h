/* lock.h - test-and-test-and-set spinlock with pause (seed 001), yielding when spinning long
 * so that more threads than cores do not burn the holder's time slice. */
#ifndef BX_LOCK_H
#define BX_LOCK_H

#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>

typedef struct {
    atomic_int held;
} bx_lock_t;
#define BX_LOCK_INIT \
    { 0 }

static inline void bx_cpu_pause(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static inline bool bx_trylock(bx_lock_t *l) {
    return !atomic_load_explicit(&l->held, memory_order_relaxed) &&
           !atomic_exchange_explicit(&l->held, 1, memory_order_acquire);
}

static inline void bx_lock(bx_lock_t *l) {
    while (!bx_trylock(l)) {
        for (int spins = 0; atomic_load_explicit(&l->held, memory_order_relaxed); spins++) {
            if (spins < 100)
                bx_cpu_pause();
            else
                sched_yield();
        }
    }
}

static inline void bx_unlock(bx_lock_t *l) { atomic_store_explicit(&l->held, 0, memory_order_release); }

/* After fork() only the forking thread exists: whatever it did not hold is free. */
static inline void bx_lock_reset(bx_lock_t *l) { atomic_store_explicit(&l->held, 0, memory_order_relaxed); }

#endif
