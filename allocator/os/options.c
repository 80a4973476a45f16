/* options.c - BOBOX_* environment settings. A bad value is reported once, the default kept. */
#include "base/copy.h"
#include "os/options.h"

#include "os/cgroup.h"
#include "os/os.h"

#include <signal.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/sysinfo.h>

/* Free memory waits this long for reuse: long enough for a loop that frees and mallocs a
 * large buffer every iteration (thesis program 7.1), short enough that an idle process
 * gives its peak back within a second. */
#define DEFAULT_DECAY_MS 1000
/* One sample per 512 KB allocated, on average: tcmalloc's and jemalloc's default. */
#define DEFAULT_PROF_RATE (512 * 1024)

bx_options_t bx_options = {
    .cache_bytes = 64 * BX_MB,
    .decay_ms = DEFAULT_DECAY_MS,
    .mixed = true,
    .prof_rate = DEFAULT_PROF_RATE,
};

/* Copied: the program may rewrite its environment later. */
static char prof_prefix[3072];

/* An eighth of the memory the process may use, within [64 MB, 4 GB]: room for a 256 MB
 * buffer to be reused on a small machine, without letting an idle cache crowd a large one.
 * A container's cgroup limit counts, not the host's memory, and the cache never takes more
 * than a quarter of it. */
static uint64_t default_cache_mb(void) {
    struct sysinfo info;
    uint64_t usable_mb = bx_cgroup_memory_limit("") / BX_MB;
    if (sysinfo(&info) == 0) {
        uint64_t ram_mb = (uint64_t)info.totalram * info.mem_unit / BX_MB;
        if (ram_mb < usable_mb) usable_mb = ram_mb;
    }
    if (usable_mb == UINT64_MAX / BX_MB) return 64; /* nothing known */
    uint64_t mb = usable_mb / 8;
    mb = mb < 64 ? 64 : mb > 4096 ? 4096 : mb;
    return mb > usable_mb / 4 ? usable_mb / 4 : mb;
}

/* Parses a whole decimal number in [min, max]; false on anything else. */
static bool parse_number(const char *s, uint64_t min, uint64_t max, uint64_t *out) {
    if (!s || !*s) return false;
    uint64_t v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9') return false;
        if (v > (max - (uint64_t)(*s - '0')) / 10) return false;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    if (v < min) return false;
    *out = v;
    return true;
}

/* A flag's words into *on; false for anything else. Unset or empty is off. */
static bool flag_word(const char *s, bool *on) {
    *on = s && (!strcmp(s, "1") || !strcmp(s, "yes") || !strcmp(s, "true"));
    return *on || !s || !*s || !strcmp(s, "0") || !strcmp(s, "no") || !strcmp(s, "false");
}

static bool parse_flag(const char *name, const char *s) {
    bool on;
    if (!flag_word(s, &on)) bx_message("bobox: ignoring %s=%s (expected 0 or 1)\n", name, s);
    return on;
}

/* BOBOX_CHECK: a flag, or "copies" (only the program's copies checked). */
static void check_setting(void) {
    const char *s = getenv("BOBOX_CHECK");
    if (s && !strcmp(s, "copies"))
        bx_options.copies = true;
    else if (!flag_word(s, &bx_options.check))
        bx_message("bobox: ignoring BOBOX_CHECK=%s (expected 0, 1 or copies)\n", s);
}

const char *const bx_thp_names[] = {"auto", "never", "always", "system"};

int bx_thp_advice(bool superblock) {
    switch (bx_options.thp) {
    case BX_THP_AUTO: return superblock ? BX_OS_HUGE_NO : BX_OS_HUGE_LEAVE;
    case BX_THP_NEVER: return BX_OS_HUGE_NO;
    case BX_THP_ALWAYS: return BX_OS_HUGE_YES;
    default: return BX_OS_HUGE_LEAVE;
    }
}

/* One of `count` words; the index of `fallback` on anything else. */
static int word_setting(const char *name, const char *const *words, int count, int fallback) {
    const char *s = getenv(name);
    if (!s) return fallback;
    char expected[128];
    size_t len = 0;
    for (int i = 0; i < count; i++) {
        if (!strcmp(s, words[i])) return i;
        len += (size_t)snprintf(expected + len, sizeof expected - len, "%s%s", i ? ", " : "", words[i]);
        if (len >= sizeof expected) len = sizeof expected - 1;
    }
    bx_message("bobox: ignoring %s=%s (expected one of: %s); using %s\n", name, s, expected, words[fallback]);
    return fallback;
}

static uint64_t number_setting(const char *name, uint64_t min, uint64_t max, uint64_t fallback) {
    const char *s = getenv(name);
    uint64_t v;
    if (!s) return fallback;
    if (parse_number(s, min, max, &v)) return v;
    bx_message("bobox: ignoring %s=%s (expected a whole number from %llu to %llu); using %llu\n", name, s,
               (unsigned long long)min, (unsigned long long)max, (unsigned long long)fallback);
    return fallback;
}

static void prof_options(void) {
    const char *prefix = getenv("BOBOX_PROF");
    if (prefix && *prefix) {
        if (strlen(prefix) < sizeof prof_prefix) {
            bx_copy(prof_prefix, prefix, strlen(prefix) + 1);
            bx_options.prof_prefix = prof_prefix;
        } else {
            bx_message("bobox: ignoring BOBOX_PROF (a path prefix of %zu bytes; at most %zu); profiling off\n",
                       strlen(prefix), sizeof prof_prefix - 1);
        }
    }
    bx_options.prof_rate = number_setting("BOBOX_PROF_RATE", 1, (uint64_t)1 << 40, DEFAULT_PROF_RATE);
    bx_options.prof_signal = (int)number_setting("BOBOX_PROF_SIGNAL", 0, 64, 0);
    if (bx_options.prof_signal == SIGKILL || bx_options.prof_signal == SIGSTOP) {
        bx_message("bobox: ignoring BOBOX_PROF_SIGNAL=%d (cannot be caught); no dump signal\n", bx_options.prof_signal);
        bx_options.prof_signal = 0;
    }
    bx_options.prof_peak_bytes = (size_t)number_setting("BOBOX_PROF_PEAK_MB", 0, 1 << 24, 0) * BX_MB;
}

void bx_options_init(void) {
    const char *stats = getenv("BOBOX_STATS");
    bx_options.stats_json = stats && !strcmp(stats, "json");
    if (bx_options.stats_json)
        bx_options.stats = true;
    else if (stats && strcmp(stats, "1") && strcmp(stats, "0") && strcmp(stats, "yes") && strcmp(stats, "no") &&
             strcmp(stats, "true") && strcmp(stats, "false") && *stats)
        bx_message("bobox: ignoring BOBOX_STATS=%s (expected 0, 1 or json)\n", stats);
    else
        bx_options.stats = parse_flag("BOBOX_STATS", stats);
    bx_options.verbose = parse_flag("BOBOX_VERBOSE", getenv("BOBOX_VERBOSE"));
    bx_options.stats_live = parse_flag("BOBOX_STATS_LIVE", getenv("BOBOX_STATS_LIVE"));
    check_setting();
    uint64_t mb = number_setting("BOBOX_CACHE_MB", 0, 1 << 20, default_cache_mb());
    bx_options.cache_bytes = (size_t)mb * BX_MB;
    bx_options.decay_ms = number_setting("BOBOX_DECAY_MS", 0, 3600 * 1000, DEFAULT_DECAY_MS);
    bx_options.thp = word_setting("BOBOX_THP", bx_thp_names, 4, BX_THP_AUTO);
    const char *mixed = getenv("BOBOX_MIXED");
    if (mixed && !flag_word(mixed, &bx_options.mixed)) {
        bx_message("bobox: ignoring BOBOX_MIXED=%s (expected 0 or 1); using 1\n", mixed);
        bx_options.mixed = true;
    } else if (mixed && !*mixed) {
        bx_options.mixed = true; /* set but empty: the default */
    }
    prof_options();
    const char *mem = getenv("BOBOX_MEM");
    unsigned long allowed[BX_MEM_LONGS];
    char err[400];
    if (mem &&
        bx_mempolicy_parse(mem, bx_mempolicy_allowed(allowed) ? allowed : NULL, &bx_options.mem, err, sizeof err) != 0)
        bx_message("bobox: ignoring %s; using local (each thread's own node)\n", err);
}

void bx_options_report(void) {
    bx_message("bobox: settings: BOBOX_CACHE_MB=%zu BOBOX_DECAY_MS=%llu BOBOX_THP=%s BOBOX_STATS=%s BOBOX_CHECK=%s\n",
               bx_options.cache_bytes / BX_MB, (unsigned long long)bx_options.decay_ms, bx_thp_names[bx_options.thp],
               bx_options.stats_json ? "json"
               : bx_options.stats    ? "1"
                                     : "0",
               bx_options.check    ? "1"
               : bx_options.copies ? "copies"
                                   : "0");
    char mem[240];
    bx_mempolicy_format(&bx_options.mem, mem, sizeof mem);
    bx_message("bobox: settings: BOBOX_STATS_LIVE=%d BOBOX_MIXED=%d BOBOX_MEM=%s\n", bx_options.stats_live,
               bx_options.mixed, mem);
    if (bx_options.prof_prefix)
        bx_message("bobox: settings: BOBOX_PROF=%s BOBOX_PROF_RATE=%zu BOBOX_PROF_SIGNAL=%d BOBOX_PROF_PEAK_MB=%zu\n",
                   bx_options.prof_prefix, bx_options.prof_rate, bx_options.prof_signal,
                   bx_options.prof_peak_bytes / BX_MB);
}
