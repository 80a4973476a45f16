/* bobox.h - public interface of the Bobox allocator.
 *
 * libbobox.so exports the standard malloc family (malloc, free, ...) and the
 * same functions under a bobox_ prefix. libbobox.a exports only the prefixed
 * names, so a program can link the allocator without replacing its malloc. */
#ifndef BOBOX_H
#define BOBOX_H

#include <stddef.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

void *bobox_malloc(size_t size);
void bobox_free(void *ptr);
void *bobox_calloc(size_t count, size_t size);
void *bobox_realloc(void *ptr, size_t size);
void *bobox_reallocarray(void *ptr, size_t count, size_t size);
int bobox_posix_memalign(void **out, size_t alignment, size_t size);
void *bobox_aligned_alloc(size_t alignment, size_t size);
void *bobox_memalign(size_t alignment, size_t size);
void *bobox_valloc(size_t size);
void *bobox_pvalloc(size_t size);
size_t bobox_malloc_usable_size(void *ptr);
void bobox_free_sized(void *ptr, size_t size);
void bobox_free_aligned_sized(void *ptr, size_t alignment, size_t size);
int bobox_malloc_trim(size_t pad);
int bobox_mallopt(int param, int value);
void bobox_malloc_stats(void);

#ifdef __GLIBC__
struct mallinfo bobox_mallinfo(void);
struct mallinfo2 bobox_mallinfo2(void);
/* glibc's XML report (options must be 0, else EINVAL): one heap, from the counters below. */
int bobox_malloc_info(int options, FILE *stream);
#endif

/* 1 if ptr is the address of a live allocation that this allocator handed out. */
int bobox_owns(const void *ptr);

/* Validates every structure of the calling thread's heap (bins, chain records, block
 * lists, superblock heaps), or of the shared heaps for a thread without one of its own;
 * 1 if consistent, 0 otherwise. */
int bobox_check_heap(void);

/* A thread allocates from a heap that the threads of its CPU share, under a lock, until it
 * proves busy (1,024 mallocs and frees within 100 ms); then it gets a heap of its own, with
 * no lock and no atomic operation on its common paths. This gives the calling thread its own
 * heap now: for a thread about to be busy whose first calls must not wait. 0 on success, -1
 * with errno ENOMEM when no memory could be had. */
int bobox_thread_own_heap(void);

/* Counters, summed over all threads (approximate while threads run). */
struct bobox_stats {
    size_t small_allocs, medium_allocs, large_allocs; /* calls served per size range */
    size_t remote_frees;                              /* frees of objects owned by another thread's heap */
    size_t allocated_bytes;                           /* handed out and not freed (bin sizes) */
    size_t large_objects, large_bytes;                /* live large (mmap'ed) objects */
    size_t mapped_bytes;                              /* currently mapped from the OS */
    size_t peak_mapped_bytes;
    size_t superblocks_in_use; /* held by thread heaps */
    size_t superblocks_cached; /* free, kept by the node allocators */
    size_t large_cached_bytes; /* freed large objects kept for reuse */
    size_t released_bytes;     /* total given back to the OS (munmap) */
    size_t heaps_live, heaps_abandoned;
};
void bobox_get_stats(struct bobox_stats *out);
/* Writes the BOBOX_STATS report to the file descriptor. */
void bobox_print_stats(int fd);
/* The same report as one JSON object (BOBOX_STATS=json; schema: docs/stats.schema.json):
 * per size range and size class, per NUMA node, caches, heaps, remote frees, profiler.
 * 0, or -1 with errno when it cannot be written whole. */
int bobox_stats_json(int fd);

/* The heap profiler (BOBOX_PROF=PREFIX, docs/profiling.md): writes the profile of the
 * sampled live objects to `path` (gperftools' heap-profile format, for google-pprof) and
 * folded stacks to `path`.folded; NULL: PREFIX.PID.NNNN.heap. 0, or -1 with errno
 * (ENOTSUP: profiling is off; or why the file could not be written). */
int bobox_prof_dump(const char *path);

/* jemalloc's control interface, answered from bobox's state (docs/api.md, "mallctl"):
 * libbobox.so also exports these as mallctl, mallctlnametomib, mallctlbymib and
 * malloc_stats_print, for programs linked with jemalloc. Names: jemalloc's that programs use
 * (version, epoch, stats.*, arenas.narenas, arena.<i>.purge/decay, thread.*, opt.*) and
 * bobox's own ("bobox.decay_ms", "bobox.purge", "bobox.prof.dump", "bobox.check_heap",
 * "bobox.stats.*"). 0, or an error number: ENOENT unknown name, EINVAL wrong size, EPERM a
 * write to a read-only name or a read of a write-only one. */
#define BOBOX_VERSION "0.1.0"
int bobox_ctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen);
int bobox_ctlnametomib(const char *name, size_t *mibp, size_t *miblenp);
int bobox_ctlbymib(const size_t *mib, size_t miblen, void *oldp, size_t *oldlenp, void *newp, size_t newlen);
void bobox_stats_print(void (*write_cb)(void *, const char *), void *cbopaque, const char *opts);

#ifdef __cplusplus
}
#endif
#endif
