/* clock.h - the allocator's clock, for decay delays. */
#ifndef BX_CLOCK_H
#define BX_CLOCK_H

#include "base/common.h"

/* A monotonic clock, coarse and cheap (the vDSO, no system call). The decay check on every
 * medium malloc compares nanoseconds: no division. An interposed clock_gettime (libfaketime)
 * may allocate on its first call: a read nested in another answers the last value read. */
uint64_t bx_now_ns(void);
static inline uint64_t bx_now_ms(void) { return bx_now_ns() / 1000000; }

#endif
