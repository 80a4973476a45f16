/* sizeclass.h - the bins (DESIGN §2): request size -> bin in O(1) by table lookup.
 *   small:  16 B steps growing by 1.07^i, up to BX_SMALL_MAX (objects of 64 KB blocks)
 *   medium: 512 B steps growing by 1.07^i, up to 510 KB (blocks of 10 MB superblocks)
 * Each bin is at most 7% above the one below it (or one grain, where 7% is less). */
#ifndef BX_SIZECLASS_H
#define BX_SIZECLASS_H

#include "common.h"

#define BX_SMALL_BINS_MAX 96
#define BX_MEDIUM_BINS_MAX 96

extern unsigned bx_small_bins, bx_medium_bins;
extern uint32_t bx_small_size[BX_SMALL_BINS_MAX];
extern uint32_t bx_medium_size[BX_MEDIUM_BINS_MAX];
/* A thread's small bins lie this many bytes apart (bin.h). The table holds each 16-byte
 * step's bin as its offset from the first in 8-byte units: malloc finds its bin with one
 * load and one lea with a scale of 8. */
#define BX_SMALL_BIN_STRIDE 128
extern uint16_t bx_small_offset8[BX_SMALL_MAX / 16 + 1];
extern uint8_t bx_medium_index[BX_MEDIUM_MAX / BX_MEDIUM_GRAIN + 1];
BX_STATIC_ASSERT(BX_SMALL_BINS_MAX * BX_SMALL_BIN_STRIDE / 8 <= UINT16_MAX, "small bin offsets fit 16 bits");

/* Fills the tables; idempotent. */
void bx_sizeclass_init(void);

/* n at most BX_SMALL_MAX: its bin's offset / 8. */
static inline size_t bx_small_bin_offset8(size_t n) { return bx_small_offset8[(n + 15) >> 4]; }
static inline size_t bx_small_bin_offset(size_t n) { return bx_small_bin_offset8(n) * 8; }
static inline unsigned bx_small_bin(size_t n) { return (unsigned)(bx_small_bin_offset(n) / BX_SMALL_BIN_STRIDE); }
static inline unsigned bx_medium_bin(size_t n) {
    return bx_medium_index[(n + BX_MEDIUM_GRAIN - 1) / BX_MEDIUM_GRAIN];
}

#endif
