/* copies.c - memcpy, memmove, mempcpy, memset and the str/stp copies, checked against the
 * bounds of our objects when BOBOX_CHECK is 1 or copies (tools/copycheck.h).
 *
 * Each standard name is one indirect jump through `target`: to glibc's own function (the one
 * its IFUNC chose for this CPU, found with dlsym once the allocator has started), or to the
 * checked twin below. Until start-up the targets are glibc's fortified entry points, told the
 * destination is unbounded, which need no lookup (they never reach these names). Not
 * interposed: the fortified names themselves (a program calls them only where the compiler
 * knew the object's size, and they check it), wmemcpy, bcopy, memccpy. Only libbobox.so
 * defines the standard names. */
#include "front/copies.h"
#include <dlfcn.h>
#include <stdatomic.h>
#include <string.h>
#include "base/copy.h"
#include "tools/copycheck.h"

#ifdef BOBOX_OVERRIDE
typedef void *mem_fn(void *, const void *, size_t);
typedef void *set_fn(void *, int, size_t);
typedef char *str_fn(char *, const char *);
typedef char *strn_fn(char *, const char *, size_t);

char *bx_libc_strcpy_chk(char *dst, const char *src, size_t dst_len) __asm__("__strcpy_chk");
char *bx_libc_stpcpy_chk(char *dst, const char *src, size_t dst_len) __asm__("__stpcpy_chk");
char *bx_libc_strncpy_chk(char *dst, const char *src, size_t n, size_t dst_len) __asm__("__strncpy_chk");
char *bx_libc_stpncpy_chk(char *dst, const char *src, size_t n, size_t dst_len) __asm__("__stpncpy_chk");
void *bx_libc_mempcpy_chk(void *dst, const void *src, size_t n, size_t dst_len) __asm__("__mempcpy_chk");

/* Before start-up: glibc's fortified functions (strcat's copy byte by byte: those find the
 * end with strlen and copy with memmove's code). */
static void *early_memmove(void *d, const void *s, size_t n) { return bx_move(d, s, n); }
static void *early_mempcpy(void *d, const void *s, size_t n) { return bx_libc_mempcpy_chk(d, s, n, SIZE_MAX); }
static void *early_memset(void *d, int c, size_t n) { return bx_fill(d, c, n); }
static char *early_strcpy(char *d, const char *s) { return bx_libc_strcpy_chk(d, s, SIZE_MAX); }
static char *early_stpcpy(char *d, const char *s) { return bx_libc_stpcpy_chk(d, s, SIZE_MAX); }
static char *early_strncpy(char *d, const char *s, size_t n) { return bx_libc_strncpy_chk(d, s, n, SIZE_MAX); }
static char *early_stpncpy(char *d, const char *s, size_t n) { return bx_libc_stpncpy_chk(d, s, n, SIZE_MAX); }
static char *early_strncat(char *d, const char *s, size_t n) {
    size_t len = strnlen(s, n);
    char *end = d + strlen(d);
    bx_move(end, s, len);
    end[len] = '\0';
    return d;
}
static char *early_strcat(char *d, const char *s) { return early_strncat(d, s, strlen(s)); }

/* One row per function: its name, glibc's (or the early one until start-up), the jump target. */
enum { MEMCPY, MEMMOVE, MEMPCPY, MEMSET, STRCPY, STPCPY, STRNCPY, STPNCPY, STRCAT, STRNCAT, COPY_FUNCS };
/* memcpy takes memmove's code: glibc's memcpy and memmove are one implementation on x86-64,
 * and programs linked before glibc 2.14 call memcpy on overlapping bytes (their
 * memcpy@GLIBC_2.2.5 was memmove), which this also answers. */
static const char *const libc_names[COPY_FUNCS] = {"memmove", "memmove", "mempcpy", "memset",  "strcpy",
                                                   "stpcpy",  "strncpy", "stpncpy", "strcat", "strncat"};
#define EARLY                                                                                                       \
    {early_memmove, early_memmove, early_mempcpy, early_memset,  early_strcpy,                                     \
     early_stpcpy,  early_strncpy, early_stpncpy, early_strcat, early_strncat}
static void *libc[COPY_FUNCS] = EARLY;
static _Atomic(void *) target[COPY_FUNCS] = EARLY;

#define TARGET(f) atomic_load_explicit(&target[f], memory_order_relaxed)

/* The checked twins: the bounds first, then glibc's function. */
static void *checked_memcpy(void *dst, const void *src, size_t n) {
    bx_copy_check("memcpy", dst, n, true);
    bx_copy_check("memcpy", src, n, false);
    return ((mem_fn *)libc[MEMCPY])(dst, src, n);
}
static void *checked_memmove(void *dst, const void *src, size_t n) {
    bx_copy_check("memmove", dst, n, true);
    bx_copy_check("memmove", src, n, false);
    return ((mem_fn *)libc[MEMMOVE])(dst, src, n);
}
static void *checked_mempcpy(void *dst, const void *src, size_t n) {
    bx_copy_check("mempcpy", dst, n, true);
    bx_copy_check("mempcpy", src, n, false);
    return ((mem_fn *)libc[MEMPCPY])(dst, src, n);
}
static void *checked_memset(void *dst, int c, size_t n) {
    bx_copy_check("memset", dst, n, true);
    return ((set_fn *)libc[MEMSET])(dst, c, n);
}
/* The string copies measure what they will touch first. */
static void check_string(const char *fn, char *dst, const char *src) {
    size_t n = strlen(src) + 1;
    bx_copy_check(fn, dst, n, true);
    bx_copy_check(fn, src, n, false);
}
static char *checked_strcpy(char *dst, const char *src) {
    check_string("strcpy", dst, src);
    return ((str_fn *)libc[STRCPY])(dst, src);
}
static char *checked_stpcpy(char *dst, const char *src) {
    check_string("stpcpy", dst, src);
    return ((str_fn *)libc[STPCPY])(dst, src);
}
/* strncpy and stpncpy write all n bytes (padding with zeros) and read up to the source's end. */
static void check_ncopy(const char *fn, char *dst, const char *src, size_t n) {
    size_t len = strnlen(src, n);
    bx_copy_check(fn, dst, n, true);
    bx_copy_check(fn, src, len < n ? len + 1 : n, false);
}
static char *checked_strncpy(char *dst, const char *src, size_t n) {
    check_ncopy("strncpy", dst, src, n);
    return ((strn_fn *)libc[STRNCPY])(dst, src, n);
}
static char *checked_stpncpy(char *dst, const char *src, size_t n) {
    check_ncopy("stpncpy", dst, src, n);
    return ((strn_fn *)libc[STPNCPY])(dst, src, n);
}
/* strcat and strncat write from the destination's terminator on, and one terminator more. */
static void check_cat(const char *fn, char *dst, const char *src, size_t len) {
    size_t at = strlen(dst);
    bx_copy_check(fn, dst, at + len + 1, true);
    bx_copy_check(fn, src, len + 1, false);
}
static char *checked_strcat(char *dst, const char *src) {
    check_cat("strcat", dst, src, strlen(src));
    return ((str_fn *)libc[STRCAT])(dst, src);
}
static char *checked_strncat(char *dst, const char *src, size_t n) {
    size_t len = strnlen(src, n);
    check_cat("strncat", dst, src, len);
    return ((strn_fn *)libc[STRNCAT])(dst, src, n);
}
static void *const checked[COPY_FUNCS] = {checked_memcpy,  checked_memmove, checked_mempcpy, checked_memset,
                                          checked_strcpy,  checked_stpcpy,  checked_strncpy, checked_stpncpy,
                                          checked_strcat, checked_strncat};

void bx_copies_start(bool check) {
    for (int f = 0; f < COPY_FUNCS; f++) {
        void *fn = dlsym(RTLD_NEXT, libc_names[f]);
        if (fn) libc[f] = fn;
    }
    for (int f = 0; f < COPY_FUNCS; f++)
        atomic_store_explicit(&target[f], check ? checked[f] : libc[f], memory_order_relaxed);
}

BX_API void *memcpy(void *dst, const void *src, size_t n) { return ((mem_fn *)TARGET(MEMCPY))(dst, src, n); }
BX_API void *memmove(void *dst, const void *src, size_t n) { return ((mem_fn *)TARGET(MEMMOVE))(dst, src, n); }
BX_API void *mempcpy(void *dst, const void *src, size_t n) { return ((mem_fn *)TARGET(MEMPCPY))(dst, src, n); }
BX_API void *memset(void *dst, int c, size_t n) { return ((set_fn *)TARGET(MEMSET))(dst, c, n); }
BX_API char *strcpy(char *dst, const char *src) { return ((str_fn *)TARGET(STRCPY))(dst, src); }
BX_API char *stpcpy(char *dst, const char *src) { return ((str_fn *)TARGET(STPCPY))(dst, src); }
BX_API char *strncpy(char *dst, const char *src, size_t n) { return ((strn_fn *)TARGET(STRNCPY))(dst, src, n); }
BX_API char *stpncpy(char *dst, const char *src, size_t n) { return ((strn_fn *)TARGET(STPNCPY))(dst, src, n); }
BX_API char *strcat(char *dst, const char *src) { return ((str_fn *)TARGET(STRCAT))(dst, src); }
BX_API char *strncat(char *dst, const char *src, size_t n) { return ((strn_fn *)TARGET(STRNCAT))(dst, src, n); }
#else
void bx_copies_start(bool check) { (void)check; }
#endif
