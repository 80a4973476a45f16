/* live.c - the live statistics file (live.h). */
#define _GNU_SOURCE
#include "tools/live.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/copy.h"
#include "base/lock.h"
#include "mem/node.h"
#include "os/options.h"
#include "os/os.h"
#include "os/sysfile.h"
#include "thread/reclaimer.h"
#include "thread/thread.h"
#include "tools/stats.h"

static char *map;           /* the file, mapped shared; NULL: none */
static pid_t map_pid;       /* the process that made it (a fork child makes its own) */
static char path[4096 + 32];
static unsigned long long seq, start_ticks;
static bx_lock_t lock = BX_LOCK_INIT;

/* The process's start time (/proc/self/stat's 22nd field, in clock ticks since boot): with
 * the PID, it tells this process from a later one under the same PID. */
static unsigned long long start_time(void) {
    char stat[1024];
    if (!bx_os_read_file("/proc/self/stat", stat, sizeof stat)) return 0;
    char *c = strrchr(stat, ')');
    if (!c) return 0;
    for (int field = 2; *c && field < 22; c++)
        if (*c == ' ') field++;
    unsigned long long v = 0;
    for (; *c >= '0' && *c <= '9'; c++) v = v * 10 + (unsigned long long)(*c - '0');
    return v;
}

/* Opens dir/bobox-PID.stats for this user alone: created 0600, or one left by an earlier
 * process of ours under this PID (an exec, a reboot's PID reuse), taken over only if it is a
 * regular file of ours that no one else can read. */
static int open_in(const char *dir, pid_t pid) {
    if (!dir || dir[0] != '/' || strlen(dir) > 4096) return -1;
    snprintf(path, sizeof path, "%s/bobox-%d.stats", dir, (int)pid);
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 && errno == EEXIST) {
        fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077))) {
            close(fd);
            return -1;
        }
    }
    if (fd >= 0 && ftruncate(fd, BX_LIVE_FILE_BYTES) != 0) {
        close(fd);
        unlink(path);
        return -1;
    }
    return fd;
}

/* Called with the lock held. */
static void create(void) {
    pid_t pid = getpid();
    const char *dirs[] = {getenv("XDG_RUNTIME_DIR"), "/dev/shm", "/tmp"};
    int fd = -1;
    for (unsigned i = 0; i < 3 && fd < 0; i++) fd = open_in(dirs[i], pid);
    if (fd < 0) {
        static bool said;
        if (!said)
            bx_message("bobox: BOBOX_STATS_LIVE: no directory takes the statistics file (errno %d); none kept\n", errno);
        said = true;
        return;
    }
    void *m = bx_os_map_file(fd, BX_LIVE_FILE_BYTES);
    close(fd);
    if (!m) {
        unlink(path);
        return;
    }
    map = m;
    map_pid = pid;
    seq = 0;
    start_ticks = start_time();
}

typedef struct {
    size_t small_allocs, small_bytes, medium_bytes;
} ranges_t;

static void add_heap(bx_heap_t *h, void *arg) {
    ranges_t *r = arg;
    for (unsigned i = 0; i < BX_SMALL_BINS; i++) {
        r->small_allocs += bx_bin_allocs(&h->small[i]);
        r->small_bytes += bx_bin_allocated(&h->small[i]) * h->small[i].size;
    }
    r->medium_bytes += h->counters.medium_live_bytes;
}

typedef struct {
    char *buf;
    size_t len, cap;
} text_t;

__attribute__((format(printf, 2, 3))) static void put(text_t *t, const char *fmt, ...) {
    if (t->len >= t->cap) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap); /* numbers only: no malloc */
    va_end(ap);
    if (n > 0) t->len += (size_t)n < t->cap - t->len ? (size_t)n : t->cap - t->len - 1;
}

static void header(unsigned long long s) {
    char line[160];
    int n = snprintf(line, sizeof line, BX_LIVE_HEADER, s, (unsigned long long)bx_now_ms(), (int)map_pid,
                     start_ticks);
    bx_copy(map, line, (size_t)n);
}

static void refresh(void) {
    bx_lock(&lock);
    if (map && map_pid != getpid()) { /* a fork child: the parent's file is not ours */
        bx_os_unmap_file(map, BX_LIVE_FILE_BYTES);
        map = NULL;
    }
    if (!map) create();
    if (!map) {
        bx_unlock(&lock);
        return;
    }
    struct bobox_stats s;
    bx_stats_collect(&s);
    ranges_t r = {0};
    bx_thread_for_each_heap(add_heap, &r);
    size_t vm = 0, resident = 0, shared = 0;
    bx_os_statm(&vm, &resident, &shared);
    static char body[BX_LIVE_FILE_BYTES];
    text_t t = {body, 0, sizeof body - 200}; /* room left for the header */
    put(&t, "in use         %zu KB\n", s.allocated_bytes / 1024);
    put(&t, "mapped         %zu KB (peak %zu KB)\n", s.mapped_bytes / 1024, s.peak_mapped_bytes / 1024);
    put(&t, "resident       %zu KB (the process's anonymous memory)\n",
        (resident > shared ? resident - shared : 0) / 1024);
    put(&t, "given back     %zu KB\n", s.released_bytes / 1024);
    put(&t, "small          %zu allocations, %zu KB in use\n", s.small_allocs, r.small_bytes / 1024);
    put(&t, "medium         %zu allocations, %zu KB in use\n", s.medium_allocs, r.medium_bytes / 1024);
    put(&t, "large          %zu allocations, %zu objects, %zu KB in use, cache %zu KB\n", s.large_allocs,
        s.large_objects, s.large_bytes / 1024, s.large_cached_bytes / 1024);
    for (int node = 0; node < bx_node_count(); node++)
        put(&t, "node %-9d superblocks in use %zu, cached %zu\n", node, bx_node_superblocks_in_use_on(node),
            bx_node_superblocks_cached_on(node));
    put(&t, "remote frees   %zu\n", s.remote_frees);
    put(&t, "heaps          %zu live, %zu shared, %zu abandoned\n", s.heaps_live, bx_stats_shared_heaps(),
        s.heaps_abandoned);
    size_t header_len = (size_t)snprintf(NULL, 0, BX_LIVE_HEADER, 0ULL, 0ULL, 0, 0ULL);
    /* Odd while the body changes: a reader that sees it, or a change across its read, retries. */
    header(++seq);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    bx_copy(map + header_len, body, t.len);
    bx_fill(map + header_len + t.len, 0, BX_LIVE_FILE_BYTES - header_len - t.len);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    header(++seq);
    bx_unlock(&lock);
}

__attribute__((destructor)) static void remove_at_exit(void) {
    if (map && map_pid == getpid()) unlink(path);
}

void bx_live_init(void) {
    if (!bx_options.stats_live) return;
    refresh();
    bx_reclaimer_set_pass_hook(refresh);
}
