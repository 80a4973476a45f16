/* stats.h - counters behind BOBOX_STATS, malloc_stats and mallinfo. */
#ifndef BX_STATS_H
#define BX_STATS_H

#include "bobox.h"

void bx_stats_collect(struct bobox_stats *out);
/* Keeps a copy of stderr for the exit report (BOBOX_STATS). */
void bx_stats_init(void);

#endif
