/* stackwalk.h - the calling thread's stack of return addresses, for the profiler's samples.
 *
 * libgcc's _Unwind_Backtrace finds and interprets each frame's call-frame information anew,
 * some thousand instructions a frame. Here each return address's rule (where the caller's
 * frame and return address are) is decoded once and kept in a table, so a sample costs a
 * lookup and two loads a frame. What the table cannot express (signal frames, stack
 * realignment, expressions) is left to libgcc (docs/profiling.md). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

/* Maps the rule table; false if it could not (bx_stackwalk then always asks libgcc). */
bool bx_stackwalk_init(void);

/* Up to `max` return addresses, innermost first from the caller's own, as _Unwind_Backtrace
 * reports them; those in [skip_lo, skip_hi) are left out until the first one that is not. */
int bx_stackwalk(uintptr_t *pcs, int max, uintptr_t skip_lo, uintptr_t skip_hi);

/* The same from libgcc alone (the reference the tests compare with). */
int bx_stackwalk_libgcc(uintptr_t *pcs, int max, uintptr_t skip_lo, uintptr_t skip_hi);
