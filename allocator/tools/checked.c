/* checked.c - canaries and header validation for BOBOX_CHECK=1. */
#include "base/copy.h"
#include "tools/checked.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "base/lock.h"
#include "os/options.h"
#include "os/os.h"
#include "thread/thread.h"
#include "tools/registry.h"

/* The trailer record (mangled with the object's address): the requested size, log2 of the
 * front room before the object, the form that allocated it, whether a large object's gap
 * follows with no access, and whether it is freed (in the quarantine). */
#define REC_SIZE_BITS 48
#define REC_FRONT_SHIFT 48
#define REC_FORM_SHIFT 54
#define REC_GUARD ((uintptr_t)1 << 56)
#define REC_FREED ((uintptr_t)1 << 63)
#define BX_NEW_FILL 0xbe
#define BX_FREE_FILL 0xdf
/* The slot start's aligned-object record (block.h) takes the first 16 bytes of the front room. */
#define BX_RECORD_BYTES 16

static unsigned char canary_byte(void) { return (unsigned char)(bx_free_key >> 8) | 1; }

static uintptr_t trailer_code(const void *p) { return (uintptr_t)p ^ bx_link_secret; }

/* The first byte of [from, to) that is not `byte`, or NULL; eight bytes at a time where it can. */
typedef uint64_t __attribute__((may_alias)) word_t;
static const unsigned char *first_other(const unsigned char *from, const unsigned char *to, unsigned char byte) {
    const uint64_t word = byte * 0x0101010101010101ull;
    for (; from < to && ((uintptr_t)from & 7); from++)
        if (*from != byte) return from;
    while (to - from >= 8 && *(const word_t *)from == word) from += 8;
    for (; from < to; from++)
        if (*from != byte) return from;
    return NULL;
}

static uintptr_t *trailer_of(const void *p, size_t usable) {
    return (uintptr_t *)((uintptr_t)p + usable - sizeof(uintptr_t));
}
static size_t rec_size(uintptr_t rec) { return rec & (((uintptr_t)1 << REC_SIZE_BITS) - 1); }
static size_t rec_front(uintptr_t rec) { return (size_t)1 << ((rec >> REC_FRONT_SHIFT) & 63); }
static unsigned rec_form(uintptr_t rec) { return (rec >> REC_FORM_SHIFT) & 3; }

/* A large object's mapping ends with a gap with no access, which checked mode keeps out of
 * the object (every checked path sees the usable size without it): a write up to 1 MB past
 * the object's end faults there, if it did not land on the canary before it. */
#define BX_CHECK_GAP ((size_t)1 << 20)
static void *gap_of(const bx_large_t *l) { return l->base + l->map_size - BX_CHECK_GAP; }
static void large_room(bx_lookup_t *r) {
    if (r->tag == BX_TAG_LARGE) r->usable -= BX_CHECK_GAP;
}

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
        if (b->heap == bx_tls_heap && b->free < BX_FREE_END && !bx_block_check_free_object(b, b->mem + b->free))
            bx_fatalf("%s: corrupted free list in block %p (object %p)", op, (const void *)b, p);
    } else if (r->tag == BX_TAG_MEDIUM) {
        const bx_superblock_t *sb = r->sb;
        const char *next = sb->free;
        if (sb->heap == bx_tls_heap && next &&
            (next < sb->first || next >= sb->bump || (size_t)(next - sb->first) % sb->block_size))
            bx_fatalf("%s: corrupted free list in superblock %p (object %p)", op, (const void *)sb, p);
    }
}

/* ---- zero-size objects --------------------------------------------------------------------
 * malloc(0), and every other form asked for 0 bytes, hands out an address of its own in a
 * range reserved with no access: a read or a write through it faults at once. Each address
 * is handed out once (a bump pointer, 16 bytes apart, or the alignment asked for), and the
 * registry holds which are live and the form that allocated them; free takes them out, so a
 * second free is told from an address never handed out. When the range is used up (64
 * million objects) or cannot be had, a zero-size object is an ordinary checked object
 * again: canary bytes, a write caught at free or exit. */
#define ZERO_RANGE ((size_t)1 << 30)
#define ZERO_RANGE_SMALL ((size_t)16 << 20) /* when the address space is short */
#define ZERO_STEP 16
#define ZERO_MAX_ALIGN 4096
#define META_ZERO 8u /* the registry's meta of a zero-size object: this bit and the form */

static atomic_int zero_state; /* 0 none, 1 being made, 2 ready, 3 not to be had */
static uintptr_t zero_start, zero_end;
static atomic_uintptr_t zero_next;

static bool zero_ready(void) {
    int expected = 0;
    if (atomic_load_explicit(&zero_state, memory_order_acquire) == 2) return true;
    if (atomic_compare_exchange_strong(&zero_state, &expected, 1)) {
        size_t size = ZERO_RANGE;
        void *range = bx_os_reserve_none(size);
        if (!range) range = bx_os_reserve_none(size = ZERO_RANGE_SMALL);
        zero_start = (uintptr_t)range;
        zero_end = zero_start + size;
        atomic_store(&zero_next, zero_start);
        atomic_store_explicit(&zero_state, range ? 2 : 3, memory_order_release);
        return range != NULL;
    }
    while (atomic_load(&zero_state) == 1) bx_cpu_pause();
    return atomic_load_explicit(&zero_state, memory_order_acquire) == 2;
}

static bool in_zero_range(const void *p) {
    return atomic_load_explicit(&zero_state, memory_order_acquire) == 2 &&
           (uintptr_t)p - zero_start < zero_end - zero_start;
}

/* A zero-size object allocated in `form`, or NULL with *fallback set (none to be had: an
 * ordinary checked object instead) or clear (errno ENOMEM: no room in the registry). */
static void *zero_alloc(size_t alignment, unsigned form, bool *fallback) {
    *fallback = true;
    if (alignment > ZERO_MAX_ALIGN || !zero_ready()) return NULL;
    uintptr_t step = alignment > ZERO_STEP ? alignment : ZERO_STEP;
    uintptr_t at, cur = atomic_load_explicit(&zero_next, memory_order_relaxed);
    do {
        at = (cur + step - 1) & ~(step - 1);
        if (at >= zero_end || zero_end - at < ZERO_STEP) return NULL;
    } while (!atomic_compare_exchange_weak_explicit(&zero_next, &cur, at + ZERO_STEP, memory_order_relaxed,
                                                    memory_order_relaxed));
    *fallback = false;
    if (!bx_registry_add((void *)at, META_ZERO | form)) {
        errno = ENOMEM;
        return NULL;
    }
    return (void *)at;
}

/* The lookup of an address in the range: a live zero-size object (its form in index), or
 * not (freed: handed out before). */
static void zero_lookup(const void *p, bx_lookup_t *out) {
    bx_lookup_t r = {0};
    int meta = bx_registry_find(p);
    if (meta >= 0 && (meta & META_ZERO)) {
        r.tag = BX_TAG_ZERO;
        r.object = (void *)p;
        r.index = (uint32_t)meta & 3;
    } else {
        r.freed = ((uintptr_t)p & (ZERO_STEP - 1)) == 0 && (uintptr_t)p < atomic_load(&zero_next);
    }
    *out = r;
}

void bx_checked_lookup(const void *p, const char *op, bx_lookup_t *out) {
    if (BX_UNLIKELY(in_zero_range(p))) {
        zero_lookup(p, out);
        return;
    }
    check_headers(p, op);
    bx_classify(p, out);
    large_room(out);
}

/* The front room of object p: from after the slot's aligned-object record (small, medium),
 * or the end of the mapping's header page (large), up to p. */
static unsigned char *front_start(const bx_lookup_t *r, const void *p, size_t front) {
    return r->tag == BX_TAG_LARGE ? (unsigned char *)p - front : (unsigned char *)r->object + BX_RECORD_BYTES;
}

static void release_now(void *p, bool opened);
static bool drain_quarantine(void);

static const char *form_name(unsigned form) {
    static const char *const names[] = {"malloc()", "new", "new[]"};
    return form < 3 ? names[form] : "?";
}

void *bx_checked_alloc(size_t alignment, size_t size, unsigned form) {
    if (size == 0) {
        bool fallback;
        void *z = zero_alloc(alignment, form, &fallback);
        if (!fallback) return z;
    }
    size_t front = alignment > 32 ? alignment : 32;
    if (size >= (size_t)1 << REC_SIZE_BITS ||
        size > PTRDIFF_MAX - BX_CHECK_ROOM - front - BX_CHECK_GAP - 2 * bx_os_page_size()) {
        errno = ENOMEM;
        return NULL;
    }
    size_t need = size + BX_CHECK_ROOM + front, total = need;
    /* Room for the gap wherever the request may end up large (aligned.c's rule). */
    if (total + (alignment > BX_ALIGNMENT ? alignment : 0) > BX_MEDIUM_MAX || alignment >= BX_BLOCK_SIZE)
        total += BX_CHECK_GAP;
    unsigned char *q =
        alignment <= BX_ALIGNMENT ? bx_alloc_unchecked(total) : bx_alloc_aligned_unchecked(alignment, total);
    if (!q) {
        /* Up to 32 MB may wait in the quarantine: out of memory, it gives them back first. */
        int saved = errno;
        if (!drain_quarantine()) return NULL;
        q = alignment <= BX_ALIGNMENT ? bx_alloc_unchecked(total) : bx_alloc_aligned_unchecked(alignment, total);
        if (!q) return NULL;
        errno = saved;
    }
    bx_lookup_t r;
    bx_checked_lookup(q, "malloc()", &r);
    if (!r.tag || r.usable < need) bx_fatalf("malloc(): allocated object %p not found", (void *)q);
    check_next_free(&r, q, "malloc()");
    bool guard = false;
    unsigned char *p = q + front;
    size_t usable = r.usable - front;
    if (r.tag == BX_TAG_LARGE) {
        /* The object stays where the mapping's header (and the page map) has it: the front
         * canary is the end of the header page. The mapping's last 1 MB is the gap. */
        front = 32;
        p = q;
        usable = r.usable;
        guard = bx_os_protect(gap_of(r.large), BX_CHECK_GAP, BX_OS_NO_ACCESS);
    } else {
        bx_object_mark_aligned(r.object, p, bx_object_key(r.object));
    }
    unsigned char *front_from = front_start(&r, p, front);
    bx_fill(front_from, canary_byte(), (size_t)(p - front_from));
    unsigned char *end = (unsigned char *)trailer_of(p, usable);
    bx_fill(p, BX_NEW_FILL, size); /* calloc clears it again */
    bx_fill(p + size, canary_byte(), (size_t)(end - p - size));
    uintptr_t rec = size | (uintptr_t)__builtin_ctzl(front) << REC_FRONT_SHIFT | (uintptr_t)form << REC_FORM_SHIFT |
                    (guard ? REC_GUARD : 0);
    *(uintptr_t *)end = rec ^ trailer_code(p);
    /* Registered once whole: a check walking the registry sees every byte in place. */
    if (!bx_registry_add(p, 0)) {
        release_now(p, false);
        errno = ENOMEM;
        return NULL;
    }
    return p;
}

/* `live`: p is known to be in the registry (the caller walks it). */
static uintptr_t verify_record(const bx_lookup_t *r, const void *p, const char *op, bool live) {
    if (r->tag == BX_TAG_ZERO) return (uintptr_t)r->index << REC_FORM_SHIFT; /* live, 0 bytes: nothing to read */
    /* A parked large object has no access: the registry tells it from a live one. */
    if (r->tag == BX_TAG_LARGE && !live && bx_registry_find(p) < 0)
        bx_fatalf("%s: double free %p (the object is in the quarantine)", op, p);
    uintptr_t rec = *trailer_of(p, r->usable) ^ trailer_code(p);
    size_t size = rec_size(rec);
    /* An overwritten record is the likelier story than a freed one: it is checked first. */
    if (rec_form(rec) > 2 || size > r->usable - BX_CHECK_ROOM || rec_front(rec) < 32 || (rec & ((uintptr_t)0x3f << 57)))
        bx_fatalf("%s: heap overflow past the end of %p (%zu usable bytes; the size record is overwritten)", op, p,
                  r->usable - BX_CHECK_ROOM);
    if (rec & REC_FREED) bx_fatalf("%s: double free %p (the object is in the quarantine)", op, p);
    const unsigned char *end = (const unsigned char *)trailer_of(p, r->usable), *c;
    if ((c = first_other((const unsigned char *)p + size, end, canary_byte())) != NULL)
        bx_fatalf("%s: heap overflow past the end of %p (size %zu): byte %zu overwritten", op, p, size,
                  (size_t)(c - (const unsigned char *)p));
    if ((c = first_other(front_start(r, p, rec_front(rec)), p, canary_byte())) != NULL)
        bx_fatalf("%s: heap underflow before the start of %p (size %zu): byte %zu before it overwritten", op, p, size,
                  (size_t)((const unsigned char *)p - c));
    /* Last: an overflow of p that reached the next slot's link is reported as p's overflow. */
    check_next_free(r, p, op);
    return rec;
}

size_t bx_checked_verify(const bx_lookup_t *r, const void *p, const char *op) {
    return rec_size(verify_record(r, p, op, false));
}

size_t bx_checked_verify_form(const bx_lookup_t *r, const void *p, unsigned form, const char *op) {
    uintptr_t rec = verify_record(r, p, op, false);
    /* The aligned forms of new record malloc's form: those are not told apart. */
    if (rec_form(rec) != BX_FORM_MALLOC && rec_form(rec) != form)
        bx_fatalf("%s: %p was allocated by %s, freed by %s", op, p, form_name(rec_form(rec)), op);
    return rec_size(rec);
}

/* The bounds a copy at q must stay in: the bytes asked for of the checked object whose slot
 * `at` (bx_locate) holds q, or a zero-size object's address. False when q is in no object of
 * ours, or the object's record is overwritten (free or the exit check reports that). */
bool bx_checked_bounds(const bx_place_t *at, const void *q, char **start, size_t *size, bool *freed) {
    if (in_zero_range(q)) {
        *start = (char *)((uintptr_t)q & ~(uintptr_t)(ZERO_STEP - 1));
        *size = 0;
        *freed = false;
        return true;
    }
    if (!at->tag) return false;
    char *p = at->start;
    if (at->tag == BX_TAG_LARGE && bx_registry_find(p) < 0) {
        /* Freed: in the quarantine, sealed (no access), so its trailer cannot be read. A live
         * checked object is always registered (bx_checked_alloc fails otherwise). */
        *start = p;
        *size = (size_t)(at->end - p) - BX_CHECK_GAP;
        *freed = true;
        return true;
    }
    if (at->tag != BX_TAG_LARGE) {
        /* A checked object sits inside its slot, which records where (bx_checked_alloc). */
        if (!bx_object_is_aligned(at->start, at->key)) {
            if (!at->freed) return false;
            *start = at->start; /* left the quarantine: the whole slot is free */
            *size = (size_t)(at->end - at->start);
            *freed = true;
            return true;
        }
        p = (char *)((uintptr_t *)at->start)[0];
        if (p <= at->start || p >= at->end) return false;
    }
    size_t usable = (size_t)(at->end - p) - (at->tag == BX_TAG_LARGE ? BX_CHECK_GAP : 0);
    uintptr_t rec = *trailer_of(p, usable) ^ trailer_code(p);
    if (rec_size(rec) > usable - BX_CHECK_ROOM || rec_form(rec) > 2) return false;
    *start = p;
    *size = rec_size(rec);
    *freed = (rec & REC_FREED) != 0;
    return true;
}

/* ---- the quarantine ------------------------------------------------------------------------
 * A freed object leaves the registry, its trailer is marked freed, and it is parked in a FIFO
 * ring (its own mapping, one for the process) until BX_QUARANTINE_SLOTS later frees or
 * BX_QUARANTINE_BYTES of later objects push it out: its slot is not handed out again at
 * once, and a second free of it is reported as a double free. A small or medium object is
 * filled with the free fill, and a write into it while it waits is reported with its
 * address when it leaves (or at exit, or at bobox_check_heap); a large one is sealed instead
 * (no access until it leaves), so a write into it faults at once. */
#define BX_QUARANTINE_SLOTS 1024
#define BX_QUARANTINE_BYTES (32u << 20)
typedef struct {
    void *object;
    size_t usable;
    bool sealed; /* a large object made inaccessible, with the gap after it */
} parked_t;

static bx_lock_t quarantine_lock = BX_LOCK_INIT;
static parked_t *ring; /* BX_QUARANTINE_SLOTS entries */
static size_t ring_head, ring_count, ring_bytes;

static bool ring_ready(void) {
    static atomic_int state; /* 0 none, 1 being made, 2 ready */
    int expected = 0;
    if (atomic_load(&state) == 2) return true;
    if (atomic_compare_exchange_strong(&state, &expected, 1)) {
        ring = bx_os_map(BX_QUARANTINE_SLOTS * sizeof(parked_t));
        atomic_store(&state, ring ? 2 : 0);
        return ring != NULL;
    }
    while (atomic_load(&state) == 1) bx_cpu_pause();
    return atomic_load(&state) == 2;
}

/* Frees object p for real. A large mapping gets its gap's access back first, unless it is
 * `opened` already; one the kernel will not open again is kept rather than handed out again
 * without access. */
static void release_now(void *p, bool opened) {
    bx_lookup_t r;
    bx_classify(p, &r);
    large_room(&r);
    if (!r.tag) bx_fatalf("free(): quarantined object %p lost", p);
    if (r.tag == BX_TAG_LARGE && !opened && ((*trailer_of(p, r.usable) ^ trailer_code(p)) & REC_GUARD) &&
        !bx_os_protect(gap_of(r.large), BX_CHECK_GAP, BX_OS_READ_WRITE))
        return;
    bx_free_resolved(&r);
}

/* Aborts if parked object q was written after it was freed: its fill, then its trailer (a
 * sealed object's can only be read once it is opened again). */
static void check_fill(const parked_t *q) {
    const unsigned char *c = q->object, *end = (const unsigned char *)trailer_of(q->object, q->usable);
    if ((c = first_other(c, end, BX_FREE_FILL)) != NULL)
        bx_fatalf("write after free: object %p (%zu usable bytes) changed at byte %zu after it was freed", q->object,
                  q->usable - BX_CHECK_ROOM, (size_t)(c - (const unsigned char *)q->object));
}
static void check_trailer(const parked_t *q) {
    if (!((*trailer_of(q->object, q->usable) ^ trailer_code(q->object)) & REC_FREED))
        bx_fatalf("write after free: object %p: its trailer changed after it was freed", q->object);
}

static void leave_quarantine(const parked_t *q) {
    if (q->sealed) {
        /* Nothing could write it meanwhile; the trailer is read once it is open again. */
        if (!bx_os_protect(q->object, q->usable + BX_CHECK_GAP, BX_OS_READ_WRITE)) return;
        check_trailer(q);
        release_now(q->object, true);
        return;
    }
    check_fill(q);
    check_trailer(q);
    release_now(q->object, false);
}

/* Takes the oldest parked object out of the ring (quarantine_lock held, ring_count > 0). */
static parked_t take_oldest(void) {
    parked_t q = ring[ring_head];
    ring_bytes -= q.usable;
    ring_head = (ring_head + 1) % BX_QUARANTINE_SLOTS;
    ring_count--;
    return q;
}

/* Lets every parked object leave (each checked as it goes); false if none waited. */
static bool drain_quarantine(void) {
    bool any = false;
    for (;;) {
        parked_t out[16];
        size_t n_out = 0;
        bx_lock(&quarantine_lock);
        while (ring_count && n_out < 16) out[n_out++] = take_oldest();
        bx_unlock(&quarantine_lock);
        if (!n_out) return any;
        any = true;
        for (size_t i = 0; i < n_out; i++) leave_quarantine(&out[i]);
    }
}

void bx_checked_release(const bx_lookup_t *r, void *p) {
    if (r->tag == BX_TAG_ZERO) { /* its address is never handed out again: no quarantine */
        if (bx_registry_remove(p) < 0) bx_fatalf("free(): double free %p", p);
        return;
    }
    /* Out of the registry first: from here on no check reads p as a live object. */
    if (bx_registry_remove(p) < 0) bx_fatalf("free(): double free %p (the object is in the quarantine)", p);
    *trailer_of(p, r->usable) ^= REC_FREED;
    if (!ring_ready()) {
        release_now(p, false);
        return;
    }
    /* A large object (page-aligned, the gap after it) is sealed; if the kernel refuses, it is
     * filled and checked as the others. */
    bool sealed = r->tag == BX_TAG_LARGE && bx_os_protect(p, r->usable, BX_OS_NO_ACCESS);
    if (!sealed) bx_fill(p, BX_FREE_FILL, r->usable - sizeof(uintptr_t));
    parked_t out[4];
    size_t n_out = 0;
    bx_lock(&quarantine_lock);
    /* Room for p: the oldest leave (at most a few per call; the rest leave on later frees). */
    while (ring_count && n_out < 4 &&
           (ring_count == BX_QUARANTINE_SLOTS || ring_bytes + r->usable > BX_QUARANTINE_BYTES))
        out[n_out++] = take_oldest();
    bool parked = ring_count < BX_QUARANTINE_SLOTS;
    if (parked) {
        ring[(ring_head + ring_count) % BX_QUARANTINE_SLOTS] = (parked_t){p, r->usable, sealed};
        ring_count++;
        ring_bytes += r->usable;
    }
    bx_unlock(&quarantine_lock);
    for (size_t i = 0; i < n_out; i++) leave_quarantine(&out[i]);
    if (!parked) {
        parked_t self = {p, r->usable, sealed};
        leave_quarantine(&self);
    }
}

/* ---- what is live ----------------------------------------------------------------------- */

int bx_checked_owns(const void *p) {
    if (in_zero_range(p)) {
        int meta = bx_registry_find(p);
        return meta >= 0 && (meta & META_ZERO);
    }
    bx_lookup_t r;
    bx_classify(p, &r);
    /* A parked object is still live to the allocator below: the registry tells. */
    return r.tag && bx_registry_find(p) >= 0;
}

/* Verifies live object p of the registry (its shard's lock is held: a free of p waits). */
static void check_live(void *p, unsigned meta, void *arg) {
    if (meta & META_ZERO) return; /* no byte to check */
    const char *op = arg;
    bx_lookup_t r;
    bx_checked_lookup(p, op, &r);
    /* Handed out and not freed, yet not found: the slot's record before it was overwritten. */
    if (!r.tag) bx_fatalf("%s: heap underflow before the start of %p: the record before it is overwritten", op, p);
    verify_record(&r, p, op, true);
}

void bx_checked_check_all(const char *op) {
    if (ring_ready()) {
        bx_lock(&quarantine_lock);
        for (size_t i = 0; i < ring_count; i++) {
            const parked_t *q = &ring[(ring_head + i) % BX_QUARANTINE_SLOTS];
            if (q->sealed) continue; /* no access: nothing can have written it */
            check_fill(q);
            check_trailer(q);
        }
        bx_unlock(&quarantine_lock);
    }
    bx_registry_each(check_live, (void *)op);
}

/* Across fork the forking thread holds the quarantine and the registry: the child gets
 * them whole, not in the middle of another thread's update. */
static void fork_prepare(void) {
    bx_lock(&quarantine_lock);
    bx_registry_fork_prepare();
}
static void fork_release(void) {
    bx_registry_fork_release();
    bx_unlock(&quarantine_lock);
}

void bx_checked_start(void) { pthread_atfork(fork_prepare, fork_release, fork_release); }
