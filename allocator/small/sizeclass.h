/* sizeclass.h - the bins (DESIGN §2): request size -> bin in O(1) by table lookup.
 *   small:  16 B steps growing by 1.07^i, up to BX_SMALL_MAX (objects of 64 KB blocks)
 *   medium: 512 B steps growing by 1.2^i, up to 510 KB (blocks of 10 MB superblocks)
 * The tables are constants (sizeclass_tables.h, made by scripts/gen/gen-sizeclass.py). */
#ifndef BX_SIZECLASS_H
#define BX_SIZECLASS_H

#include "base/common.h"

#define BX_SMALL_BINS 86
#define BX_MEDIUM_BINS 20
#define BX_SMALL_STEPS (BX_SMALL_MAX / 16 + 1)
#define BX_MEDIUM_STEPS (BX_MEDIUM_MAX / BX_MEDIUM_GRAIN + 1)

extern const uint32_t bx_small_size[BX_SMALL_BINS];
extern const uint32_t bx_medium_size[BX_MEDIUM_BINS];
/* The bin of each 16-byte step of small sizes (malloc's fast path reads a copy of it as
 * bin pointers, one table per thread heap: heap.h). */
extern const uint8_t bx_small_index[BX_SMALL_STEPS];
extern const uint8_t bx_medium_index[BX_MEDIUM_STEPS];

/* n at most BX_SMALL_MAX. */
static inline unsigned bx_small_bin(size_t n) { return bx_small_index[(n + 15) >> 4]; }
static inline unsigned bx_medium_bin(size_t n) { return bx_medium_index[(n + BX_MEDIUM_GRAIN - 1) / BX_MEDIUM_GRAIN]; }

#endif
