/* stats.h - counters behind BOBOX_STATS, malloc_stats and mallinfo. */
#ifndef BX_STATS_H
#define BX_STATS_H

#include "bobox.h"

void bx_stats_collect(struct bobox_stats *out);
/* The CPUs' shared heaps made so far (threads not yet busy allocate there): reported beside
 * struct bobox_stats, whose layout is the ABI's. */
size_t bx_stats_shared_heaps(void);
/* Keeps a copy of stderr for the exit report (BOBOX_STATS). */
void bx_stats_init(void);

#endif
