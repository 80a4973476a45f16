/* checked.c - canaries and header validation for BOBOX_CHECK=1. */
#include "checked.h"

#include "thread.h"

static unsigned char canary_byte(void) { return (unsigned char)(bx_free_key >> 8) | 1; }

static uintptr_t trailer_code(const void *p) { return (uintptr_t)p ^ bx_link_secret; }

static bool large_header_ok(const bx_large_t *l) {
    return l->base == (const char *)l && l->user > l->base && l->usable >= BX_CHECK_ROOM &&
           l->user + l->usable <= l->base + l->map_size;
}

/* The headers of the block, superblock or mapping holding p, before anything is computed
 * from them: a trashed header is reported rather than followed. */
static void check_headers(const void *p, const char *op) {
    uintptr_t entry = bx_pagemap_get(p);
    switch (bx_tag_of(entry)) {
    case BX_TAG_SMALL: {
        const bx_block_t *b = bx_block_of(p);
        if (bx_block_unowned(b)) break; /* no formatted block: the classifier rejects p */
        if (!bx_sb_check_header(bx_span_of(entry)) || !bx_block_check_header(b))
            bx_fatalf("%s: corrupted block header %p (object %p)", op, (const void *)b, p);
        break;
    }
    case BX_TAG_MEDIUM:
        if (!bx_sb_check_header(bx_span_of(entry)))
            bx_fatalf("%s: corrupted superblock header %p (object %p)", op, bx_span_of(entry), p);
        break;
    case BX_TAG_LARGE:
        if (!large_header_ok(bx_span_of(entry)))
            bx_fatalf("%s: corrupted mapping header %p (object %p)", op, bx_span_of(entry), p);
        break;
    }
}

/* For the owner: the next free object or block, which the next allocation hands out. */
static void check_next_free(const bx_lookup_t *r, const void *p, const char *op) {
    if (r->tag == BX_TAG_SMALL) {
        const bx_block_t *b = r->block;
        if (b->heap == bx_tls_heap && b->free && !bx_block_check_free_object(b, b->free))
            bx_fatalf("%s: corrupted free list in block %p (object %p)", op, (const void *)b, p);
    } else if (r->tag == BX_TAG_MEDIUM) {
        const bx_superblock_t *sb = r->sb;
        const char *next = sb->free;
        if (sb->heap == bx_tls_heap && next &&
            (next < sb->first || next >= sb->bump || (size_t)(next - sb->first) % sb->block_size))
            bx_fatalf("%s: corrupted free list in superblock %p (object %p)", op, (const void *)sb, p);
    }
}

void bx_checked_lookup(const void *p, const char *op, bx_lookup_t *out) {
    check_headers(p, op);
    bx_classify(p, out);
}

void *bx_checked_arm(void *p, size_t size) {
    bx_lookup_t r;
    bx_checked_lookup(p, "malloc()", &r);
    if (!r.tag || r.usable < size + BX_CHECK_ROOM) bx_fatalf("malloc(): allocated object %p not found", p);
    check_next_free(&r, p, "malloc()");
    unsigned char *end = (unsigned char *)p + r.usable - sizeof(uintptr_t);
    for (unsigned char *c = (unsigned char *)p + size; c < end; c++) *c = canary_byte();
    *(uintptr_t *)end = size ^ trailer_code(p);
    return p;
}

size_t bx_checked_verify(const bx_lookup_t *r, const void *p, const char *op) {
    check_next_free(r, p, op);
    const unsigned char *end = (const unsigned char *)p + r->usable - sizeof(uintptr_t);
    size_t size = *(const uintptr_t *)end ^ trailer_code(p);
    if (size > r->usable - BX_CHECK_ROOM)
        bx_fatalf("%s: heap overflow past the end of %p (%zu usable bytes; the size record is overwritten)", op, p,
                  r->usable - BX_CHECK_ROOM);
    for (const unsigned char *c = (const unsigned char *)p + size; c < end; c++)
        if (*c != canary_byte())
            bx_fatalf("%s: heap overflow past the end of %p (size %zu): byte %zu overwritten", op, p, size,
                      (size_t)(c - (const unsigned char *)p));
    return size;
}

void bx_checked_block(const bx_block_t *b) {
    if (!bx_block_check(b)) bx_fatalf("malloc(): corrupted block %p (header or free list)", (const void *)b);
}
