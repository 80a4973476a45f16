/* The CPU order (DESIGN §8, docs/pinning-order.md): one logical CPU of every core before any
 * Hyper-Threading sibling, because two threads on two cores beat two threads on one core's siblings.
 *
 * Within a round the cores are grouped by the topology tree: package > NUMA node > L3 > L2 > core
 * (node > package when a node holds whole packages). scatter deals them out round-robin at every
 * level, as KMP_AFFINITY=scatter and hwloc-distrib do: consecutive threads on different packages
 * first (each has its own memory controllers, L3 and power budget), then different nodes of a
 * package, then different caches; compact takes the groups one after the other, node first
 * (threads that share data share a node and caches).
 *
 * Hybrid parts: the rounds are split by speed class, fastest first. So on a part with HT
 * P-cores and E-cores the order is P-cores, then E-cores, then the P-cores' siblings: a second
 * thread on a P-core takes execution units from the first one and gains less than an idle
 * E-core gives, which is also the preference the Linux scheduler gives hybrid parts (ITMT
 * ranks SMT siblings below the E-cores). */
#define _GNU_SOURCE
#include "plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define NLEVELS 4

const char *bp_policy_name(enum bp_policy p) {
    switch (p) {
    case BP_SCATTER: return "scatter";
    case BP_COMPACT: return "compact";
    case BP_LIST: return "list";
    case BP_NONE: return "none";
    case BP_DOMAIN: return "domains";
    }
    return "?";
}

/* "a", "a-b", "a-b:stride", comma-separated: calls add(v) for each value; -1 if malformed.
 * Stops at end or at `stop`. *end is where it stopped. */
static int parse_indices(const char *p, char stop, const char **end, void (*add)(void *, long), void *ctx) {
    for (;;) {
        long a, b, stride = 1;
        char *e;
        if (*p < '0' || *p > '9') return -1;
        a = strtol(p, &e, 10);
        p = e;
        b = a;
        if (*p == '-') {
            p++;
            if (*p < '0' || *p > '9') return -1;
            b = strtol(p, &e, 10);
            p = e;
            if (*p == ':') {
                p++;
                if (*p < '0' || *p > '9') return -1;
                stride = strtol(p, &e, 10);
                p = e;
            }
        }
        if (b < a || stride < 1 || b >= BT_MAX_CPUS) return -1;
        for (long v = a; v <= b; v += stride)
            if (add) add(ctx, v);
        if (*p == '\0' || *p == stop) {
            *end = p;
            return 0;
        }
        if (*p != ',') return -1;
        p++;
    }
}

/* A domain name: N, S<i>, M<i>, N<i>, C<i>. Returns its length, or -1. */
static int domain_name_len(const char *p) {
    if (!strchr("NSMC", p[0]) || p[0] == '\0') return -1;
    int i = 1;
    while (p[i] >= '0' && p[i] <= '9') i++;
    if (i == 1 && p[0] != 'N') return -1;
    return p[i] == ':' ? i : -1;
}

/* Syntax only: DOMAIN:INDICES[@DOMAIN:INDICES...] */
static int parse_domains(const char *s) {
    for (const char *p = s;;) {
        int len = domain_name_len(p);
        const char *end;
        if (len < 0 || parse_indices(p + len + 1, '@', &end, NULL, NULL) != 0) return -1;
        if (*end == '\0') return 0;
        p = end + 1;
    }
}

const char *bp_unit_name(enum bp_unit u) {
    static const char *const names[] = {"threads", "cores", "ll_caches", "numa_domains", "sockets"};
    return (unsigned)u < sizeof names / sizeof *names ? names[u] : "?";
}

static int unit_key(const struct bt_topology *t, enum bp_unit unit, int cpu) {
    const struct bt_core *k = &t->core[t->cpu[cpu].core];
    switch (unit) {
    case BP_UNIT_CORE: return t->cpu[cpu].core;
    case BP_UNIT_L3: return t->cpu[cpu].l3 >= 0 ? t->cpu[cpu].l3 : k->sib[0];
    case BP_UNIT_NODE: return k->node;
    case BP_UNIT_PACKAGE: return k->package;
    default: return cpu;
    }
}

void bp_place_cpus(const struct bt_topology *t, const cpu_set_t *allowed, enum bp_unit unit, int cpu, cpu_set_t *out) {
    CPU_ZERO(out);
    if (cpu < 0 || cpu >= BT_MAX_CPUS) return;
    CPU_SET(cpu, out);
    if (unit == BP_UNIT_CPU || !t->cpu[cpu].online) return;
    int key = unit_key(t, unit, cpu);
    for (int c = 0; c < BT_MAX_CPUS; c++)
        if (t->cpu[c].online && (!allowed || CPU_ISSET(c, allowed)) && unit_key(t, unit, c) == key) CPU_SET(c, out);
}

int bp_parse_cores(const char *s, struct bp_spec *spec, char *err, size_t errlen) {
    spec->pcores_only = 0;
    if (!s || !*s || !strcasecmp(s, "all")) return 0;
    if (!strcasecmp(s, "p")) {
        spec->pcores_only = 1;
        return 0;
    }
    snprintf(err, errlen, "BOBOX_PIN_CORES=%s: expected p (performance cores only) or all", s);
    return -1;
}

static int core_is_e(const struct bt_topology *t, const struct bt_core *k) {
    return (t->hybrid == 1 && k->kind == BT_KIND_E) || (t->hybrid == 2 && k->cls > 0);
}

int bp_domain_cpus(const struct bt_topology *t, const char *name, size_t namelen, short *out, int maxn) {
    char kind = name[0];
    long id = -1;
    if (namelen > 1) {
        char *e;
        id = strtol(name + 1, &e, 10);
        if (e != name + namelen) return -1;
    } else if (kind != 'N' || namelen != 1) {
        return -1;
    }
    /* C<i>: the i-th distinct L3 by lowest CPU (the l3 key is that CPU) */
    int l3key = -1;
    if (kind == 'C') {
        int seen = 0;
        for (int c = 0; c < BT_MAX_CPUS && l3key < 0; c++)
            if (t->cpu[c].online && t->cpu[c].l3 == c && seen++ == id) l3key = c;
        if (l3key < 0) return 0;
    }
    int n = 0;
    for (int r = 0; r < BT_MAX_SMT; r++)
        for (int c = 0; c < BT_MAX_CPUS && n < maxn; c++) {
            /* cores in order of their first CPU: visit each core at its first CPU */
            if (!t->cpu[c].online) continue;
            const struct bt_core *k = &t->core[t->cpu[c].core];
            if (k->nsib <= r || k->sib[0] != c) continue;
            int in = kind == 'N' && id < 0 ? 1
                     : kind == 'S'         ? k->package == id
                     : kind == 'C'         ? t->cpu[c].l3 == l3key
                                           : k->node == id; /* M<i>, N<i> */
            if (in) out[n++] = k->sib[r];
        }
    return n;
}

struct index_list {
    int n;
    long v[BP_MAX_ORDER];
};

static void add_index(void *ctx, long v) {
    struct index_list *l = ctx;
    if (l->n < BP_MAX_ORDER) l->v[l->n++] = v;
}

/* Resolves the expression to CPUs; indices past a domain's end are named in warn. */
static int resolve_domains(const struct bt_topology *t, const char *s, short *out, int maxn, char *warn,
                           size_t warnlen) {
    static struct index_list idx; /* ~32 KB: not on the stack of a thread the shim starts */
    static short dom[BT_MAX_CPUS];
    int n = 0;
    for (const char *p = s;;) {
        int len = domain_name_len(p);
        const char *end;
        idx.n = 0;
        if (len < 0 || parse_indices(p + len + 1, '@', &end, add_index, &idx) != 0) return n;
        int nd = bp_domain_cpus(t, p, (size_t)len, dom, BT_MAX_CPUS);
        for (int i = 0; i < idx.n; i++) {
            if (idx.v[i] < nd && n < maxn)
                out[n++] = dom[idx.v[i]];
            else if (idx.v[i] >= nd) {
                size_t w = strlen(warn);
                if (w + 64 < warnlen)
                    snprintf(warn + w, warnlen - w, "%s%.*s has %d CPUs, no index %ld", w ? "; " : "BOBOX_PIN: ", len,
                             p, nd > 0 ? nd : 0, idx.v[i]);
                break;
            }
        }
        if (*end == '\0') return n;
        p = end + 1;
    }
}

int bp_parse_policy(const char *s, struct bp_spec *spec, char *err, size_t errlen) {
    static const struct {
        const char *name;
        enum bp_unit unit;
    } places[] = {{"threads", BP_UNIT_CPU},
                  {"cores", BP_UNIT_CORE},
                  {"ll_caches", BP_UNIT_L3},
                  {"numa_domains", BP_UNIT_NODE},
                  {"sockets", BP_UNIT_PACKAGE}};
    spec->policy = BP_SCATTER;
    spec->n = 0;
    spec->domains[0] = '\0';
    spec->unit = BP_UNIT_CPU;
    if (!s || !*s || !strcasecmp(s, "scatter")) return 0;
    for (size_t i = 0; i < sizeof places / sizeof *places; i++)
        if (!strcasecmp(s, places[i].name)) {
            spec->unit = places[i].unit;
            return 0;
        }
    if (!strcasecmp(s, "compact")) {
        spec->policy = BP_COMPACT;
        return 0;
    }
    if (!strcasecmp(s, "none")) {
        spec->policy = BP_NONE;
        return 0;
    }
    if (strchr("NSMC", s[0])) {
        if (parse_domains(s) != 0 || strlen(s) >= sizeof spec->domains) {
            snprintf(err, errlen,
                     "BOBOX_PIN=%s: expected domain expressions such as S0:0-3@S1:0-3 (N: the machine, S<i>: "
                     "package, M<i> or N<i>: NUMA node, C<i>: last-level cache; then the domain's CPUs by index)",
                     s);
            spec->policy = BP_NONE;
            return -1;
        }
        spec->policy = BP_DOMAIN;
        memcpy(spec->domains, s, strlen(s) + 1);
        return 0;
    }
    /* a list keeps its order and may repeat CPUs: the user means exactly that order */
    const char *p = s;
    spec->policy = BP_LIST;
    for (;;) {
        long a, b, stride = 1;
        char *end;
        if (*p < '0' || *p > '9') goto bad;
        a = strtol(p, &end, 10);
        p = end;
        b = a;
        if (*p == '-') {
            p++;
            if (*p < '0' || *p > '9') goto bad;
            b = strtol(p, &end, 10);
            p = end;
            if (*p == ':') {
                p++;
                if (*p < '0' || *p > '9') goto bad;
                stride = strtol(p, &end, 10);
                p = end;
            }
        }
        if (b < a || stride < 1 || b >= BT_MAX_CPUS) goto bad;
        for (long c = a; c <= b; c += stride) {
            if (spec->n >= BP_MAX_ORDER) goto bad;
            spec->cpu[spec->n++] = (short)c;
        }
        if (*p == '\0') return 0;
        if (*p != ',') goto bad;
        p++;
    }
bad:
    snprintf(err, errlen,
             "BOBOX_PIN=%s: expected scatter, compact, none, a CPU list such as 2,0,4-7 (CPUs below %d), "
             "domains such as S0:0-3@S1:0-3, or threads, cores, ll_caches, numa_domains, sockets",
             s, BT_MAX_CPUS);
    spec->policy = BP_NONE;
    spec->n = 0;
    return -1;
}

int bp_parse_skip(const char *s, struct bp_skip *skip, char *err, size_t errlen) {
    memset(skip, 0, sizeof *skip);
    if (!s || !*s) return 0;
    const char *p = s;
    if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) p += 2;
    size_t len = strlen(p);
    if (len == 0) goto bad;
    for (size_t i = 0; i < len; i++) {
        char ch = p[len - 1 - i];
        int v;
        if (ch >= '0' && ch <= '9')
            v = ch - '0';
        else if (ch >= 'a' && ch <= 'f')
            v = ch - 'a' + 10;
        else if (ch >= 'A' && ch <= 'F')
            v = ch - 'A' + 10;
        else
            goto bad;
        if (v && i >= BP_MAX_SKIP / 4) goto bad;
        for (int b = 0; b < 4; b++)
            if (v & (1 << b)) skip->bits[(i * 4 + b) / 8] |= (unsigned char)(1u << ((i * 4 + b) % 8));
    }
    return 0;
bad:
    snprintf(err, errlen, "BOBOX_PIN_SKIP=%s: expected a hex mask such as 0x1 (bit k = thread k, 0 = main)", s);
    memset(skip, 0, sizeof *skip);
    return -1;
}

int bp_skipped(const struct bp_skip *skip, unsigned k) { return k < BP_MAX_SKIP && (skip->bits[k / 8] >> (k % 8) & 1); }

int bp_pick_slot(const unsigned *live, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (live[i] < live[best]) best = i;
    return best;
}

int bp_thread_cpu(const short *order, int n, const struct bp_skip *skip, unsigned k) {
    if (n <= 0 || bp_skipped(skip, k)) return -1;
    unsigned slot = k;
    for (unsigned i = 0; i < k && i < BP_MAX_SKIP; i++) slot -= (unsigned)bp_skipped(skip, i);
    return order[slot % (unsigned)n];
}

unsigned bp_thread_round(int n, const struct bp_skip *skip, unsigned k) {
    if (n <= 0) return 0;
    unsigned slot = k;
    for (unsigned i = 0; i < k && i < BP_MAX_SKIP; i++) slot -= (unsigned)bp_skipped(skip, i);
    return slot / (unsigned)n;
}

int bp_overflows(const struct bt_topology *t, const cpu_set_t *allowed, enum bp_unit unit, int cpu, unsigned others) {
    cpu_set_t place;
    bp_place_cpus(t, allowed, unit, cpu, &place);
    return others >= (unsigned)CPU_COUNT(&place);
}

int bp_overflow_cpus(const struct bt_topology *t, const cpu_set_t *allowed, const short *order, int n,
                     enum bp_unit unit, int cpu, cpu_set_t *out) {
    cpu_set_t place, plan, part;
    bp_place_cpus(t, allowed, unit, cpu, &place);
    *out = place;
    if (cpu < 0 || cpu >= BT_MAX_CPUS || !t->cpu[cpu].online) return 0;
    CPU_ZERO(&plan); /* the CPUs the plan uses: a list or domains keep threads on what they name */
    for (int i = 0; i < n; i++) {
        cpu_set_t p;
        bp_place_cpus(t, allowed, unit, order[i], &p);
        CPU_OR(&plan, &plan, &p);
    }
    /* the node first: the allocator ties a thread's heap to the node it starts on, so a thread that
     * may move within its node keeps its memory local; then the package (its L3); then all */
    const struct bt_core *k = &t->core[t->cpu[cpu].core];
    for (int level = 0; level < 3; level++) {
        CPU_ZERO(&part);
        for (int c = 0; c < BT_MAX_CPUS; c++) {
            if (!CPU_ISSET(c, &plan) || !t->cpu[c].online) continue;
            const struct bt_core *o = &t->core[t->cpu[c].core];
            if (level == 2 || (level == 0 && o->node == k->node) || (level == 1 && o->package == k->package))
                CPU_SET(c, &part);
        }
        CPU_OR(&part, &part, &place);
        if (CPU_COUNT(&part) > CPU_COUNT(&place)) {
            *out = part;
            return 1;
        }
    }
    return 0;
}

int bp_inherit_allowed(cpu_set_t *mask, const char *env) {
    cpu_set_t orig, both;
    if (!env || env[0] != 'P' || env[1] != ':' || bt_parse_cpulist(env + 2, &orig) != 0 || CPU_COUNT(mask) != 1)
        return 0;
    CPU_AND(&both, mask, &orig);
    if (!CPU_EQUAL(&both, mask)) return 0;
    *mask = orig;
    return 1;
}

enum level { LVL_NODE, LVL_PACKAGE, LVL_L3, LVL_L2 };

struct ctx {
    const struct bt_topology *t;
    const short *first;        /* per core: its lowest allowed CPU */
    enum level level[NLEVELS]; /* outermost first */
};

static int level_key(const struct ctx *x, int core, int lvl) {
    const struct bt_core *k = &x->t->core[core];
    int c = x->first[core];
    switch (x->level[lvl]) {
    case LVL_NODE: return k->node;
    case LVL_PACKAGE: return k->package;
    case LVL_L3: return x->t->cpu[c].l3;
    default: return x->t->cpu[c].l2;
    }
}

/* 1 if some package's cores lie on more than one node (sub-NUMA clustering, multi-die parts):
 * then the package is the outer level of the tree. */
static int package_spans_nodes(const struct bt_topology *t) {
    for (int i = 0; i < t->ncores; i++)
        for (int j = i + 1; j < t->ncores; j++)
            if (t->core[i].package == t->core[j].package && t->core[i].node != t->core[j].node) return 1;
    return 0;
}

/* Orders cores[0..n) (one group at level lvl-1) into out: groups at level lvl, ranked by their
 * lowest CPU, each arranged recursively, then dealt round-robin (scatter) or concatenated. */
static void arrange(const struct ctx *x, const int *cores, int n, int lvl, int scatter, int *out) {
    int v[n], gmin[n], tmp[n], start[n + 1];
    memcpy(v, cores, sizeof v);
    /* a group is ranked by its lowest CPU; past the last level each core is a group of its own */
    for (int i = 0; i < n; i++) {
        gmin[i] = x->first[v[i]];
        for (int j = 0; j < n && lvl < NLEVELS; j++)
            if (level_key(x, v[j], lvl) == level_key(x, v[i], lvl) && x->first[v[j]] < gmin[i])
                gmin[i] = x->first[v[j]];
    }
    for (int i = 1; i < n; i++) /* insertion sort by (group, first CPU): groups contiguous */
        for (int j = i; j > 0; j--) {
            int a = j - 1, b = j;
            if (gmin[a] < gmin[b] || (gmin[a] == gmin[b] && x->first[v[a]] < x->first[v[b]])) break;
            int t1 = v[a], t2 = gmin[a];
            v[a] = v[b], gmin[a] = gmin[b];
            v[b] = t1, gmin[b] = t2;
        }
    if (lvl == NLEVELS) {
        memcpy(out, v, sizeof v);
        return;
    }
    int ng = 0;
    for (int i = 0; i < n; i++)
        if (i == 0 || gmin[i] != gmin[i - 1]) start[ng++] = i;
    start[ng] = n;
    for (int g = 0; g < ng; g++) arrange(x, v + start[g], start[g + 1] - start[g], lvl + 1, scatter, tmp + start[g]);
    if (!scatter) {
        memcpy(out, tmp, sizeof tmp);
        return;
    }
    int k = 0;
    for (int i = 0; k < n; i++)
        for (int g = 0; g < ng; g++)
            if (start[g] + i < start[g + 1]) out[k++] = tmp[start[g] + i];
}

static void add_warning(char *warn, size_t warnlen, int cpu, int *dropped) {
    size_t len = strlen(warn);
    if (*dropped == 0)
        snprintf(warn, warnlen, "BOBOX_PIN: CPUs offline or not allowed, left out: %d", cpu);
    else if (len + 16 < warnlen)
        snprintf(warn + len, warnlen - len, ",%d", cpu);
    (*dropped)++;
}

int bp_order(const struct bt_topology *t, const cpu_set_t *allowed, const struct bp_spec *spec, short *order, int maxn,
             char *warn, size_t warnlen) {
    int n = 0;
    if (warnlen) warn[0] = '\0';
    cpu_set_t ok = t->online;
    for (int c = 0; c < BT_MAX_CPUS; c++)
        if (!t->cpu[c].online) CPU_CLR(c, &ok);
    if (allowed) CPU_AND(&ok, &ok, allowed);
    if (spec->policy == BP_NONE) return 0;
    if (spec->policy != BP_LIST && spec->pcores_only)
        for (int i = 0; i < t->ncores; i++)
            if (core_is_e(t, &t->core[i]))
                for (int s = 0; s < t->core[i].nsib; s++) CPU_CLR(t->core[i].sib[s], &ok);
    if (spec->policy == BP_LIST || spec->policy == BP_DOMAIN) {
        static short listed[BP_MAX_ORDER];
        const short *cpus = spec->cpu;
        int count = spec->n, dropped = 0;
        if (spec->policy == BP_DOMAIN) {
            count = resolve_domains(t, spec->domains, listed, BP_MAX_ORDER, warn, warnlen);
            cpus = listed;
        }
        char more[600] = "";
        for (int i = 0; i < count && n < maxn; i++) {
            if (CPU_ISSET(cpus[i], &ok))
                order[n++] = cpus[i];
            else
                add_warning(more, sizeof more, cpus[i], &dropped);
        }
        size_t w = strlen(warn);
        if (more[0] && w + 2 < warnlen)
            snprintf(warn + w, warnlen - w, "%s%s", w ? "; " : "", more + (w ? strlen("BOBOX_PIN: ") : 0));
        return n;
    }
    if (t->ncores <= 0) return 0;

    int nc = t->ncores, na[nc], maxr = 0;
    short first[nc];
    for (int i = 0; i < nc; i++) {
        na[i] = 0;
        first[i] = -1;
        for (int s = 0; s < t->core[i].nsib; s++)
            if (CPU_ISSET(t->core[i].sib[s], &ok) && na[i]++ == 0) first[i] = t->core[i].sib[s];
        if (na[i] > maxr) maxr = na[i];
    }
    struct ctx x = {t, first, {LVL_NODE, LVL_PACKAGE, LVL_L3, LVL_L2}};
    if (spec->policy == BP_SCATTER && package_spans_nodes(t)) {
        x.level[0] = LVL_PACKAGE;
        x.level[1] = LVL_NODE;
    }
    int ord[nc], cls_start[t->nclasses + 1], m = 0;
    for (int cls = 0; cls < t->nclasses; cls++) {
        int sel[nc], ns = 0;
        for (int i = 0; i < nc; i++)
            if (na[i] > 0 && t->core[i].cls == cls) sel[ns++] = i;
        cls_start[cls] = m;
        if (ns > 0) arrange(&x, sel, ns, 0, spec->policy == BP_SCATTER, ord + m);
        m += ns;
    }
    cls_start[t->nclasses] = m;
    if (spec->unit != BP_UNIT_CPU) {
        /* one place per core, L3, node or package: the first CPU of each in the round order */
        for (int i = 0; i < m && n < maxn; i++) {
            int cpu = first[ord[i]], seen = 0;
            for (int j = 0; j < n && !seen; j++)
                seen = unit_key(t, spec->unit, order[j]) == unit_key(t, spec->unit, cpu);
            if (!seen) order[n++] = (short)cpu;
        }
        return n;
    }
    for (int r = 0; r < maxr; r++)
        for (int cls = 0; cls < t->nclasses; cls++)
            for (int i = cls_start[cls]; i < cls_start[cls + 1]; i++) {
                const struct bt_core *k = &t->core[ord[i]];
                int seen = 0;
                for (int s = 0; s < k->nsib && n < maxn; s++)
                    if (CPU_ISSET(k->sib[s], &ok) && seen++ == r) order[n++] = k->sib[s];
            }
    return n;
}
