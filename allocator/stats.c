/* stats.c - sums the per-heap counters and the global ones; the exit report. */
#include "stats.h"

#include <fcntl.h>
#include <string.h>

#include "thread.h"
#include "large.h"
#include "node.h"
#include "options.h"
#include "os.h"

static void add_heap(bx_heap_t *h, void *arg) {
    struct bobox_stats *s = arg;
    s->medium_allocs += h->counters.medium;
    s->large_allocs += h->counters.large;
    s->remote_frees += h->counters.remote_frees;
    for (unsigned i = 0; i < BX_SMALL_BINS; i++) {
        s->small_allocs += h->small[i].allocs;
        s->allocated_bytes += bx_bin_allocated(&h->small[i]) * h->small[i].size;
    }
    s->allocated_bytes += h->counters.medium_live_bytes;
    if (h->state == BX_HEAP_LIVE)
        s->heaps_live++;
    else if (h->state == BX_HEAP_ABANDONED)
        s->heaps_abandoned++;
}

void bx_stats_collect(struct bobox_stats *s) {
    memset(s, 0, sizeof *s);
    bx_thread_for_each_heap(add_heap, s);
    s->large_objects = bx_large_live_objects();
    s->large_bytes = bx_large_live_bytes();
    s->allocated_bytes += s->large_bytes;
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
    bx_message_fd(fd, "bobox: large objects %zu (%zu KB), large cache %zu KB; heaps live %zu, abandoned %zu\n",
                  s.large_objects, s.large_bytes / 1024, s.large_cached_bytes / 1024, s.heaps_live, s.heaps_abandoned);
}

/* Programs may close stderr before exiting (coreutils' close_stdout does), so the exit
 * report goes to a private copy of it taken at start-up. */
static int report_fd = -1;

void bx_stats_init(void) {
    if (bx_options.stats) report_fd = fcntl(2, F_DUPFD_CLOEXEC, 64);
}

__attribute__((destructor)) static void report_at_exit(void) {
    if (bx_options.stats) bobox_print_stats(report_fd >= 0 ? report_fd : 2);
}
