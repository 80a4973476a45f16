/* superblock.c - the superblock's format: formatting, taking blocks, validation. */
#include "mem/superblock.h"

#include <string.h>

#include "os/options.h"
#include "os/os.h"

/* Small-object blocks keep 64 KB alignment, so the header and the blocks' descriptors take
 * the first one. */
static size_t header_bytes(unsigned tag) {
    return tag == BX_TAG_SMALL ? BX_BLOCK_SIZE : bx_align_up(sizeof(bx_superblock_t), 4096);
}

/* Exact for offsets below 16 MB: the rounding error stays under 1/block_size. */
static uint64_t div_magic_for(uint32_t block_size) { return (((uint64_t)1) << 48) / block_size + 1; }

/* Before a superblock is formatted for small blocks, every block descriptor is marked as no
 * block's, so that what a past format left there (medium objects cover the descriptors) is
 * never taken for one; descriptor 0, whose chunk is the header, stays so. */
static void mark_unformatted(bx_superblock_t *sb, unsigned tag) {
    char *end = sb->touched_end > sb->bump ? sb->touched_end : sb->bump; /* zero when fresh */
    sb->touched_end = end;
    if (tag != BX_TAG_SMALL) return;
    for (size_t i = 0; i < BX_SUPERBLOCK_SIZE / BX_BLOCK_SIZE; i++)
        bx_block_of((char *)sb + i * BX_BLOCK_SIZE)->heap = BX_BLOCK_NO_OWNER;
}

void bx_sb_format(bx_superblock_t *sb, unsigned tag, uint32_t block_size, struct bx_blockalloc *owner,
                  struct bx_heap *heap) {
    size_t header = header_bytes(tag);
    mark_unformatted(sb, tag);
    sb->owner = owner;
    sb->heap = heap;
    sb->first = (char *)sb + header;
    sb->free = NULL;
    sb->bump = sb->first;
    sb->block_size = block_size;
    sb->capacity = (uint32_t)((BX_SUPERBLOCK_SIZE - header) / block_size);
    sb->used = 0;
    sb->heap_pos = BX_SB_NOT_IN_HEAP;
    sb->cached = 0;
    sb->div_magic = div_magic_for(block_size);
    sb->free_key = bx_format_key(sb, block_size);
    memset(sb->live, 0, sizeof sb->live);
}

/* The frontier's step: past the last block handed out, at most this much stays writable, so
 * a write 1 MB past any object of that block faults. Where huge pages may back superblocks
 * (BOBOX_THP=always or system), a step of 2 MB on 2 MB boundaries, or none could form. */
static size_t frontier_step(void) {
    return bx_thp_advice(true) == BX_OS_HUGE_NO ? 512 * BX_KB : 2 * BX_MB;
}

void bx_sb_seal_fresh(bx_superblock_t *sb) {
    size_t step = frontier_step();
    /* Refused (no memory for the split): it stays writable, as before the frontier. */
    if (bx_os_protect((char *)sb + step, BX_SUPERBLOCK_SIZE - step, BX_OS_READ_ONLY))
        sb->writable_end = (char *)sb + step;
    else
        sb->writable_end = (char *)sb + BX_SUPERBLOCK_SIZE;
}

bool bx_sb_advance_frontier(bx_superblock_t *sb, const char *end) {
    char *limit = (char *)sb + BX_SUPERBLOCK_SIZE;
    char *frontier = (char *)sb + bx_align_up((size_t)(end - (char *)sb), frontier_step());
    /* Past the last block: no read-only sliver is left to split the mapping. */
    if (frontier >= sb->first + (size_t)sb->capacity * sb->block_size) frontier = limit;
    if (!bx_os_protect(sb->writable_end, (size_t)(frontier - sb->writable_end), BX_OS_READ_WRITE)) return false;
    sb->writable_end = frontier;
    return true;
}

bool bx_sb_check_header(const bx_superblock_t *sb) {
    if (sb->tag != BX_TAG_SMALL && sb->tag != BX_TAG_MEDIUM) return false;
    uint32_t size = sb->block_size;
    size_t header = header_bytes(sb->tag);
    if (sb->tag == BX_TAG_SMALL ? size != BX_BLOCK_SIZE
                                : size <= BX_SMALL_MAX || size > BX_MEDIUM_MAX || size % BX_MEDIUM_GRAIN)
        return false;
    if (sb->first != (const char *)sb + header || sb->div_magic != div_magic_for(size)) return false;
    if (sb->capacity != (BX_SUPERBLOCK_SIZE - header) / size || sb->used > sb->capacity) return false;
    return sb->bump >= sb->first && sb->bump <= sb->first + (size_t)sb->capacity * size &&
           (size_t)(sb->bump - sb->first) % size == 0;
}

bool bx_sb_check(const bx_superblock_t *sb) {
    if (!bx_sb_check_header(sb)) return false;
    uint32_t listed = 0;
    for (const char *block = sb->free; block; block = bx_link_get(block))
        if (++listed > sb->capacity || block < sb->first || block >= sb->bump ||
            (size_t)(block - sb->first) % sb->block_size)
            return false;
    uint32_t never_used =
        (uint32_t)((size_t)(sb->first + (size_t)sb->capacity * sb->block_size - sb->bump) / sb->block_size);
    return listed + never_used == bx_sb_free_blocks(sb);
}
