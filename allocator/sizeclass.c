/* sizeclass.c - builds the bin tables once, from the growth rules below. */
#include "sizeclass.h"

unsigned bx_small_bins, bx_medium_bins;
uint32_t bx_small_size[BX_SMALL_BINS_MAX];
uint32_t bx_medium_size[BX_MEDIUM_BINS_MAX];
uint8_t bx_small_index[BX_SMALL_STEPS];
uint8_t bx_medium_index[BX_MEDIUM_MAX / BX_MEDIUM_GRAIN + 1];

/* Small bins grow by 7% (the thesis). Medium bins grow by 20%, as jemalloc's and mimalloc's
 * do: every thread has a block allocator per medium bin, and fewer bins pool more objects
 * each, so a thread's medium memory peaks lower (README, design notes). */
#define SMALL_GROWTH_PERCENT 107
#define MEDIUM_GROWTH_PERCENT 120

/* Sizes s_0 = first, s_{i+1} = max(s_i + grain, s_i * growth% rounded down to the grain), up
 * to max. */
static unsigned build(uint32_t *sizes, unsigned cap, uint32_t first, uint32_t grain, uint32_t max,
                      unsigned growth_percent) {
    unsigned n = 0;
    for (uint64_t s = first; n < cap; n++) {
        if (s >= max) {
            sizes[n++] = max;
            break;
        }
        sizes[n] = (uint32_t)s;
        uint64_t grown = s * growth_percent / 100 / grain * grain;
        s = grown > s + grain ? grown : s + grain;
    }
    return n;
}

/* The bin of each grain-sized step: the smallest whose objects fit. */
static unsigned bin_for_step(size_t step, uint32_t grain, const uint32_t *sizes, unsigned bins) {
    unsigned bin = 0;
    while (bin + 1 < bins && sizes[bin] < step * grain) bin++;
    return bin;
}

void bx_sizeclass_init(void) {
    if (bx_small_bins) return;
    unsigned small = build(bx_small_size, BX_SMALL_BINS_MAX, 16, 16, BX_SMALL_MAX, SMALL_GROWTH_PERCENT);
    for (size_t step = 0; step < BX_SMALL_STEPS; step++)
        bx_small_index[step] = (uint8_t)bin_for_step(step, 16, bx_small_size, small);
    /* Medium bins follow a 512 B sequence, starting above the largest small object. */
    uint32_t all[BX_MEDIUM_BINS_MAX * 2];
    unsigned total = build(all, BX_MEDIUM_BINS_MAX * 2, 512, BX_MEDIUM_GRAIN, BX_MEDIUM_MAX, MEDIUM_GROWTH_PERCENT);
    unsigned medium = 0;
    for (unsigned i = 0; i < total && medium < BX_MEDIUM_BINS_MAX; i++)
        if (all[i] > BX_SMALL_MAX) bx_medium_size[medium++] = all[i];
    for (size_t step = 0; step < sizeof bx_medium_index; step++)
        bx_medium_index[step] = (uint8_t)bin_for_step(step, BX_MEDIUM_GRAIN, bx_medium_size, medium);
    bx_medium_bins = medium;
    __atomic_store_n(&bx_small_bins, small, __ATOMIC_RELEASE);
}
