/* info.c - malloc_trim, mallopt, malloc_stats, mallinfo, malloc_info and bobox's own
 * statistics and heap check. */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stdio.h>

#include "bobox.h"
#include "front/fastpath.h"
#include "os/options.h"
#include "os/os.h"
#include "tools/checked.h"
#include "tools/stats.h"

BX_API int bobox_malloc_trim(size_t pad) {
    (void)pad;
    bx_ensure_init();
    size_t before = bx_os_released_bytes();
    bx_thread_release_all(BX_RELEASE_TRIM);
    bx_retention_release_shared(BX_RELEASE_TRIM);
    return bx_os_released_bytes() != before;
}

BX_API int bobox_mallopt(int param, int value) {
    (void)param;
    (void)value;
    return 1; /* glibc's tuning knobs have no meaning here; accepted and ignored */
}

BX_API void bobox_malloc_stats(void) {
    bx_ensure_init();
    bobox_print_stats(2);
}

BX_API int bobox_check_heap(void) {
    bx_ensure_init();
    /* Checked mode: every checked object of the process too, aborting as free would. */
    if (BX_UNLIKELY(bx_options.check)) bx_checked_check_all("bobox_check_heap()");
    return bx_tls_heap ? bx_heap_check(bx_tls_heap) : bx_thread_check_shared();
}

BX_API int bobox_thread_own_heap(void) {
    bx_ensure_init();
    if (bx_tls_heap || bx_thread_acquire()) return 0;
    errno = ENOMEM;
    return -1;
}

BX_API void bobox_get_stats(struct bobox_stats *out) {
    bx_ensure_init();
    bx_stats_collect(out);
}

static struct mallinfo2 mallinfo_of_stats(void) {
    struct bobox_stats s;
    bobox_get_stats(&s);
    struct mallinfo2 mi = {0};
    mi.arena = s.mapped_bytes;
    mi.hblks = s.large_objects;
    mi.hblkhd = s.large_bytes;
    mi.uordblks = s.allocated_bytes;
    mi.fordblks = s.mapped_bytes > s.allocated_bytes ? s.mapped_bytes - s.allocated_bytes : 0;
    mi.keepcost = s.large_cached_bytes;
    mi.usmblks = s.peak_mapped_bytes;
    return mi;
}

BX_API struct mallinfo2 bobox_mallinfo2(void) { return mallinfo_of_stats(); }

BX_API struct mallinfo bobox_mallinfo(void) {
    struct mallinfo2 m2 = mallinfo_of_stats();
    struct mallinfo mi = {0};
    /* The old interface has int fields: saturate rather than wrap. */
#define CLAMP(v) ((v) > (size_t)__INT_MAX__ ? __INT_MAX__ : (int)(v))
    mi.arena = CLAMP(m2.arena);
    mi.hblks = CLAMP(m2.hblks);
    mi.hblkhd = CLAMP(m2.hblkhd);
    mi.uordblks = CLAMP(m2.uordblks);
    mi.fordblks = CLAMP(m2.fordblks);
    mi.keepcost = CLAMP(m2.keepcost);
    mi.usmblks = CLAMP(m2.usmblks);
#undef CLAMP
    return mi;
}

/* glibc's layout, so that tools that read it keep working: one heap; the free memory held
 * (mapped and not in use) as "rest", counted in cached superblocks; large objects as "mmap".
 * Options other than 0 return EINVAL, as glibc's does (its manual page says -1 and errno). */
BX_API int bobox_malloc_info(int options, FILE *stream) {
    if (options != 0) return EINVAL;
    struct bobox_stats s;
    bobox_get_stats(&s);
    size_t free_bytes = s.mapped_bytes > s.allocated_bytes ? s.mapped_bytes - s.allocated_bytes : 0;
    /* Written twice: the heap's element, then the process totals. */
    for (int heap = 1; heap >= 0; heap--) {
        if (heap) fputs("<malloc version=\"1\">\n<heap nr=\"0\">\n<sizes>\n</sizes>\n", stream);
        fprintf(stream,
                "<total type=\"fast\" count=\"0\" size=\"0\"/>\n<total type=\"rest\" count=\"%zu\" size=\"%zu\"/>\n",
                s.superblocks_cached, free_bytes);
        if (!heap)
            fprintf(stream, "<total type=\"mmap\" count=\"%zu\" size=\"%zu\"/>\n", s.large_objects, s.large_bytes);
        fprintf(stream,
                "<system type=\"current\" size=\"%zu\"/>\n<system type=\"max\" size=\"%zu\"/>\n"
                "<aspace type=\"total\" size=\"%zu\"/>\n<aspace type=\"mprotect\" size=\"%zu\"/>\n%s",
                s.mapped_bytes, s.peak_mapped_bytes, s.mapped_bytes, s.mapped_bytes,
                heap ? "</heap>\n" : "</malloc>\n");
    }
    return 0;
}

BX_OVERRIDE(malloc_trim, bobox_malloc_trim)
BX_OVERRIDE(mallopt, bobox_mallopt)
BX_OVERRIDE(malloc_stats, bobox_malloc_stats)
BX_OVERRIDE(mallinfo, bobox_mallinfo)
BX_OVERRIDE(mallinfo2, bobox_mallinfo2)
BX_OVERRIDE(malloc_info, bobox_malloc_info)
