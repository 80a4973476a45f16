/* copycheck.c - bounds checks of the program's copies (copycheck.h). */
#include "tools/copycheck.h"
#include "os/options.h"
#include "tools/checked.h"

static const char *plural(size_t n) { return n == 1 ? "" : "s"; }

/* The object of ours holding q: its bounds (the size asked for in checked mode, the slot in
 * the default one) and whether it is free; false when q is in none. */
static bool object_at(const void *q, bx_place_t *place, char **start, size_t *size, bool *freed) {
    bx_locate(q, place);
    if (bx_options.check) return bx_checked_bounds(place, q, start, size, freed);
    if (!place->tag) return false;
    *start = place->start;
    *size = (size_t)(place->end - place->start);
    *freed = place->freed;
    return true;
}

/* The object a copy of n bytes at `at` touches: the one holding its first byte; else the one
 * holding its last byte, when that starts after `at` (the copy starts in a large object's
 * header page, a checked object's front room, or the slot before); else a large object that
 * starts right where the copy ends (it wrote the end of the header page, which the page map
 * does not reach when the object starts a 64 KB chunk). */
static bool object_touched(const void *at, size_t n, bx_place_t *place, char **start, size_t *size, bool *freed) {
    if (object_at(at, place, start, size, freed)) return true;
    const char *end = (const char *)at + n;
    if (end < (const char *)at) return false;
    if (n > 1 && object_at(end - 1, place, start, size, freed) && *start > (const char *)at) return true;
    return object_at(end, place, start, size, freed) && place->tag == BX_TAG_LARGE && *start == end;
}

void bx_copy_check(const char *fn, const void *at, size_t n, bool write) {
    if (!n) return;
    bx_place_t place;
    char *start;
    size_t size;
    bool freed;
    if (!object_touched(at, n, &place, &start, &size, &freed)) return;
    const char *q = at, *way = write ? "writing" : "reading";
    if (freed)
        bx_fatalf("%s(): %s after free: %s %zu byte%s at %p, in object %p, which is free", fn, write ? "write" : "read",
                  way, n, plural(n), at, (void *)start);
    if (q < start)
        bx_fatalf("%s(): heap underflow: %s %zu byte%s at %p starts %zu byte%s before the start of %p (size %zu)", fn,
                  way, n, plural(n), at, (size_t)(start - q), plural((size_t)(start - q)), (void *)start, size);
    size_t room = size - (size_t)(q - start);
    if (n <= room) return;
    /* The default mode knows a slot, not the size asked for: a copy that leaves it may have
     * been meant for the next slot's object, started too early. */
    if (!bx_options.check && place.tag != BX_TAG_LARGE)
        bx_fatalf(
            "%s(): heap overflow: %s %zu byte%s at %p runs %zu byte%s past the end of %p (%zu usable bytes), into "
            "the slot after it (or a heap underflow of the object there)",
            fn, way, n, plural(n), at, n - room, plural(n - room), (void *)start, size);
    if (!bx_options.check)
        bx_fatalf("%s(): heap overflow: %s %zu byte%s at %p runs %zu byte%s past the end of %p (%zu usable bytes)", fn,
                  way, n, plural(n), at, n - room, plural(n - room), (void *)start, size);
    bx_fatalf("%s(): heap overflow: %s %zu byte%s at %p runs %zu byte%s past the end of %p (size %zu)", fn, way, n,
              plural(n), at, n - room, plural(n - room), (void *)start, size);
}
