/* The CPU order that threads take, and the settings that shape it. Pure functions of a topology
 * and an allowed set: the shim, bobox-run --plan and the unit tests all call the same code. */
#ifndef BOBOX_PIN_PLAN_H
#define BOBOX_PIN_PLAN_H

#include "topology.h"

#ifdef __cplusplus
extern "C" {
#endif

#define BP_MAX_ORDER 4096 /* an explicit list may repeat CPUs */
#define BP_MAX_SKIP 4096  /* threads a skip mask can name */

enum bp_policy { BP_SCATTER, BP_COMPACT, BP_LIST, BP_NONE, BP_DOMAIN };
/* What a thread is bound to: one CPU, or the whole place around its CPU (OpenMP's place names) */
enum bp_unit { BP_UNIT_CPU, BP_UNIT_CORE, BP_UNIT_L3, BP_UNIT_NODE, BP_UNIT_PACKAGE };

struct bp_spec {
    enum bp_policy policy;
    int n; /* BP_LIST: the CPUs in the given order */
    short cpu[BP_MAX_ORDER];
    char domains[256]; /* BP_DOMAIN: the expression, resolved against a topology */
    int pcores_only;   /* BOBOX_PIN_CORES=p: E-cores take no thread */
    enum bp_unit unit; /* BP_SCATTER with a place name: one place per core, L3, ... */
};

struct bp_skip {
    unsigned char bits[BP_MAX_SKIP / 8]; /* bit k: thread k is left alone */
};

/* BOBOX_PIN: "scatter", "compact", "none", a list such as "2,0,4-7", likwid-pin domain
 * expressions such as "S0:0-3@S1:0-3" (see bp_domain_cpus), or an OpenMP place name: "threads"
 * (= scatter), "cores", "ll_caches", "numa_domains", "sockets" (scatter over those places, each
 * thread bound to its whole place). NULL or "" = scatter.
 * Returns 0, or -1 with a message in err. */
int bp_parse_policy(const char *s, struct bp_spec *spec, char *err, size_t errlen);
/* BOBOX_PIN_CORES: "all" (or NULL, "") or "p" (keep threads off E-cores). Sets spec->pcores_only. */
int bp_parse_cores(const char *s, struct bp_spec *spec, char *err, size_t errlen);

/* The CPUs of a likwid-pin domain, physical cores first (by first CPU), then their second
 * siblings, and so on: N (the machine), S<i> (package i), M<i> or N<i> (NUMA node i),
 * C<i> (the i-th last-level cache, by lowest CPU). Fills out[], returns the count, 0 if the
 * domain is empty, -1 if the name is malformed. */
int bp_domain_cpus(const struct bt_topology *t, const char *name, size_t namelen, short *out, int maxn);
/* BOBOX_PIN_SKIP: a hex mask, "0x" optional. NULL or "" = skip nothing. */
int bp_parse_skip(const char *s, struct bp_skip *skip, char *err, size_t errlen);
int bp_skipped(const struct bp_skip *skip, unsigned k);
const char *bp_policy_name(enum bp_policy p);

/* Fills order[0..n) with the CPUs threads take, returns n (0 if none is usable). allowed NULL =
 * every online CPU. The order: one CPU of every allowed core (a core is allowed if any of its
 * CPUs is), then each core's next allowed sibling, and so on; within each round the fastest
 * class first, then by policy. A list drops CPUs that are offline or not allowed and says so
 * in warn (warn[0] == 0 when there is nothing to say). */
int bp_order(const struct bt_topology *t, const cpu_set_t *allowed, const struct bp_spec *spec, short *order, int maxn,
             char *warn, size_t warnlen);

/* The CPUs a thread whose plan CPU is `cpu` is bound to: the allowed CPUs of its place (its
 * core, L3, node or package), or just `cpu` for BP_UNIT_CPU. */
void bp_place_cpus(const struct bt_topology *t, const cpu_set_t *allowed, enum bp_unit unit, int cpu, cpu_set_t *out);
const char *bp_unit_name(enum bp_unit u);

/* Oversubscription (docs/pinning-oversubscription.md): a thread whose place already holds as many
 * threads as the place has CPUs is not bound to that place alone but to the plan's CPUs around
 * it: those of its NUMA node, else of its package, else all of them, the first of these that is
 * larger than its place. The scheduler then balances the extra threads where one-CPU binding
 * would stack them. Fills out, returns 1 if that is wider than the place, else 0 (out = place). */
int bp_overflow_cpus(const struct bt_topology *t, const cpu_set_t *allowed, const short *order, int n,
                     enum bp_unit unit, int cpu, cpu_set_t *out);
/* 1 if a thread that finds `others` threads on the place of `cpu` overflows it. */
int bp_overflows(const struct bt_topology *t, const cpu_set_t *allowed, enum bp_unit unit, int cpu, unsigned others);

/* The place in the order a new thread takes: the first one with the fewest live threads
 * (live[i]: threads on place i now). While no thread exits this is creation order, wrapping
 * around; a place left by a thread that exited goes to the next new thread, so programs
 * that start and join workers in waves stay spread. */
int bp_pick_slot(const unsigned *live, int n);

/* The CPU of thread k (0 = main, creation order): -1 if the skip mask names it; otherwise the
 * next CPU in the order among the threads not skipped, wrapping around. This is where
 * bp_pick_slot puts thread k while no thread has exited (bobox-run --plan prints it). */
int bp_thread_cpu(const short *order, int n, const struct bp_skip *skip, unsigned k);
/* How many threads before thread k took its place, in that model: the round of the order it is in. */
unsigned bp_thread_round(int n, const struct bp_skip *skip, unsigned k);

/* A child of a pinned thread inherits that thread's one CPU. env is BOBOX_PIN_ALLOWED as the
 * parent left it: "P:list" (only our pinning narrowed masks) or "F:list" (the program set an
 * affinity itself). With "P" and a one-CPU mask inside the list, *mask becomes the list and 1 is
 * returned; any other mask was narrowed on purpose (taskset, a cpuset) and stands. */
int bp_inherit_allowed(cpu_set_t *mask, const char *env);

#ifdef __cplusplus
}
#endif
#endif
