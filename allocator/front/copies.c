/* copies.c - memcpy, memmove, mempcpy, memset and the str/stp copies, checked against the
 * bounds of our objects when BOBOX_CHECK is 1 or copies (tools/copycheck.h), and otherwise
 * glibc's own selected implementations behind one flag test: its fortified entry points, told
 * that the destination is unbounded (the fortified names themselves are not interposed: a
 * program calls them only where the compiler knew the object's size and checks it there).
 * Only libbobox.so defines the standard names. */
#include <string.h>
#include "base/copy.h"
#include "tools/copycheck.h"

#ifdef BOBOX_OVERRIDE
char *bx_libc_strcpy_chk(char *dst, const char *src, size_t dst_len) __asm__("__strcpy_chk");
char *bx_libc_stpcpy_chk(char *dst, const char *src, size_t dst_len) __asm__("__stpcpy_chk");
char *bx_libc_strncpy_chk(char *dst, const char *src, size_t n, size_t dst_len) __asm__("__strncpy_chk");
char *bx_libc_stpncpy_chk(char *dst, const char *src, size_t n, size_t dst_len) __asm__("__stpncpy_chk");
void *bx_libc_mempcpy_chk(void *dst, const void *src, size_t n, size_t dst_len) __asm__("__mempcpy_chk");

/* Each standard name tests the flag and tail-calls glibc's function, or its checked twin
 * below: with the check inline, the compiler saved registers on the unchecked path too. */
static BX_NOINLINE void *checked_memcpy(void *dst, const void *src, size_t n) {
    bx_copy_check("memcpy", dst, n, true);
    bx_copy_check("memcpy", src, n, false);
    return bx_move(dst, src, n);
}
static BX_NOINLINE void *checked_memmove(void *dst, const void *src, size_t n) {
    bx_copy_check("memmove", dst, n, true);
    bx_copy_check("memmove", src, n, false);
    return bx_move(dst, src, n);
}
static BX_NOINLINE void *checked_mempcpy(void *dst, const void *src, size_t n) {
    bx_copy_check("mempcpy", dst, n, true);
    bx_copy_check("mempcpy", src, n, false);
    return bx_libc_mempcpy_chk(dst, src, n, SIZE_MAX);
}
static BX_NOINLINE void *checked_memset(void *dst, int c, size_t n) {
    bx_copy_check("memset", dst, n, true);
    return bx_fill(dst, c, n);
}
/* The string copies measure what they will touch first. */
static BX_NOINLINE char *checked_strcpy(char *dst, const char *src) {
    size_t n = strlen(src) + 1;
    bx_copy_check("strcpy", dst, n, true);
    bx_copy_check("strcpy", src, n, false);
    return bx_libc_strcpy_chk(dst, src, SIZE_MAX);
}
static BX_NOINLINE char *checked_stpcpy(char *dst, const char *src) {
    size_t n = strlen(src) + 1;
    bx_copy_check("stpcpy", dst, n, true);
    bx_copy_check("stpcpy", src, n, false);
    return bx_libc_stpcpy_chk(dst, src, SIZE_MAX);
}
/* strncpy and stpncpy write all n bytes (padding with zeros) and read up to the source's end. */
static void check_ncopy(const char *fn, char *dst, const char *src, size_t n) {
    size_t len = strnlen(src, n);
    bx_copy_check(fn, dst, n, true);
    bx_copy_check(fn, src, len < n ? len + 1 : n, false);
}
static BX_NOINLINE char *checked_strncpy(char *dst, const char *src, size_t n) {
    check_ncopy("strncpy", dst, src, n);
    return bx_libc_strncpy_chk(dst, src, n, SIZE_MAX);
}
static BX_NOINLINE char *checked_stpncpy(char *dst, const char *src, size_t n) {
    check_ncopy("stpncpy", dst, src, n);
    return bx_libc_stpncpy_chk(dst, src, n, SIZE_MAX);
}
/* strcat and strncat write from the destination's terminator on, and one terminator more. */
static void check_cat(const char *fn, char *dst, const char *src, size_t n) {
    size_t len = n == SIZE_MAX ? strlen(src) : strnlen(src, n), at = strlen(dst);
    bx_copy_check(fn, dst, at + len + 1, true);
    bx_copy_check(fn, src, len < n ? len + 1 : n, false);
}
/* glibc's fortified strcat and strncat copy byte by byte: these find the end and copy with
 * its vector strlen and memcpy instead. */
static char *cat(char *dst, const char *src, size_t n) {
    size_t len = n == SIZE_MAX ? strlen(src) : strnlen(src, n);
    char *end = dst + strlen(dst);
    bx_copy(end, src, len);
    end[len] = '\0';
    return dst;
}
static BX_NOINLINE char *checked_strcat(char *dst, const char *src) {
    check_cat("strcat", dst, src, SIZE_MAX);
    return cat(dst, src, SIZE_MAX);
}
static BX_NOINLINE char *checked_strncat(char *dst, const char *src, size_t n) {
    check_cat("strncat", dst, src, n);
    return cat(dst, src, n);
}

#define CHECKED(name, ...) \
    if (BX_UNLIKELY(bx_copies_checked)) return checked_##name(__VA_ARGS__)

/* memmove's code: glibc's memcpy and memmove are one implementation on x86-64, and programs
 * linked before glibc 2.14 call memcpy on overlapping bytes (their memcpy@GLIBC_2.2.5 was
 * memmove), which this definition also answers. */
BX_API void *memcpy(void *dst, const void *src, size_t n) {
    CHECKED(memcpy, dst, src, n);
    return bx_move(dst, src, n);
}
BX_API void *memmove(void *dst, const void *src, size_t n) {
    CHECKED(memmove, dst, src, n);
    return bx_move(dst, src, n);
}
BX_API void *mempcpy(void *dst, const void *src, size_t n) {
    CHECKED(mempcpy, dst, src, n);
    return bx_libc_mempcpy_chk(dst, src, n, SIZE_MAX);
}
BX_API void *memset(void *dst, int c, size_t n) {
    CHECKED(memset, dst, c, n);
    return bx_fill(dst, c, n);
}
BX_API char *strcpy(char *dst, const char *src) {
    CHECKED(strcpy, dst, src);
    return bx_libc_strcpy_chk(dst, src, SIZE_MAX);
}
BX_API char *stpcpy(char *dst, const char *src) {
    CHECKED(stpcpy, dst, src);
    return bx_libc_stpcpy_chk(dst, src, SIZE_MAX);
}
BX_API char *strncpy(char *dst, const char *src, size_t n) {
    CHECKED(strncpy, dst, src, n);
    return bx_libc_strncpy_chk(dst, src, n, SIZE_MAX);
}
BX_API char *stpncpy(char *dst, const char *src, size_t n) {
    CHECKED(stpncpy, dst, src, n);
    return bx_libc_stpncpy_chk(dst, src, n, SIZE_MAX);
}
BX_API char *strcat(char *dst, const char *src) {
    CHECKED(strcat, dst, src);
    return cat(dst, src, SIZE_MAX);
}
BX_API char *strncat(char *dst, const char *src, size_t n) {
    CHECKED(strncat, dst, src, n);
    return cat(dst, src, n);
}
#endif
