/* options.h - settings from the environment, read once at start-up without malloc. */
#ifndef BX_OPTIONS_H
#define BX_OPTIONS_H

#include "base/common.h"
#include "os/mempolicy.h"

typedef struct bx_options_s {
    bool stats;              /* BOBOX_STATS=1: report at exit */
    bool verbose;            /* BOBOX_VERBOSE=1: report the settings in force */
    bool check;              /* BOBOX_CHECK=1: canaries and header validation on every call */
    bool copies;             /* BOBOX_CHECK=copies: the default mode, with the program's copies checked */
    size_t cache_bytes;      /* BOBOX_CACHE_MB: most free memory each node's superblock cache, and
                          * the cache of freed large objects, may keep */
    uint64_t decay_ms;       /* BOBOX_DECAY_MS: how long free memory may stay cached */
    int thp;                 /* BOBOX_THP: enum bx_thp */
    bool stats_json;         /* BOBOX_STATS=json: the exit report as one JSON object */
    bool stats_live;         /* BOBOX_STATS_LIVE=1: statistics kept in a file for bobox-run --stat */
    const char *prof_prefix; /* BOBOX_PROF: heap profiling on, profiles to PREFIX.PID... */
    size_t prof_rate;        /* BOBOX_PROF_RATE: mean bytes between samples */
    int prof_signal;         /* BOBOX_PROF_SIGNAL: a dump on this signal (0: none) */
    size_t prof_peak_bytes;  /* BOBOX_PROF_PEAK_MB: a dump each time the peak grows by this */
    bx_mempolicy_t mem;      /* BOBOX_MEM: the NUMA policy of large objects */
    bool mixed;              /* BOBOX_MIXED=0: no mixed blocks (heap/heap.c); read at run time,
                              * bobox.mixed changes it */
} bx_options_t;

/* Transparent huge pages for the memory objects live in. */
enum bx_thp {
    BX_THP_AUTO,   /* superblocks never (their pages are touched sparsely: a huge page would
                    * multiply RSS); large objects as the system decides */
    BX_THP_NEVER,  /* no huge pages anywhere (MADV_NOHUGEPAGE) */
    BX_THP_ALWAYS, /* asked for everywhere (MADV_HUGEPAGE), also where the system waits for
                    * that request (enabled=madvise) */
    BX_THP_SYSTEM, /* no advice: the system's setting decides */
};
extern const char *const bx_thp_names[];
/* What BOBOX_THP asks for a fresh superblock or large-object mapping (enum bx_os_huge). */
int bx_thp_advice(bool superblock);

extern bx_options_t bx_options;

void bx_options_init(void);
/* Writes the settings in force to stderr (BOBOX_VERBOSE). */
void bx_options_report(void);

#endif
