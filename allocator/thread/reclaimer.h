/* reclaimer.h - a thread of the allocator's own that gives back what the caches keep once the
 * process stops calling us (DESIGN §7, Adapt: caches of an idle process).
 *
 * Every other release point runs on a thread's own call (retention.h): a server idle after
 * a spike would keep its peak for ever. The reclaimer wakes four times per decay delay and
 * returns what sat idle: the node and large caches past the delay, and the block caches of
 * every heap that took no block from them since its previous pass (each under that cache's
 * lock, which its owner takes uncontended otherwise). It starts only once the process has
 * mapped BX_OS_BIG_BYTES or a thread's exit left pages (bx_reclaimer_pages_left): a small
 * program whose threads never end never gets one. It is not one of the
 * program's threads for the pinning shim, blocks every signal, starts again in a forked child
 * that needs it, and never keeps a process alive (detached: exit ends it). */
#ifndef BX_RECLAIMER_H
#define BX_RECLAIMER_H

#include "base/common.h"

void bx_reclaimer_init(void);
/* A thread's exit kept its heap's free pages for the next thread (heap/retention.h): the
 * reclaimer starts now, from the exiting thread, to give them back if none comes. */
void bx_reclaimer_pages_left(void);
/* Runs on the reclaimer's thread after each pass (the live statistics, tools/live.c); with
 * one registered, the reclaimer starts at the first tick, however small the process. */
void bx_reclaimer_set_pass_hook(void (*fn)(void));
/* In a fork child: the reclaimer did not come along. */
void bx_reclaimer_after_fork(void);
/* Whether the reclaimer runs (tests, statistics). */
bool bx_reclaimer_running(void);

#endif
