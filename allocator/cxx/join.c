/* join.c - pthread_join: a thread that waits long for another leaves its heap meanwhile.
 * Only in the shared library.
 *
 * A program's main thread often builds the data, starts workers and joins them. The workers
 * free its objects as they replace them: remote frees to a heap whose owner sleeps in the
 * join, which nobody drained, so every byte it had allocated stayed held while the workers
 * allocated as much again (`server`, 2 threads: 44 MB after 4 s, glibc 24). Left, the heap
 * is ownerless: the frees that pile up there are drained by their senders (thread.c) and its
 * emptied blocks go back. A short join (a thread already done, or done within
 * PARK_AFTER_MS) leaves nothing. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "base/common.h"
#include "thread/thread.h"

#define PARK_AFTER_MS 100

typedef int (*join_fn)(pthread_t, void **);

static join_fn real_join(void) {
    static _Atomic(join_fn) real;
    join_fn f = atomic_load_explicit(&real, memory_order_acquire);
    if (!f) {
        f = (join_fn)dlsym(RTLD_NEXT, "pthread_join");
        atomic_store_explicit(&real, f, memory_order_release);
    }
    return f;
}

static void unpark_on_cancel(void *heap) { bx_thread_unpark(heap); }

BX_API int pthread_join(pthread_t thread, void **retval) {
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_nsec += PARK_AFTER_MS * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    /* Every error of pthread_join (EDEADLK, EINVAL, ESRCH) comes back the same from here. */
    int rc = pthread_clockjoin_np(thread, retval, CLOCK_MONOTONIC, &until);
    if (rc != ETIMEDOUT) return rc;
    bx_heap_t *h = bx_thread_park();
    /* Cancelled in the join (a cancellation point), the thread takes its heap back before it
     * unwinds, and leaves it at its exit as any thread does. */
    pthread_cleanup_push(unpark_on_cancel, h);
    rc = real_join()(thread, retval);
    pthread_cleanup_pop(0);
    bx_thread_unpark(h);
    return rc;
}
