/* stats.c - sums the per-heap counters and the global ones; the exit report. */
#include "tools/stats.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "thread/thread.h"
#include "mem/large.h"
#include "base/lock.h"
#include "mem/node.h"
#include "os/options.h"
#include "os/os.h"
#include "base/fdout.h"
#include "tools/prof.h"

static void add_heap(bx_heap_t *h, void *arg) {
    struct bobox_stats *s = arg;
    s->medium_allocs += h->counters.medium;
    s->large_allocs += h->counters.large;
    s->remote_frees += h->counters.remote_frees;
    for (unsigned i = 0; i < BX_SMALL_BINS; i++) {
        s->small_allocs += bx_bin_allocs(&h->small[i]);
        s->allocated_bytes += bx_bin_allocated(&h->small[i]) * h->small[i].size;
    }
    s->small_allocs += h->counters.mixed;
    s->allocated_bytes += h->counters.medium_live_bytes;
    if (h->state == BX_HEAP_LIVE)
        s->heaps_live++;
    else if (h->state == BX_HEAP_ABANDONED)
        s->heaps_abandoned++;
}

static void count_shared(bx_heap_t *h, void *arg) {
    if (h->state == BX_HEAP_SHARED) ++*(size_t *)arg;
}

size_t bx_stats_shared_heaps(void) {
    size_t n = 0;
    bx_thread_for_each_heap(count_shared, &n);
    return n;
}

void bx_stats_collect(struct bobox_stats *s) {
    memset(s, 0, sizeof *s);
    bx_thread_for_each_heap(add_heap, s);
    s->large_objects = bx_large_live_objects();
    s->large_bytes = bx_large_live_bytes();
    s->allocated_bytes += s->large_bytes + bx_mixed_live_bytes();
    s->mapped_bytes = bx_os_mapped_bytes();
    s->peak_mapped_bytes = bx_os_peak_mapped_bytes();
    s->released_bytes = bx_os_released_bytes();
    s->superblocks_in_use = bx_node_superblocks_in_use();
    s->superblocks_cached = bx_node_superblocks_cached();
    s->large_cached_bytes = bx_large_cached_bytes();
}

BX_API void bobox_print_stats(int fd) {
    struct bobox_stats s;
    bx_stats_collect(&s);
    bx_message_fd(fd, "bobox: allocations: small %zu, medium %zu, large %zu; remote frees %zu\n", s.small_allocs,
                  s.medium_allocs, s.large_allocs, s.remote_frees);
    bx_message_fd(fd, "bobox: memory: in use %zu KB, mapped %zu KB (peak %zu KB), given back to the OS %zu KB\n",
                  s.allocated_bytes / 1024, s.mapped_bytes / 1024, s.peak_mapped_bytes / 1024, s.released_bytes / 1024);
    for (int node = 0; node < bx_node_count(); node++)
        bx_message_fd(fd, "bobox: node %d: superblocks in use %zu, cached %zu\n", node,
                      bx_node_superblocks_in_use_on(node), bx_node_superblocks_cached_on(node));
    bx_message_fd(fd, "bobox: large objects %zu (%zu KB), large cache %zu KB; heaps live %zu, shared %zu, abandoned %zu\n",
                  s.large_objects, s.large_bytes / 1024, s.large_cached_bytes / 1024, s.heaps_live,
                  bx_stats_shared_heaps(), s.heaps_abandoned);
    bx_message_fd(fd, "bobox: mixed blocks %zu, their live objects %zu KB\n", bx_mixed_blocks(),
                  bx_mixed_live_bytes() / 1024);
}

/* ---- the JSON report ------------------------------------------------------------------- */

/* Per size range and small size class: what bobox_stats sums. */
typedef struct {
    size_t small_allocs[BX_SMALL_BINS], small_live[BX_SMALL_BINS];
    size_t small_live_bytes, medium_live_bytes, remote_frees;
} ranges_t;

static void add_ranges(bx_heap_t *h, void *arg) {
    ranges_t *r = arg;
    for (unsigned i = 0; i < BX_SMALL_BINS; i++) {
        r->small_allocs[i] += bx_bin_allocs(&h->small[i]);
        r->small_live[i] += bx_bin_allocated(&h->small[i]);
        r->small_live_bytes += bx_bin_allocated(&h->small[i]) * h->small[i].size;
    }
    r->medium_live_bytes += h->counters.medium_live_bytes;
}

/* A JSON string: quotes, backslashes and control characters escaped. */
static void json_string(bx_fdout_t *j, const char *s) {
    bx_fdout_fmt(j, "\"");
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            bx_fdout_fmt(j, "\\%c", c);
        else if (c < 0x20)
            bx_fdout_fmt(j, "\\u%04x", c);
        else
            bx_fdout_fmt(j, "%c", c);
    }
    bx_fdout_fmt(j, "\"");
}

BX_API int bobox_stats_json(int fd) {
    struct bobox_stats s;
    bx_stats_collect(&s);
    static ranges_t r; /* large for a stack; filled under this lock */
    static bx_lock_t ranges_lock = BX_LOCK_INIT;
    bx_lock(&ranges_lock);
    memset(&r, 0, sizeof r);
    bx_thread_for_each_heap(add_ranges, &r);
    bx_fdout_t j = {.fd = fd};
    bx_fdout_fmt(&j, "{\"version\": 1, \"pid\": %d, ", (int)getpid());
    bx_fdout_fmt(&j,
                 "\"memory\": {\"in_use_bytes\": %zu, \"mapped_bytes\": %zu, \"peak_mapped_bytes\": %zu, "
                 "\"released_bytes\": %zu}, ",
                 s.allocated_bytes, s.mapped_bytes, s.peak_mapped_bytes, s.released_bytes);
    bx_fdout_fmt(&j, "\"remote_frees\": %zu, ", s.remote_frees);
    bx_fdout_fmt(
        &j, "\"size_ranges\": {\"small\": {\"max_bytes\": %zu, \"allocs\": %zu, \"live_bytes\": %zu, \"classes\": [",
        (size_t)BX_SMALL_MAX, s.small_allocs, r.small_live_bytes);
    bool first = true;
    for (unsigned i = 0; i < BX_SMALL_BINS; i++) {
        if (!r.small_allocs[i]) continue;
        bx_fdout_fmt(&j, "%s{\"size\": %u, \"allocs\": %zu, \"live_objects\": %zu}", first ? "" : ", ",
                     bx_small_size[i], r.small_allocs[i], r.small_live[i]);
        first = false;
    }
    bx_fdout_fmt(&j, "]}, \"medium\": {\"max_bytes\": %zu, \"allocs\": %zu, \"live_bytes\": %zu}, ",
                 (size_t)BX_MEDIUM_MAX, s.medium_allocs, r.medium_live_bytes);
    bx_fdout_fmt(&j, "\"large\": {\"allocs\": %zu, \"live_objects\": %zu, \"live_bytes\": %zu}}, ", s.large_allocs,
                 s.large_objects, s.large_bytes);
    bx_unlock(&ranges_lock);
    bx_fdout_fmt(&j, "\"nodes\": [");
    for (int node = 0; node < bx_node_count(); node++)
        bx_fdout_fmt(&j, "%s{\"node\": %d, \"superblocks_in_use\": %zu, \"superblocks_cached\": %zu}", node ? ", " : "",
                     node, bx_node_superblocks_in_use_on(node), bx_node_superblocks_cached_on(node));
    bx_fdout_fmt(&j,
                 "], \"caches\": {\"superblocks_cached\": %zu, \"superblock_bytes\": %zu, \"large_cached_bytes\": %zu, "
                 "\"limit_bytes\": %zu, \"decay_ms\": %llu}, ",
                 s.superblocks_cached, (size_t)BX_SUPERBLOCK_SIZE, s.large_cached_bytes, bx_options.cache_bytes,
                 (unsigned long long)bx_options.decay_ms);
    bx_fdout_fmt(&j, "\"heaps\": {\"live\": %zu, \"shared\": %zu, \"abandoned\": %zu, \"superblocks_in_use\": %zu}, ",
                 s.heaps_live, bx_stats_shared_heaps(), s.heaps_abandoned, s.superblocks_in_use);
    struct bx_prof_state p;
    bx_prof_state(&p);
    bx_fdout_fmt(&j, "\"profiler\": {\"enabled\": %s, \"prefix\": ", bx_prof_on ? "true" : "false");
    if (bx_prof_on)
        json_string(&j, bx_options.prof_prefix);
    else
        bx_fdout_fmt(&j, "null");
    bx_fdout_fmt(&j,
                 ", \"rate_bytes\": %zu, \"samples\": %zu, \"live_samples\": %zu, \"live_sampled_bytes\": %zu, "
                 "\"stacks\": %zu, \"dropped\": %zu, \"dumps\": %zu}}\n",
                 p.rate, p.samples, p.live_samples, p.live_sampled_bytes, p.stacks, p.dropped, p.dumps);
    bx_fdout_flush(&j);
    if (j.failed) {
        errno = j.failed;
        return -1;
    }
    return 0;
}

/* Programs may close stderr before exiting (coreutils' close_stdout does), so the exit
 * report goes to a private copy of it taken at start-up. */
static int report_fd = -1;

void bx_stats_init(void) {
    if (bx_options.stats) report_fd = fcntl(2, F_DUPFD_CLOEXEC, 64);
}

__attribute__((destructor)) static void report_at_exit(void) {
    if (!bx_options.stats) return;
    if (bx_options.stats_json)
        bobox_stats_json(report_fd >= 0 ? report_fd : 2);
    else
        bobox_print_stats(report_fd >= 0 ? report_fd : 2);
}
