/* superblock.c - block allocators over superblocks, with the min-heap of DESIGN §5. */
#include "mem/superblock.h"

#include <string.h>

#include "mem/node.h"
#include "os/os.h"
#include "mem/pagemap.h"

static uint32_t free_blocks(const bx_superblock_t *sb) { return sb->capacity - sb->used; }

static void heap_set(bx_blockalloc_t *ba, uint32_t i, bx_superblock_t *sb) {
    ba->heap[i] = sb;
    sb->heap_pos = i;
}

static void sift_up(bx_blockalloc_t *ba, uint32_t i) {
    bx_superblock_t *sb = ba->heap[i];
    while (i > 0) {
        uint32_t parent = (i - 1) / 2;
        if (free_blocks(ba->heap[parent]) <= free_blocks(sb)) break;
        heap_set(ba, i, ba->heap[parent]);
        i = parent;
    }
    heap_set(ba, i, sb);
}

static void sift_down(bx_blockalloc_t *ba, uint32_t i) {
    bx_superblock_t *sb = ba->heap[i];
    for (;;) {
        uint32_t child = 2 * i + 1;
        if (child >= ba->count) break;
        if (child + 1 < ba->count && free_blocks(ba->heap[child + 1]) < free_blocks(ba->heap[child])) child++;
        if (free_blocks(sb) <= free_blocks(ba->heap[child])) break;
        heap_set(ba, i, ba->heap[child]);
        i = child;
    }
    heap_set(ba, i, sb);
}

static bool heap_insert(bx_blockalloc_t *ba, bx_superblock_t *sb) {
    if (ba->count == ba->cap) {
        /* The array lives in its own mapping: the allocator cannot call malloc. */
        uint32_t cap = ba->cap ? ba->cap * 2 : (uint32_t)(bx_os_page_size() / sizeof *ba->heap);
        bx_superblock_t **grown = bx_os_map(cap * sizeof *grown);
        if (!grown) return false;
        if (ba->heap) {
            memcpy(grown, ba->heap, ba->count * sizeof *grown);
            bx_os_unmap(ba->heap, ba->cap * sizeof *grown);
        }
        ba->heap = grown;
        ba->cap = cap;
    }
    ba->heap[ba->count] = sb;
    sift_up(ba, ba->count++);
    return true;
}

static void heap_remove(bx_blockalloc_t *ba, bx_superblock_t *sb) {
    uint32_t i = sb->heap_pos;
    sb->heap_pos = BX_SB_NOT_IN_HEAP;
    if (i == --ba->count) return;
    heap_set(ba, i, ba->heap[ba->count]);
    if (i > 0 && free_blocks(ba->heap[i]) < free_blocks(ba->heap[(i - 1) / 2]))
        sift_up(ba, i);
    else
        sift_down(ba, i);
}

void bx_blockalloc_init(bx_blockalloc_t *ba, struct bx_heap *owner, unsigned tag, uint32_t block_size, int node) {
    memset(ba, 0, sizeof *ba);
    ba->owner = owner;
    ba->tag = tag;
    ba->block_size = block_size;
    ba->node = node;
}

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

static void format(bx_blockalloc_t *ba, bx_superblock_t *sb) {
    size_t header = header_bytes(ba->tag);
    mark_unformatted(sb, ba->tag);
    sb->owner = ba;
    sb->heap = ba->owner;
    sb->first = (char *)sb + header;
    sb->free = NULL;
    sb->bump = sb->first;
    sb->block_size = ba->block_size;
    sb->capacity = (uint32_t)((BX_SUPERBLOCK_SIZE - header) / ba->block_size);
    sb->used = 0;
    sb->heap_pos = BX_SB_NOT_IN_HEAP;
    sb->cached = 0;
    sb->div_magic = div_magic_for(ba->block_size);
    sb->free_key = bx_format_key(sb, ba->block_size);
    memset(sb->live, 0, sizeof sb->live);
}

void *bx_blockalloc_alloc(bx_blockalloc_t *ba, bx_superblock_t **sb_out) {
    if (BX_UNLIKELY(ba->count == 0)) {
        bx_superblock_t *sb = bx_node_take(ba->node, ba->tag);
        if (!sb) return NULL;
        format(ba, sb);
        if (!heap_insert(ba, sb)) {
            sb->owner = NULL;
            bx_node_give(sb);
            return NULL;
        }
        ba->superblocks++;
    }
    bx_superblock_t *sb = ba->heap[0]; /* the fullest superblock with a free block */
    void *block = sb->free;
    if (block) {
        /* Checked before it is followed: a medium object starts at its block, so a write
         * after free lands on the link. */
        char *next = bx_link_get(block);
        if (next && (next < sb->first || next >= sb->bump || bx_sb_block(sb, bx_sb_index(sb, next)) != next))
            bx_fatalf("malloc(): corrupted free list at %p (superblock %p): the free object there was written after "
                      "it was freed",
                      block, (void *)sb);
        sb->free = next;
    } else {
        block = sb->bump;
        sb->bump += sb->block_size;
    }
    if (++sb->used == sb->capacity) heap_remove(ba, sb);
    /* Taking a block only lowers the root's key: the order holds. */
    if (sb_out) *sb_out = sb;
    return block;
}

void bx_blockalloc_free(bx_blockalloc_t *ba, bx_superblock_t *sb, void *block) {
    bx_link_set(block, sb->free);
    sb->free = block;
    sb->used--;
    if (sb->used == 0) {
        if (sb->heap_pos != BX_SB_NOT_IN_HEAP) heap_remove(ba, sb);
        ba->superblocks--;
        sb->owner = NULL;
        bx_node_give(sb); /* entirely free: back to the node at once */
    } else if (sb->heap_pos == BX_SB_NOT_IN_HEAP) {
        heap_insert(ba, sb); /* cannot fail: a full superblock left a slot behind */
    } else {
        sift_down(ba, sb->heap_pos);
    }
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
    return listed + never_used == free_blocks(sb);
}

bool bx_blockalloc_check(const bx_blockalloc_t *ba) {
    for (uint32_t i = 0; i < ba->count; i++) {
        const bx_superblock_t *sb = ba->heap[i];
        if (sb->heap_pos != i || sb->owner != ba || !bx_sb_check(sb)) return false;
        if (sb->used == 0 || sb->used >= sb->capacity) return false;
        if (i > 0 && free_blocks(ba->heap[(i - 1) / 2]) > free_blocks(sb)) return false;
    }
    return true;
}

#ifdef BX_TESTING
void bx_blockalloc_destroy(bx_blockalloc_t *ba) {
    if (ba->heap) bx_os_unmap(ba->heap, ba->cap * sizeof *ba->heap);
    ba->heap = NULL;
    ba->count = ba->cap = 0;
}
#endif
