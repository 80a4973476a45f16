/* prof.c - the sampling heap profiler: samples, their stacks, the live set, and the
 * profiles in gperftools' heap-profile text format plus folded stacks (docs/profiling.md).
 *
 * Nothing here allocates through the allocator: the tables are mapped once at start-up.
 * Stacks come from stackwalk.c, which keeps each return address's rule and asks libgcc's unwinder
 * (linked directly, not dlopened as glibc's backtrace() does) for the rest; both are warmed
 * up in bx_prof_init. Should libgcc malloc
 * anyway (objects registered with __register_frame_info are sorted on first use), that
 * malloc is simply not sampled (bx_prof_busy). The lock is held only over table updates and
 * writing files, never over a call that could allocate, so no malloc waits for it in a
 * cycle; a signal that finds it taken leaves its dump to the next sample. */
#define _GNU_SOURCE
#include "base/copy.h"
#include "tools/prof.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bobox.h"
#include "base/fdout.h"
#include "mem/large.h"
#include "mem/node.h"
#include "base/lock.h"
#include "os/options.h"
#include "os/os.h"
#include "thread/thread.h"
#include "tools/stackwalk.h"

#define MAX_FRAMES 48
#define STACK_SLOTS 16384     /* distinct stacks, a power of two */
#define LIVE_SLOTS (1u << 17) /* sampled objects live at once, a power of two */

typedef struct {
    uint64_t hash; /* 0: empty slot */
    uint32_t depth;
    size_t alloc_count, alloc_bytes, live_count, live_bytes;
    uintptr_t pcs[MAX_FRAMES];
} stack_t_;

typedef struct {
    uintptr_t addr; /* 0: empty slot */
    uint32_t stack;
    size_t size;
    void *shadow; /* see bx_prof_due */
} live_t;

bool bx_prof_on;
static bx_lock_t prof_lock = BX_LOCK_INIT;
static stack_t_ *stacks;
static uint32_t *used; /* the slots of `stacks` in use, in order: a dump reads only those
                        * (reading all 7 MB faulted in 1,700 zero pages at every exit) */
static live_t *live;
static size_t n_stacks, n_live, n_samples, n_dropped, n_dumps, live_bytes_total;
static unsigned dump_seq;
static size_t next_peak;                   /* dump when the mapped peak reaches this */
static uintptr_t self_lo, self_hi;         /* our own code: frames skipped at the top */
static volatile sig_atomic_t dump_pending; /* a signal found the lock taken */
BX_TLS bool bx_prof_busy;
static BX_TLS uint64_t tls_rng;

/* ---- sampling intervals --------------------------------------------------------------- */

static uint64_t next_random(void) {
    if (!tls_rng) tls_rng = ((uint64_t)(uintptr_t)&tls_rng * 0x9E3779B97F4A7C15ull) ^ bx_now_ns() ^ 1;
    tls_rng ^= tls_rng << 13; /* xorshift64 */
    tls_rng ^= tls_rng >> 7;
    tls_rng ^= tls_rng << 17;
    return tls_rng;
}

/* -ln(x / 2^53) for x in [1, 2^53], without libm: x = m * 2^e with m in [1, 2) from the bits
 * (no loop: halving until below 1 cost a mispredicted branch or two per sample), ln m by the
 * atanh series (t <= 1/3: the terms to t^11 leave an error below 1e-7). */
static double minus_log_fraction(uint64_t x) {
    int e = 63 - __builtin_clzll(x);
    union {
        uint64_t bits;
        double d;
    } scale = {.bits = (uint64_t)(1023 - e) << 52}; /* 2^-e */
    double m = (double)x * scale.d;
    double t = (m - 1.0) / (m + 1.0), t2 = t * t;
    double ln_m = 2.0 * t * (1.0 + t2 * (1.0 / 3 + t2 * (1.0 / 5 + t2 * (1.0 / 7 + t2 * (1.0 / 9 + t2 / 11)))));
    return (53 - e) * 0.69314718055994530942 - ln_m;
}

/* Exponentially distributed with mean `rate`: sampling is then memoryless, and every
 * allocation of s bytes is sampled with probability 1 - exp(-s / rate), whatever the
 * pattern (pprof's heap_v2 scaling undoes exactly that). */
static int64_t next_interval(void) {
    double v = minus_log_fraction((next_random() >> 11) + 1) * (double)bx_options.prof_rate;
    return v < 1 ? 1 : v > 1e15 ? (int64_t)1e15 : (int64_t)v;
}

/* ---- stacks -------------------------------------------------------------------------- */

static int collect_stack(uintptr_t *pcs) { return bx_stackwalk(pcs, MAX_FRAMES, self_lo, self_hi); }

static int find_self(struct dl_phdr_info *info, size_t size, void *arg) {
    (void)size;
    uintptr_t me = (uintptr_t)arg;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X)) continue;
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
        if (me >= lo && me < hi) {
            /* Linked into the program itself (libbobox.a): its frames are the program's. */
            if (info->dlpi_name && info->dlpi_name[0]) self_lo = lo, self_hi = hi;
            return 1;
        }
    }
    return 0;
}

static uint64_t hash_stack(const uintptr_t *pcs, int n) {
    uint64_t h = 0xcbf29ce484222325ull ^ (uint64_t)n;
    for (int i = 0; i < n; i++) h = (h ^ pcs[i]) * 0x100000001b3ull;
    return h ? h : 1;
}

/* The stack's slot, made if new; -1 when the table is full. Lock held. */
static int64_t stack_slot(const uintptr_t *pcs, int n) {
    uint64_t h = hash_stack(pcs, n);
    for (size_t i = h & (STACK_SLOTS - 1), probes = 0; probes < STACK_SLOTS;
         i = (i + 1) & (STACK_SLOTS - 1), probes++) {
        stack_t_ *s = &stacks[i];
        if (s->hash == h && s->depth == (uint32_t)n && !memcmp(s->pcs, pcs, n * sizeof *pcs)) return (int64_t)i;
        if (!s->hash) {
            if (n_stacks >= STACK_SLOTS * 3 / 4) return -1;
            s->hash = h;
            s->depth = (uint32_t)n;
            bx_copy(s->pcs, pcs, n * sizeof *pcs);
            used[n_stacks++] = (uint32_t)i;
            return (int64_t)i;
        }
    }
    return -1;
}

/* ---- the live set: linear probing, deletion by backward shift ---------------------------- */

static size_t live_home(uintptr_t a) { return (size_t)((a >> 4) * 0x9E3779B97F4A7C15ull >> 40) & (LIVE_SLOTS - 1); }

static bool live_insert(uintptr_t a, uint32_t stack, size_t size, void *shadow) {
    if (n_live >= LIVE_SLOTS * 3 / 4) return false;
    size_t i = live_home(a);
    while (live[i].addr && live[i].addr != a) i = (i + 1) & (LIVE_SLOTS - 1);
    if (!live[i].addr) n_live++;
    live[i] = (live_t){a, stack, size, shadow};
    return true;
}

static bool live_remove(uintptr_t a, live_t *out) {
    size_t i = live_home(a);
    while (live[i].addr != a) {
        if (!live[i].addr) return false;
        i = (i + 1) & (LIVE_SLOTS - 1);
    }
    *out = live[i];
    for (size_t j = i;;) { /* shift back the entries that probed past i */
        j = (j + 1) & (LIVE_SLOTS - 1);
        if (!live[j].addr) break;
        size_t home = live_home(live[j].addr);
        if (((j - home) & (LIVE_SLOTS - 1)) >= ((j - i) & (LIVE_SLOTS - 1))) {
            live[i] = live[j];
            i = j;
        }
    }
    live[i].addr = 0;
    n_live--;
    return true;
}

/* ---- writing profiles: plain write(2), our own number formatting ------------------------ */

static void out_counts(bx_fdout_t *o, size_t live_n, size_t live_b, size_t all_n, size_t all_b) {
    bx_fdout_num(o, live_n, 10, 6);
    bx_fdout_str(o, ": ");
    bx_fdout_num(o, live_b, 10, 8);
    bx_fdout_str(o, " [");
    bx_fdout_num(o, all_n, 10, 6);
    bx_fdout_str(o, ": ");
    bx_fdout_num(o, all_b, 10, 8);
    bx_fdout_str(o, "]");
}

/* gperftools' heap profile (what google-pprof reads): counts and bytes of the samples,
 * which pprof scales by heap_v2/RATE; then the mappings, for symbols. */
static void write_heap(int fd) {
    bx_fdout_t o = {.fd = fd};
    size_t ln = 0, lb = 0, an = 0, ab = 0;
    for (size_t k = 0; k < n_stacks; k++) {
        const stack_t_ *s = &stacks[used[k]];
        ln += s->live_count, lb += s->live_bytes;
        an += s->alloc_count, ab += s->alloc_bytes;
    }
    bx_fdout_str(&o, "heap profile: ");
    out_counts(&o, ln, lb, an, ab);
    bx_fdout_str(&o, " @ heap_v2/");
    bx_fdout_num(&o, bx_options.prof_rate, 10, 0);
    bx_fdout_str(&o, "\n");
    for (size_t k = 0; k < n_stacks; k++) {
        stack_t_ *s = &stacks[used[k]];
        out_counts(&o, s->live_count, s->live_bytes, s->alloc_count, s->alloc_bytes);
        bx_fdout_str(&o, " @");
        for (uint32_t f = 0; f < s->depth; f++) {
            bx_fdout_str(&o, " 0x");
            bx_fdout_num(&o, s->pcs[f], 16, 0);
        }
        bx_fdout_str(&o, "\n");
    }
    bx_fdout_str(&o, "\nMAPPED_LIBRARIES:\n");
    bx_fdout_flush(&o);
    int maps = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (maps >= 0) {
        ssize_t n;
        while ((n = read(maps, o.buf, sizeof o.buf)) > 0 || (n < 0 && errno == EINTR))
            if (n > 0) o.len = (size_t)n, bx_fdout_flush(&o);
        close(maps);
    }
}

/* One frame by name: the symbol if the dynamic linker knows it, else module+offset. A
 * return address is one past the call, hence pc - 1. */
static void out_frame(bx_fdout_t *o, uintptr_t pc, bool names) {
    Dl_info info;
    if (names && dladdr((void *)(pc - 1), &info) && info.dli_fname) {
        if (info.dli_sname) {
            bx_fdout_str(o, info.dli_sname);
            return;
        }
        const char *base = strrchr(info.dli_fname, '/');
        bx_fdout_str(o, base ? base + 1 : info.dli_fname);
        bx_fdout_str(o, "+0x");
        bx_fdout_num(o, pc - 1 - (uintptr_t)info.dli_fbase, 16, 0);
        return;
    }
    bx_fdout_str(o, "0x");
    bx_fdout_num(o, pc - 1, 16, 0);
}

/* 1 - exp(-r) for r >= 0, without libm: exp(r) = (1 + r/2^k)^(2^k) for small r/2^k. */
static double one_minus_exp_neg(double r) {
    if (r < 1e-6) return r > 0 ? r : 1;
    if (r > 40) return 1;
    double x = 1.0 + r / 1048576.0;
    for (int k = 0; k < 20; k++) x *= x;
    return 1.0 - 1.0 / x;
}

/* Folded stacks for flame graphs: outermost frame first, live bytes (scaled back from the
 * samples) last. */
static void write_folded(int fd, bool names) {
    bx_fdout_t o = {.fd = fd};
    for (size_t k = 0; k < n_stacks; k++) {
        stack_t_ *s = &stacks[used[k]];
        if (!s->live_count) continue;
        for (uint32_t f = s->depth; f-- > 0;) {
            out_frame(&o, s->pcs[f], names);
            if (f) bx_fdout_str(&o, ";");
        }
        /* A sample of mean size m stands for m / (1 - exp(-m / rate)) bytes. */
        double mean = (double)s->live_bytes / (double)s->live_count;
        double e = one_minus_exp_neg(mean / (double)bx_options.prof_rate);
        bx_fdout_str(&o, " ");
        bx_fdout_num(&o, (uint64_t)((double)s->live_bytes / e), 10, 0);
        bx_fdout_str(&o, "\n");
    }
    bx_fdout_flush(&o);
}

static int open_out(const char *path) { return open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644); }

/* Writes PATH and PATH.folded; lock held. 0, or -1 with errno. */
static int dump_locked(const char *path, bool names) {
    int fd = open_out(path);
    if (fd < 0) return -1;
    write_heap(fd);
    close(fd);
    char folded[4096];
    size_t n = strlen(path);
    if (n + sizeof ".folded" <= sizeof folded) {
        bx_copy(folded, path, n);
        bx_copy(folded + n, ".folded", sizeof ".folded");
        if ((fd = open_out(folded)) >= 0) {
            write_folded(fd, names);
            close(fd);
        }
    }
    n_dumps++;
    return 0;
}

/* PREFIX.PID.heap at exit, PREFIX.PID.N.heap for the others. */
static void numbered_path(char *buf, size_t size, bool at_exit) {
    if (at_exit)
        snprintf(buf, size, "%s.%d.heap", bx_options.prof_prefix, (int)getpid());
    else
        snprintf(buf, size, "%s.%d.%04u.heap", bx_options.prof_prefix, (int)getpid(), dump_seq++);
}

static void dump_numbered_locked(bool names) {
    char path[4096];
    numbered_path(path, sizeof path, false);
    if (dump_locked(path, names) != 0) bx_message("bobox: cannot write the heap profile %s\n", path);
}

static void unlock_and_catch_up(void) {
    while (dump_pending) {
        dump_pending = 0;
        dump_numbered_locked(true);
    }
    bx_unlock(&prof_lock);
}

/* ---- sampling ------------------------------------------------------------------------ */

BX_NOINLINE void *bx_prof_due(size_t size) {
    if (!bx_prof_on) {
        bx_tls_alloc.sample_left = INT64_MAX;
        return NULL;
    }
    if (bx_prof_busy) return NULL; /* the profiler's own malloc: the sample waits for the next */
    /* Until the sample is served, nothing counts: the shadow below stands for the sample's
     * bytes, already counted. A shadow that went below zero used to come back through here,
     * busy, and take the bin's next chain with objects left on the top one. */
    bx_tls_alloc.sample_left = INT64_MAX;
    bx_prof_busy = true;
    uintptr_t pcs[MAX_FRAMES];
    int depth = collect_stack(pcs);
    /* A small object's bin still sees this malloc, and later its free: the object it would
     * have handed out is held aside meanwhile. Without it, the free that has no malloc to
     * follow it leaves an extra object on the chain stack, and a FIFO program then starts a
     * new chain at every block until the sample is freed (+60% instructions on fifo8k). */
    void *shadow = size <= BX_SMALL_MAX ? bx_core_alloc_small(size) : NULL;
    bool fresh;
    bx_heap_t *h = bx_thread_heap();
    void *p;
    if (size <= BX_MEDIUM_MAX)
        p = h ? bx_heap_alloc_sample(h, size) : bx_large_alloc_sample(size, bx_node_current());
    else
        p = h ? bx_heap_alloc_large(h, size, BX_ALIGNMENT, &fresh) : bx_large_alloc(size, BX_ALIGNMENT, bx_node_current(), &fresh);
    if (p) {
        bx_lock(&prof_lock);
        n_samples++;
        int64_t slot = stack_slot(pcs, depth);
        if (slot >= 0 && live_insert((uintptr_t)p, (uint32_t)slot, size, shadow)) {
            stack_t_ *s = &stacks[slot];
            s->alloc_count++, s->alloc_bytes += size;
            s->live_count++, s->live_bytes += size;
            live_bytes_total += size;
            shadow = NULL;
        } else {
            n_dropped++;
        }
        if (next_peak && bx_os_peak_mapped_bytes() >= next_peak) {
            next_peak = bx_os_peak_mapped_bytes() + bx_options.prof_peak_bytes;
            dump_numbered_locked(true);
        }
        unlock_and_catch_up();
    }
    bx_prof_busy = false;
    bx_tls_alloc.sample_left = next_interval();
    if (shadow) bx_core_free(shadow, "free()");
    return p;
}

void bx_prof_forget(const void *p) {
    bx_lock(&prof_lock);
    live_t e = {0};
    if (live_remove((uintptr_t)p, &e)) {
        stacks[e.stack].live_count--;
        stacks[e.stack].live_bytes -= e.size;
        live_bytes_total -= e.size;
    }
    unlock_and_catch_up();
    if (e.shadow) bx_core_free(e.shadow, "free()");
}

/* ---- start, dumps, state -------------------------------------------------------------- */

void bx_prof_init(void) {
    if (!bx_options.prof_prefix) return;
    stacks = bx_os_map(STACK_SLOTS * sizeof *stacks);
    used = bx_os_map(STACK_SLOTS * sizeof *used);
    live = bx_os_map(LIVE_SLOTS * sizeof *live);
    if (!stacks || !used || !live || !bx_stackwalk_init()) {
        bx_message("bobox: BOBOX_PROF: no memory for the profiler's tables; profiling stays off\n");
        return;
    }
    dl_iterate_phdr(find_self, (void *)(uintptr_t)bx_prof_init);
    uintptr_t pcs[MAX_FRAMES];
    bx_prof_busy = true;
    collect_stack(pcs); /* the unwinder's one-time set-up, before any lock of ours is held */
    bx_prof_busy = false;
    if (bx_options.prof_peak_bytes) next_peak = bx_os_peak_mapped_bytes() + bx_options.prof_peak_bytes;
    bx_prof_on = true;
    bx_thread_set_countdown_start(next_interval);
    bx_core_set_large_free_hook(bx_prof_forget);
}

static void fork_prepare(void) { bx_lock(&prof_lock); }
static void fork_release(void) { bx_unlock(&prof_lock); }

static void on_signal(int sig) {
    (void)sig;
    int saved = errno;
    if (bx_trylock(&prof_lock)) {
        dump_numbered_locked(false); /* no dladdr: the loader may be mid-update under us */
        bx_unlock(&prof_lock);
    } else {
        dump_pending = 1;
    }
    errno = saved;
}

void bx_prof_start(void) {
    if (!bx_prof_on) return;
    pthread_atfork(fork_prepare, fork_release, fork_release);
    if (bx_options.prof_signal) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sa.sa_flags = SA_RESTART;
        sigemptyset(&sa.sa_mask);
        sigaction(bx_options.prof_signal, &sa, NULL);
    }
}

__attribute__((destructor)) static void dump_at_exit(void) {
    if (!bx_prof_on) return;
    char path[4096];
    numbered_path(path, sizeof path, true);
    bx_lock(&prof_lock);
    int rc = dump_locked(path, true);
    bx_unlock(&prof_lock);
    if (rc != 0) bx_message("bobox: cannot write the heap profile %s\n", path);
}

BX_API int bobox_prof_dump(const char *path) {
    if (!bx_prof_on) {
        errno = ENOTSUP;
        return -1;
    }
    char numbered[4096];
    bx_lock(&prof_lock);
    if (!path) {
        numbered_path(numbered, sizeof numbered, false); /* the number taken under the lock */
        path = numbered;
    }
    int rc = dump_locked(path, true);
    int saved = errno;
    unlock_and_catch_up();
    errno = saved;
    return rc;
}

void bx_prof_state(struct bx_prof_state *out) {
    memset(out, 0, sizeof *out);
    out->rate = bx_options.prof_rate;
    if (!bx_prof_on) return;
    bx_lock(&prof_lock);
    out->samples = n_samples;
    out->live_samples = n_live;
    out->live_sampled_bytes = live_bytes_total;
    out->dropped = n_dropped;
    out->dumps = n_dumps;
    out->stacks = n_stacks;
    unlock_and_catch_up();
}
