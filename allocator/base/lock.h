/* lock.h - test-and-test-and-set spinlock with pause (seed 001), yielding when spinning long
 * so that more threads than cores do not burn the holder's time slice. */
#ifndef BX_LOCK_H
#define BX_LOCK_H

#include <sched.h>
#include <stdbool.h>

/* A plain int with the compiler's atomic builtins: the header serves C++ tests too. */
typedef struct {
    int held;
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
    return !__atomic_load_n(&l->held, __ATOMIC_RELAXED) && !__atomic_exchange_n(&l->held, 1, __ATOMIC_ACQUIRE);
}

static inline void bx_lock(bx_lock_t *l) {
    while (!bx_trylock(l)) {
        for (int spins = 0; __atomic_load_n(&l->held, __ATOMIC_RELAXED); spins++) {
            if (spins < 100)
                bx_cpu_pause();
            else
                sched_yield();
        }
    }
}

static inline void bx_unlock(bx_lock_t *l) { __atomic_store_n(&l->held, 0, __ATOMIC_RELEASE); }

/* After fork() only the forking thread exists: whatever it did not hold is free. */
static inline void bx_lock_reset(bx_lock_t *l) { __atomic_store_n(&l->held, 0, __ATOMIC_RELAXED); }

#endif
