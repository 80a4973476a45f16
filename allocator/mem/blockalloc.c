/* blockalloc.c - block allocators over superblocks, with the min-heap of DESIGN §5. */
#include "base/copy.h"
#include "mem/blockalloc.h"

#include <string.h>

#include "mem/node.h"
#include "os/os.h"

static void heap_set(bx_blockalloc_t *ba, uint32_t i, bx_superblock_t *sb) {
    ba->heap[i] = sb;
    sb->heap_pos = i;
}

static void sift_up(bx_blockalloc_t *ba, uint32_t i) {
    bx_superblock_t *sb = ba->heap[i];
    while (i > 0) {
        uint32_t parent = (i - 1) / 2;
        if (bx_sb_free_blocks(ba->heap[parent]) <= bx_sb_free_blocks(sb)) break;
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
        if (child + 1 < ba->count && bx_sb_free_blocks(ba->heap[child + 1]) < bx_sb_free_blocks(ba->heap[child]))
            child++;
        if (bx_sb_free_blocks(sb) <= bx_sb_free_blocks(ba->heap[child])) break;
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
            bx_copy(grown, ba->heap, ba->count * sizeof *grown);
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
    if (i > 0 && bx_sb_free_blocks(ba->heap[i]) < bx_sb_free_blocks(ba->heap[(i - 1) / 2]))
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

void *bx_blockalloc_alloc(bx_blockalloc_t *ba, bx_superblock_t **sb_out) {
    if (BX_UNLIKELY(ba->count == 0)) {
        bx_superblock_t *sb = bx_node_take(ba->node, ba->tag);
        if (!sb) return NULL;
        bx_sb_format(sb, ba->tag, ba->block_size, ba, ba->owner);
        if (!heap_insert(ba, sb)) {
            sb->owner = NULL;
            bx_node_give(sb);
            return NULL;
        }
        ba->superblocks++;
    }
    bx_superblock_t *sb = ba->heap[0]; /* the fullest superblock with a free block */
    void *block = bx_sb_take_block(sb);
    if (!block) return NULL;
    if (sb->used == sb->capacity) heap_remove(ba, sb);
    /* Taking a block only lowers the root's key: the order holds. */
    if (sb_out) *sb_out = sb;
    return block;
}

void bx_blockalloc_free(bx_blockalloc_t *ba, bx_superblock_t *sb, void *block) {
    bx_sb_put_block(sb, block);
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

/* Marks a block given back, in the last word of its first page (kept): the next trim skips
 * it. A block reused keeps a stale mark only if the program wrote that very value there: it
 * is then skipped too, never harmed. */
#define DISCARDED ((uintptr_t)0x6469736361726465) /* "discarde" */

size_t bx_blockalloc_discard_free(bx_blockalloc_t *ba) {
    size_t page = bx_os_page_size(), bytes = 0;
    if (ba->block_size <= page) return 0;
    for (uint32_t i = 0; i < ba->count; i++)
        for (char *b = ba->heap[i]->free; b; b = (char *)bx_link_get(b)) {
            uintptr_t *mark = (uintptr_t *)(b + page) - 1;
            if (*mark == DISCARDED) continue;
            bx_os_purge(b + page, ba->block_size - page);
            *mark = DISCARDED;
            bytes += ba->block_size - page;
        }
    return bytes;
}

bool bx_blockalloc_check(const bx_blockalloc_t *ba) {
    for (uint32_t i = 0; i < ba->count; i++) {
        const bx_superblock_t *sb = ba->heap[i];
        if (sb->heap_pos != i || sb->owner != ba || !bx_sb_check(sb)) return false;
        if (sb->used == 0 || sb->used >= sb->capacity) return false;
        if (i > 0 && bx_sb_free_blocks(ba->heap[(i - 1) / 2]) > bx_sb_free_blocks(sb)) return false;
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
