/* aligned.c - posix_memalign, aligned_alloc, memalign, valloc, pvalloc. */
#define _GNU_SOURCE
#include <errno.h>

#include "bobox.h"
#include "front/fastpath.h"
#include "os/options.h"
#include "tools/checked.h"

void *bx_alloc_aligned(size_t alignment, size_t size) {
    if (alignment <= BX_ALIGNMENT) return bobox_malloc(size);
    bx_ensure_init();
    if (BX_UNLIKELY(bx_options.check)) return bx_checked_alloc(alignment, size, BX_FORM_MALLOC);
    return bx_alloc_aligned_unchecked(alignment, size);
}

BX_API int bobox_posix_memalign(void **out, size_t alignment, size_t size) {
    if (!bx_is_pow2(alignment) || alignment % sizeof(void *)) return EINVAL;
    int saved = errno;
    void *p = bx_alloc_aligned(alignment, size);
    errno = saved;
    if (!p) return ENOMEM;
    *out = p;
    return 0;
}

BX_API void *bobox_aligned_alloc(size_t alignment, size_t size) {
    if (!bx_is_pow2(alignment)) {
        errno = EINVAL;
        return NULL;
    }
    return bx_alloc_aligned(alignment, size);
}

BX_API void *bobox_memalign(size_t alignment, size_t size) {
    /* glibc: a non-power-of-two alignment is rounded up to the next power of two. */
    if (alignment > ((size_t)1 << (sizeof(size_t) * 8 - 1))) {
        errno = EINVAL;
        return NULL;
    }
    size_t a = alignment < BX_ALIGNMENT ? BX_ALIGNMENT : alignment;
    while (!bx_is_pow2(a)) a = (a | (a - 1)) + 1;
    return bx_alloc_aligned(a, size);
}

BX_API void *bobox_valloc(size_t size) { return bx_alloc_aligned(bx_os_page_size(), size); }

BX_API void *bobox_pvalloc(size_t size) {
    size_t page = bx_os_page_size();
    if (size > PTRDIFF_MAX - page) {
        errno = ENOMEM;
        return NULL;
    }
    return bx_alloc_aligned(page, size ? bx_align_up(size, page) : page);
}

BX_OVERRIDE(posix_memalign, bobox_posix_memalign)
BX_OVERRIDE(__posix_memalign, bobox_posix_memalign)
BX_OVERRIDE(aligned_alloc, bobox_aligned_alloc)
BX_OVERRIDE(memalign, bobox_memalign)
BX_OVERRIDE(__libc_memalign, bobox_memalign)
BX_OVERRIDE(valloc, bobox_valloc)
BX_OVERRIDE(__libc_valloc, bobox_valloc)
BX_OVERRIDE(pvalloc, bobox_pvalloc)
BX_OVERRIDE(__libc_pvalloc, bobox_pvalloc)
