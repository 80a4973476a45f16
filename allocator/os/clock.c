/* clock.c - the coarse monotonic clock (clock.h). */
#define _GNU_SOURCE
#include "os/clock.h"

#include <time.h>

uint64_t bx_now_ns(void) {
    static BX_TLS volatile bool reading; /* volatile: the clock it guards cannot see it */
    static BX_TLS uint64_t last;
    if (BX_UNLIKELY(reading)) return last;
    reading = true;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    reading = false;
    return last = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
