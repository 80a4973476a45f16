/* copy.h - the allocator's own copies and fills, which never reach its interposed memcpy,
 * memmove and memset (front/copies.c): those check the program's copies against object
 * bounds, and checked mode's fills write canaries outside them on purpose. glibc's fortified
 * entry points with an unbounded destination are its own selected implementations; they are
 * declared under other names, so that the compiler does not fold them back into memcpy. */
#ifndef BX_COPY_H
#define BX_COPY_H

#include <stddef.h>
#include <stdint.h>

void *bx_libc_memcpy_chk(void *dst, const void *src, size_t n, size_t dst_len) __asm__("__memcpy_chk");
void *bx_libc_memmove_chk(void *dst, const void *src, size_t n, size_t dst_len) __asm__("__memmove_chk");
void *bx_libc_memset_chk(void *dst, int c, size_t n, size_t dst_len) __asm__("__memset_chk");

static inline void *bx_copy(void *dst, const void *src, size_t n) { return bx_libc_memcpy_chk(dst, src, n, SIZE_MAX); }
static inline void *bx_move(void *dst, const void *src, size_t n) { return bx_libc_memmove_chk(dst, src, n, SIZE_MAX); }
static inline void *bx_fill(void *dst, int c, size_t n) { return bx_libc_memset_chk(dst, c, n, SIZE_MAX); }

#endif
