// probe_copies FN CASE [SIZE]: one call of a copy function on a heap object, for
// test/system/hardening_copies.sh. Prints "object 0x... usable N" first, then performs:
//   ok         a copy of exactly the object's usable bytes (malloc_usable_size: the slot in
//              the default mode, the size asked for in checked mode); checks the result
//   over       one byte more than that
//   under      starting one byte before the object, 2 bytes
//   under1     the one byte before the object
//   read_over  FN reading one byte past the object (memcpy/memmove/mempcpy/strcpy family)
//   uaf        a copy of 8 bytes into the object after free
//   read_uaf   a copy of 8 bytes from the object after free (memcpy, memmove, mempcpy)
//   foreign    a copy past the end of a stack buffer into its neighbour (not ours: passes)
//   overlap    memcpy onto overlapping bytes of the object, which must act as memmove (the
//              memcpy@GLIBC_2.2.5 of programs linked before glibc 2.14 was memmove)
// Exit 0 when the call returned (ok/foreign: with the right result), 1 on a wrong result.
#define _GNU_SOURCE
// The bad operations are the point of this program.
#pragma GCC diagnostic ignored "-Wuse-after-free"
#include <malloc.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// Hides a value from the compiler, so that each call reaches the library's function.
#define HIDE(x) ({ __typeof__(x) h_ = (x); __asm__ volatile("" : "+r"(h_)); h_; })

static char src[1 << 21];
static char out[1 << 21];

// Calls FN writing n bytes at dst (for the string functions: a string of n - 1 characters).
static char *call(const char *fn, char *dst, const char *from, size_t n) {
    if (!strcmp(fn, "memcpy")) return memcpy(dst, from, HIDE(n));
    if (!strcmp(fn, "memmove")) return memmove(dst, from, HIDE(n));
    if (!strcmp(fn, "mempcpy")) return mempcpy(dst, from, HIDE(n));
    if (!strcmp(fn, "memset")) return memset(dst, 'x', HIDE(n));
    char *s = HIDE(out + sizeof out - n); // a string of n - 1 characters
    memset(s, 'y', n - 1);
    s[n - 1] = 0;
    if (from != src) s = (char *)from;   // read cases: the string is the object itself
    if (!strcmp(fn, "strcpy")) return strcpy(dst, HIDE(s));
    if (!strcmp(fn, "stpcpy")) return stpcpy(dst, HIDE(s));
    if (!strcmp(fn, "strncpy")) return strncpy(dst, HIDE(s), HIDE(n));
    if (!strcmp(fn, "stpncpy")) return stpncpy(dst, HIDE(s), HIDE(n));
    if (!strcmp(fn, "strcat")) { dst[0] = 0; return strcat(dst, HIDE(s)); }
    if (!strcmp(fn, "strncat")) { dst[0] = 0; return strncat(dst, HIDE(s), HIDE(from == src ? n - 1 : n)); }
    fprintf(stderr, "probe_copies: unknown function %s\n", fn);
    exit(2);
}

// What FN returns for a call writing n bytes at dst.
static char *expected_return(const char *fn, char *dst, size_t n) {
    if (!strcmp(fn, "mempcpy")) return dst + n;
    if (!strcmp(fn, "stpcpy")) return dst + n - 1;
    if (!strcmp(fn, "stpncpy")) return dst + n - 1; // the terminator written last
    return dst;
}

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: probe_copies FN CASE [SIZE]\n"); return 2; }
    const char *fn = argv[1], *what = argv[2];
    size_t size = argc > 3 ? strtoul(argv[3], NULL, 0) : 24;
    bool is_mem = !strncmp(fn, "mem", 3);
    for (size_t i = 0; i < sizeof src; i++) src[i] = (char)(i * 7 + 1) ? (char)(i * 7 + 1) : 1;
    char *p = HIDE((char *)malloc(size));
    size_t usable = malloc_usable_size(p);
    printf("object %p usable %zu\n", (void *)p, usable);
    fflush(stdout);
    if (!strcmp(what, "ok")) {
        char *r = call(fn, p, src, usable);
        if (r != expected_return(fn, p, usable)) { fprintf(stderr, "%s returned %p, not %p\n", fn, (void *)r, (void *)expected_return(fn, p, usable)); return 1; }
        if (!strcmp(fn, "memset")) { for (size_t i = 0; i < usable; i++) if (p[i] != 'x') return 1; }
        else if (is_mem) { if (memcmp(p, src, usable)) return 1; }
        else if (strlen(p) != usable - 1 || p[0] != 'y') { fprintf(stderr, "%s: wrong string\n", fn); return 1; }
        free(p);
        return 0;
    }
    if (!strcmp(what, "over")) call(fn, p, src, usable + 1);
    else if (!strcmp(what, "under")) call(fn, HIDE(p) - 1, src, 2);
    else if (!strcmp(what, "under1")) call(fn, HIDE(p) - 1, src, 1);
    else if (!strcmp(what, "read_over")) {
        if (!is_mem) memset(p, 'z', usable); // no terminator inside the object
        call(fn, out, p, usable + 1); // the string functions read p's bytes up to a terminator
    } else if (!strcmp(what, "uaf")) {
        free(p);
        call(fn, HIDE(p), src, 8);
    } else if (!strcmp(what, "read_uaf")) {
        free(p);
        call(fn, out, HIDE(p), 8);
    } else if (!strcmp(what, "foreign")) {
        struct { char a[16], b[16]; } two;
        char *r = call(fn, HIDE((char *)two.a), src, 20);
        if (r != expected_return(fn, two.a, 20)) return 1;
    } else if (!strcmp(what, "overlap")) {
        char *q = HIDE((char *)malloc(4096)), want[4096];
        for (int i = 0; i < 4096; i++) q[i] = want[i] = (char)(i % 251);
        memmove(want + 1, want, 4000); // the array on the stack: glibc's own memmove
        memcpy(HIDE(q) + 1, q, HIDE((size_t)4000));
        if (memcmp(q, want, 4096)) { fprintf(stderr, "memcpy of overlapping bytes differs from memmove\n"); return 1; }
    } else { fprintf(stderr, "probe_copies: unknown case %s\n", what); return 2; }
    return 0;
}
