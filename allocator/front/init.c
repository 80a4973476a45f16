/* init.c - start-up (init.h): every layer's set-up, in the order the layers stack. */
#define _GNU_SOURCE
#include "front/init.h"
#include "front/copies.h"

#include <pthread.h>
#include <sched.h>

#include "heap/retention.h"
#include "base/secret.h"
#include "mem/arena.h"
#include "mem/node.h"
#include "os/options.h"
#include "thread/reclaimer.h"
#include "thread/thread.h"
#include "tools/checked.h"
#include "tools/live.h"
#include "tools/prof.h"
#include "tools/stats.h"

atomic_int bx_init_state;

/* The steps registered from above (BX_INIT_STEP): the linker collects them in one section. */
extern bx_init_step_fn *__start_bx_init_steps[] __attribute__((weak, visibility("hidden")));
extern bx_init_step_fn *__stop_bx_init_steps[] __attribute__((weak, visibility("hidden")));

void bx_init_slow(void) {
    int expected = BX_INIT_NONE;
    if (atomic_compare_exchange_strong(&bx_init_state, &expected, BX_INIT_RUNNING)) {
        bx_options_init();
        bx_stats_init();
        bx_secrets_init();
        bx_node_init();
        bx_arena_init();
        bx_retention_init();
        bx_thread_global_init();
        bx_reclaimer_init();
        bx_live_init();
        bx_prof_init();
        for (bx_init_step_fn **step = __start_bx_init_steps; step < __stop_bx_init_steps; step++) (*step)();
        atomic_store(&bx_init_state, BX_INIT_DONE);
        /* What may allocate, once the allocator works. */
        bx_thread_register_fork_handlers();
        pthread_atfork(NULL, NULL, bx_reclaimer_after_fork);
        if (bx_options.check) bx_checked_start();
        bx_copies_start(bx_options.check || bx_options.copies);
        bx_prof_start();
        if (bx_options.verbose) bx_options_report();
        return;
    }
    while (atomic_load(&bx_init_state) != BX_INIT_DONE) sched_yield();
}

/* Most programs malloc long before this runs; the rest still get their settings checked. */
__attribute__((constructor)) static void init_at_load(void) { bx_ensure_init(); }
