/* ctl.c - jemalloc's control interface (mallctl, mallctlnametomib, mallctlbymib,
 * malloc_stats_print) answered from bobox's own state, and bobox's runtime control in the
 * same namespace (bobox_ctl, "bobox.*"). Programs linked with jemalloc (Redis) call these
 * for their memory figures and purges: under the preload they must see our heap, not
 * jemalloc's empty one. Nothing here allocates: names are parsed in place, text is
 * formatted on the stack. Error numbers are jemalloc's: ENOENT for an unknown name, EINVAL
 * for a wrong size, EPERM for a write to a read-only name or a read of a write-only one. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bobox.h"
#include "base/lock.h"
#include "front/fastpath.h"
#include "heap/retention.h"
#include "mem/arena.h"
#include "mem/large.h"
#include "mem/node.h"
#include "os/options.h"
#include "os/os.h"
#include "os/sysfile.h"
#include "thread/reclaimer.h"
#include "thread/thread.h"
#include "tools/prof.h"
#include "tools/stats.h"

#define ARENAS_ALL 4096u /* jemalloc's MALLCTL_ARENAS_ALL */
#define MAX_DEPTH 8
#define JEMALLOC_VERSION "5.3.0-0-g0000000000000000000000000000000000000000"

typedef struct {
    const size_t *mib; /* the components, numbers where the name has an index */
    void *oldp;
    size_t *oldlenp;
    void *newp;
    size_t newlen;
} req_t;

typedef int leaf_fn(const req_t *r);

/* A name's tree: a node has a leaf or children; a child named NULL stands for any number
 * (an index such as arena.<i>), and is then the only one. */
typedef struct node {
    const char *name;
    leaf_fn *leaf;
    const struct node *kids;
    unsigned nkids;
} node_t;

/* ---- reads and writes, as jemalloc's READ, WRITE, READONLY, WRITEONLY ------------------ */

static int read_value(const req_t *r, const void *v, size_t size) {
    if (!r->oldp || !r->oldlenp) return 0;
    if (*r->oldlenp != size) { /* jemalloc copies what fits, then says EINVAL */
        size_t n = size < *r->oldlenp ? size : *r->oldlenp;
        memcpy(r->oldp, v, n);
        *r->oldlenp = n;
        return EINVAL;
    }
    memcpy(r->oldp, v, size);
    return 0;
}
static int read_only(const req_t *r) { return r->newp || r->newlen ? EPERM : 0; }
static int neither(const req_t *r) { return r->oldp || r->oldlenp || r->newp || r->newlen ? EPERM : 0; }
/* 1 if a value was written to *v, 0 if none was given, or an error number (negated). */
static int write_value(const req_t *r, void *v, size_t size) {
    if (!r->newp) return r->newlen ? -EINVAL : 0;
    if (r->newlen != size) return -EINVAL;
    memcpy(v, r->newp, size);
    return 1;
}

#define READ_ONLY_LEAF(fn, type, expr)                \
    static int fn(const req_t *r) {                   \
        int e = read_only(r);                         \
        if (e) return e;                              \
        type v = (expr);                              \
        return read_value(r, &v, sizeof v);           \
    }

/* ---- the statistics, as of the last epoch ---------------------------------------------- */

typedef struct {
    struct bobox_stats s;
    size_t active, resident, retained, metadata, dirty;
} snap_t;

static bx_lock_t snap_lock = BX_LOCK_INIT;
static snap_t snap;
static uint64_t epoch; /* 0: no snapshot taken yet */

static void add_metadata(bx_heap_t *h, void *arg) { *(size_t *)arg += h->map_size; }

/* Anonymous resident memory (statm's resident less its file-backed pages): the heap's pages,
 * and the little else a process maps anonymously (stacks). */
static size_t anon_resident(void) {
    size_t vm, resident, shared;
    if (!bx_os_statm(&vm, &resident, &shared)) return 0;
    return resident > shared ? resident - shared : 0;
}

/* Called with snap_lock held. */
static void take_snapshot(void) {
    bx_stats_collect(&snap.s);
    const struct bobox_stats *s = &snap.s;
    snap.metadata = 0;
    bx_thread_for_each_heap(add_metadata, &snap.metadata);
    snap.dirty = s->superblocks_cached * BX_SUPERBLOCK_SIZE + s->large_cached_bytes;
    snap.resident = anon_resident();
    snap.retained = bx_arena_retained_bytes();
    /* What the heaps hold (mapped less the shared caches), no less than what is in use and
     * no more than what is resident: committed pages never touched are neither. */
    size_t held = s->mapped_bytes > snap.dirty ? s->mapped_bytes - snap.dirty : 0;
    if (held > snap.resident) held = snap.resident;
    snap.active = held > s->allocated_bytes ? held : s->allocated_bytes;
    if (snap.resident < snap.active) snap.resident = snap.active;
    epoch++;
}

static snap_t current(void) {
    bx_lock(&snap_lock);
    if (!epoch) take_snapshot();
    snap_t s = snap;
    bx_unlock(&snap_lock);
    return s;
}

static int epoch_leaf(const req_t *r) {
    uint64_t v;
    int w = write_value(r, &v, sizeof v);
    if (w < 0) return -w;
    bx_lock(&snap_lock);
    if (w || !epoch) take_snapshot();
    v = epoch;
    bx_unlock(&snap_lock);
    return read_value(r, &v, sizeof v);
}

READ_ONLY_LEAF(stats_allocated, size_t, current().s.allocated_bytes)
READ_ONLY_LEAF(stats_active, size_t, current().active)
READ_ONLY_LEAF(stats_metadata, size_t, current().metadata)
READ_ONLY_LEAF(stats_resident, size_t, current().resident)
READ_ONLY_LEAF(stats_mapped, size_t, current().s.mapped_bytes)
READ_ONLY_LEAF(stats_retained, size_t, current().retained)

/* One arena stands for the process: index 0, 1 (arenas.narenas, jemalloc's old "all") and
 * MALLCTL_ARENAS_ALL name it. */
static bool arena_index_ok(size_t i) { return i == 0 || i == 1 || i == ARENAS_ALL; }

static int stats_arena_page_leaf(const req_t *r, size_t bytes) {
    if (!arena_index_ok(r->mib[2])) return ENOENT;
    int e = read_only(r);
    if (e) return e;
    size_t pages = bytes / bx_os_page_size();
    return read_value(r, &pages, sizeof pages);
}
static int stats_arena_pactive(const req_t *r) { return stats_arena_page_leaf(r, current().active); }
static int stats_arena_pdirty(const req_t *r) { return stats_arena_page_leaf(r, current().dirty); }
static int stats_arena_pmuzzy(const req_t *r) { return stats_arena_page_leaf(r, 0); }

/* ---- control --------------------------------------------------------------------------- */

static void purge_all(void) { bobox_malloc_trim(0); }

static int arena_purge(const req_t *r) {
    if (!arena_index_ok(r->mib[1])) return ENOENT;
    int e = neither(r);
    if (e) return e;
    purge_all();
    return 0;
}

/* The calling thread's cached objects and blocks go back (jemalloc's thread cache flush). */
static int tcache_flush(const req_t *r) {
    int e = neither(r);
    if (e) return e;
    bx_ensure_init();
    if (bx_tls_heap) bx_retention_release_heap(bx_tls_heap, BX_RELEASE_TRIM);
    return 0;
}

static int tcache_enabled(const req_t *r) {
    bool v;
    int w = write_value(r, &v, sizeof v);
    if (w < 0) return -w;
    if (w && !v) return EFAULT; /* a heap per thread is how bobox works: it cannot be turned off */
    v = true;
    return read_value(r, &v, sizeof v);
}

/* Bytes the calling thread's heap handed out and got back (its own frees, by size class;
 * large objects count when the thread frees them). A thread that asks takes a heap of its
 * own from then on (jemalloc's counters are read as differences): what it allocated on its
 * CPU's shared heap before is no one thread's. */
static void thread_bytes(uint64_t *allocated, uint64_t *deallocated) {
    bx_ensure_init();
    if (!bx_tls_heap) bx_thread_acquire();
    bx_heap_t *h = bx_tls_heap;
    *allocated = *deallocated = 0;
    if (!h) return;
    uint64_t live = 0;
    for (unsigned i = 0; i < BX_SMALL_BINS; i++) {
        *allocated += (uint64_t)bx_bin_allocs(&h->small[i]) * h->small[i].size;
        live += (uint64_t)bx_bin_allocated(&h->small[i]) * h->small[i].size;
    }
    *allocated += h->counters.medium_bytes + h->counters.large_bytes;
    live += h->counters.medium_live_bytes;
    *deallocated = *allocated - h->counters.large_bytes - live + h->counters.large_freed_bytes;
}
static int thread_allocated(const req_t *r) {
    int e = read_only(r);
    if (e) return e;
    uint64_t a, d;
    thread_bytes(&a, &d);
    return read_value(r, &a, sizeof a);
}
static int thread_deallocated(const req_t *r) {
    int e = read_only(r);
    if (e) return e;
    uint64_t a, d;
    thread_bytes(&a, &d);
    return read_value(r, &d, sizeof d);
}

/* background_thread: bobox's reclaimer starts by itself once the process is big enough
 * (reclaimer.h); asking for it, or not, is accepted. */
static int background_thread(const req_t *r) {
    bool v;
    int w = write_value(r, &v, sizeof v);
    if (w < 0) return -w;
    v = bx_reclaimer_running();
    return read_value(r, &v, sizeof v);
}

static int version_leaf(const req_t *r) {
    int e = read_only(r);
    if (e) return e;
    const char *v = JEMALLOC_VERSION;
    return read_value(r, &v, sizeof v);
}

READ_ONLY_LEAF(arenas_narenas, unsigned, 1)
READ_ONLY_LEAF(arenas_page, size_t, bx_os_page_size())
READ_ONLY_LEAF(arenas_quantum, size_t, BX_ALIGNMENT)
READ_ONLY_LEAF(opt_narenas, unsigned, 1)
READ_ONLY_LEAF(opt_true, bool, true)
READ_ONLY_LEAF(opt_false, bool, false)
READ_ONLY_LEAF(opt_prof, bool, bx_prof_on)
READ_ONLY_LEAF(opt_dirty_decay_ms, ssize_t, (ssize_t)bx_options.decay_ms)
READ_ONLY_LEAF(opt_muzzy_decay_ms, ssize_t, 0)
READ_ONLY_LEAF(opt_background_thread, bool, bx_options.decay_ms != 0)

/* prof.dump and bobox.prof.dump: a file name (const char *), or none for the default. */
static int prof_dump(const req_t *r) {
    if (r->oldp || r->oldlenp) return EPERM;
    const char *path = NULL;
    int w = write_value(r, &path, sizeof path);
    if (w < 0) return -w;
    int saved = errno;
    int e = bobox_prof_dump(path) == 0 ? 0 : errno == ENOTSUP ? ENOENT : errno ? errno : EFAULT;
    errno = saved;
    return e;
}

/* ---- bobox's own ----------------------------------------------------------------------- */

static int bobox_version(const req_t *r) {
    int e = read_only(r);
    if (e) return e;
    const char *v = BOBOX_VERSION;
    return read_value(r, &v, sizeof v);
}

static int bobox_decay_ms(const req_t *r) {
    uint64_t v;
    int w = write_value(r, &v, sizeof v);
    if (w < 0) return -w;
    uint64_t old = __atomic_load_n(&bx_options.decay_ms, __ATOMIC_RELAXED);
    if (w) {
        if (v > 3600 * 1000) return EINVAL; /* BOBOX_DECAY_MS's range */
        __atomic_store_n(&bx_options.decay_ms, v, __ATOMIC_RELAXED);
    }
    return read_value(r, &old, sizeof old);
}

static int bobox_mixed(const req_t *r) {
    bool v;
    int w = write_value(r, &v, sizeof v);
    if (w < 0) return -w;
    bool old = __atomic_load_n(&bx_options.mixed, __ATOMIC_RELAXED);
    if (w) __atomic_store_n(&bx_options.mixed, v, __ATOMIC_RELAXED);
    return read_value(r, &old, sizeof old);
}

static int bobox_purge(const req_t *r) {
    int e = neither(r);
    if (e) return e;
    purge_all();
    return 0;
}

static int bobox_check_heap_leaf(const req_t *r) {
    int e = read_only(r);
    if (e) return e;
    int v = bobox_check_heap();
    return read_value(r, &v, sizeof v);
}

static struct bobox_stats now_stats(void) {
    struct bobox_stats s;
    bobox_get_stats(&s);
    return s;
}
READ_ONLY_LEAF(bobox_in_use, size_t, now_stats().allocated_bytes)
READ_ONLY_LEAF(bobox_mapped, size_t, now_stats().mapped_bytes)
READ_ONLY_LEAF(bobox_peak_mapped, size_t, now_stats().peak_mapped_bytes)
READ_ONLY_LEAF(bobox_released, size_t, now_stats().released_bytes)
READ_ONLY_LEAF(bobox_remote_frees, size_t, now_stats().remote_frees)
READ_ONLY_LEAF(bobox_heaps_live, size_t, now_stats().heaps_live)
READ_ONLY_LEAF(bobox_heaps_abandoned, size_t, now_stats().heaps_abandoned)
READ_ONLY_LEAF(bobox_heaps_shared, size_t, bx_stats_shared_heaps())
READ_ONLY_LEAF(bobox_large_cached, size_t, now_stats().large_cached_bytes)
READ_ONLY_LEAF(bobox_cache_bytes, size_t, bx_options.cache_bytes)
READ_ONLY_LEAF(bobox_mixed_blocks, size_t, bx_mixed_blocks())
READ_ONLY_LEAF(bobox_mixed_bytes, size_t, bx_mixed_live_bytes())

/* ---- the tree -------------------------------------------------------------------------- */

#define LEAF(n, fn) {n, fn, NULL, 0}
#define KIDS(n, arr) {n, NULL, arr, sizeof arr / sizeof arr[0]}

static const node_t stats_arena_i[] = {
    LEAF("pactive", stats_arena_pactive), LEAF("pdirty", stats_arena_pdirty), LEAF("pmuzzy", stats_arena_pmuzzy)};
static const node_t stats_arenas[] = {KIDS(NULL, stats_arena_i)};
static const node_t stats[] = {
    LEAF("allocated", stats_allocated), LEAF("active", stats_active),     LEAF("metadata", stats_metadata),
    LEAF("resident", stats_resident),   LEAF("mapped", stats_mapped),     LEAF("retained", stats_retained),
    KIDS("arenas", stats_arenas),
};
static const node_t arena_i[] = {LEAF("purge", arena_purge), LEAF("decay", arena_purge)};
static const node_t arena[] = {KIDS(NULL, arena_i)};
static const node_t arenas[] = {LEAF("narenas", arenas_narenas), LEAF("page", arenas_page),
                                LEAF("quantum", arenas_quantum)};
static const node_t tcache[] = {LEAF("flush", tcache_flush), LEAF("enabled", tcache_enabled)};
static const node_t thread[] = {LEAF("allocated", thread_allocated), LEAF("deallocated", thread_deallocated),
                                KIDS("tcache", tcache)};
static const node_t opt[] = {
    LEAF("narenas", opt_narenas),
    LEAF("tcache", opt_true),
    LEAF("abort", opt_false),
    LEAF("prof", opt_prof),
    LEAF("dirty_decay_ms", opt_dirty_decay_ms),
    LEAF("muzzy_decay_ms", opt_muzzy_decay_ms),
    LEAF("background_thread", opt_background_thread),
};
static const node_t config[] = {LEAF("stats", opt_true), LEAF("debug", opt_false), LEAF("prof", opt_true)};
static const node_t prof[] = {LEAF("dump", prof_dump)};
static const node_t bobox_stats[] = {
    LEAF("in_use", bobox_in_use),         LEAF("mapped", bobox_mapped),
    LEAF("peak_mapped", bobox_peak_mapped), LEAF("released", bobox_released),
    LEAF("remote_frees", bobox_remote_frees), LEAF("heaps_live", bobox_heaps_live),
    LEAF("heaps_abandoned", bobox_heaps_abandoned), LEAF("heaps_shared", bobox_heaps_shared),
    LEAF("large_cached", bobox_large_cached),
    LEAF("mixed_blocks", bobox_mixed_blocks), LEAF("mixed_bytes", bobox_mixed_bytes),
};
static const node_t bobox_prof[] = {LEAF("dump", prof_dump)};
static const node_t bobox[] = {
    LEAF("version", bobox_version),
    LEAF("decay_ms", bobox_decay_ms),
    LEAF("cache_bytes", bobox_cache_bytes),
    LEAF("purge", bobox_purge),
    LEAF("mixed", bobox_mixed),
    LEAF("check_heap", bobox_check_heap_leaf),
    KIDS("prof", bobox_prof),
    KIDS("stats", bobox_stats),
};
static const node_t top[] = {
    LEAF("version", version_leaf),
    LEAF("epoch", epoch_leaf),
    LEAF("background_thread", background_thread),
    KIDS("stats", stats),
    KIDS("arena", arena),
    KIDS("arenas", arenas),
    KIDS("thread", thread),
    KIDS("opt", opt),
    KIDS("config", config),
    KIDS("prof", prof),
    KIDS("bobox", bobox),
};
static const node_t root = KIDS("", top);

/* A name's components into mib (at most *depth); the node reached in *out. ENOENT for an
 * unknown or malformed name, or one deeper than *depth. */
static int lookup(const char *name, size_t *mib, size_t *depth, const node_t **out) {
    if (!name) return ENOENT;
    const node_t *n = &root;
    size_t d = 0;
    const char *c = name;
    for (;;) {
        const char *end = strchrnul(c, '.');
        size_t len = (size_t)(end - c);
        if (!len || !n->kids || d >= *depth) return ENOENT;
        if (!n->kids[0].name) { /* an index */
            size_t v = 0;
            for (const char *p = c; p < end; p++) {
                if (*p < '0' || *p > '9' || v > (SIZE_MAX - 9) / 10) return ENOENT;
                v = v * 10 + (size_t)(*p - '0');
            }
            mib[d++] = v;
            n = &n->kids[0];
        } else {
            unsigned k = 0;
            while (k < n->nkids && !(strlen(n->kids[k].name) == len && !memcmp(n->kids[k].name, c, len))) k++;
            if (k == n->nkids) return ENOENT;
            mib[d++] = k;
            n = &n->kids[k];
        }
        if (!*end) break;
        c = end + 1;
    }
    *depth = d;
    *out = n;
    return 0;
}

static int by_mib(const size_t *mib, size_t miblen, void *oldp, size_t *oldlenp, void *newp, size_t newlen) {
    if (!mib || miblen > MAX_DEPTH) return ENOENT;
    const node_t *n = &root;
    for (size_t d = 0; d < miblen; d++) {
        if (!n->kids) return ENOENT;
        if (n->kids[0].name)
            if (mib[d] >= n->nkids) return ENOENT;
        n = n->kids[0].name ? &n->kids[mib[d]] : &n->kids[0];
    }
    if (!n->leaf) return ENOENT; /* an inner node: jemalloc says the same */
    bx_ensure_init();
    req_t r = {mib, oldp, oldlenp, newp, newlen};
    return n->leaf(&r);
}

BX_API int bobox_ctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen) {
    size_t mib[MAX_DEPTH], depth = MAX_DEPTH;
    const node_t *n;
    int e = lookup(name, mib, &depth, &n);
    return e ? e : by_mib(mib, depth, oldp, oldlenp, newp, newlen);
}

BX_API int bobox_ctlnametomib(const char *name, size_t *mibp, size_t *miblenp) {
    if (!mibp || !miblenp) return EINVAL;
    size_t mib[MAX_DEPTH], depth = *miblenp < MAX_DEPTH ? *miblenp : MAX_DEPTH;
    const node_t *n;
    int e = lookup(name, mib, &depth, &n);
    if (e) return e;
    memcpy(mibp, mib, depth * sizeof *mib);
    *miblenp = depth;
    return 0;
}

BX_API int bobox_ctlbymib(const size_t *mib, size_t miblen, void *oldp, size_t *oldlenp, void *newp, size_t newlen) {
    return by_mib(mib, miblen, oldp, oldlenp, newp, newlen);
}

/* ---- malloc_stats_print ---------------------------------------------------------------- */

typedef void write_cb_t(void *, const char *);

__attribute__((format(printf, 3, 4))) static void out(write_cb_t *cb, void *arg, const char *fmt, ...) {
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap); /* numbers and strings only: no malloc */
    va_end(ap);
    if (cb)
        cb(arg, line);
    else
        bx_message_fd(2, "%s", line);
}

/* jemalloc's headline and totals, then bobox's own report; opts are accepted and ignored. */
BX_API void bobox_stats_print(void (*write_cb)(void *, const char *), void *cbopaque, const char *opts) {
    (void)opts;
    bx_ensure_init();
    bx_lock(&snap_lock);
    take_snapshot();
    snap_t s = snap;
    bx_unlock(&snap_lock);
    out(write_cb, cbopaque, "___ Begin jemalloc statistics ___\n");
    out(write_cb, cbopaque, "Version: \"%s\" (answered by bobox %s)\n", JEMALLOC_VERSION, BOBOX_VERSION);
    out(write_cb, cbopaque, "Arenas: 1\nQuantum size: %d\nPage size: %zu\n", (int)BX_ALIGNMENT, bx_os_page_size());
    out(write_cb, cbopaque,
        "Allocated: %zu, active: %zu, metadata: %zu (n_thp 0), resident: %zu, mapped: %zu, retained: %zu\n",
        s.s.allocated_bytes, s.active, s.metadata, s.resident, s.s.mapped_bytes, s.retained);
    out(write_cb, cbopaque,
        "bobox: allocations: small %zu, medium %zu, large %zu; remote frees %zu\n"
        "bobox: memory: in use %zu KB, mapped %zu KB (peak %zu KB), given back to the OS %zu KB\n",
        s.s.small_allocs, s.s.medium_allocs, s.s.large_allocs, s.s.remote_frees, s.s.allocated_bytes / 1024,
        s.s.mapped_bytes / 1024, s.s.peak_mapped_bytes / 1024, s.s.released_bytes / 1024);
    for (int node = 0; node < bx_node_count(); node++)
        out(write_cb, cbopaque, "bobox: node %d: superblocks in use %zu, cached %zu\n", node,
            bx_node_superblocks_in_use_on(node), bx_node_superblocks_cached_on(node));
    out(write_cb, cbopaque,
        "bobox: large objects %zu (%zu KB), large cache %zu KB; heaps live %zu, shared %zu, abandoned %zu\n",
        s.s.large_objects, s.s.large_bytes / 1024, s.s.large_cached_bytes / 1024, s.s.heaps_live,
        bx_stats_shared_heaps(), s.s.heaps_abandoned);
    out(write_cb, cbopaque, "--- End jemalloc statistics ---\n");
}

BX_OVERRIDE(mallctl, bobox_ctl)
BX_OVERRIDE(mallctlnametomib, bobox_ctlnametomib)
BX_OVERRIDE(mallctlbymib, bobox_ctlbymib)
BX_OVERRIDE(malloc_stats_print, bobox_stats_print)
