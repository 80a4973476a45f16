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

const char *bp_policy_name(enum bp_policy p)
{
    switch (p) {
    case BP_SCATTER: return "scatter";
    case BP_COMPACT: return "compact";
    case BP_LIST: return "list";
    case BP_NONE: return "none";
    }
    return "?";
}

int bp_parse_policy(const char *s, struct bp_spec *spec, char *err, size_t errlen)
{
    spec->policy = BP_SCATTER;
    spec->n = 0;
    if (!s || !*s || !strcasecmp(s, "scatter"))
        return 0;
    if (!strcasecmp(s, "compact")) {
        spec->policy = BP_COMPACT;
        return 0;
    }
    if (!strcasecmp(s, "none")) {
        spec->policy = BP_NONE;
        return 0;
    }
    /* a list keeps its order and may repeat CPUs: the user means exactly that order */
    const char *p = s;
    spec->policy = BP_LIST;
    for (;;) {
        long a, b, stride = 1;
        char *end;
        if (*p < '0' || *p > '9')
            goto bad;
        a = strtol(p, &end, 10);
        p = end;
        b = a;
        if (*p == '-') {
            p++;
            if (*p < '0' || *p > '9')
                goto bad;
            b = strtol(p, &end, 10);
            p = end;
            if (*p == ':') {
                p++;
                if (*p < '0' || *p > '9')
                    goto bad;
                stride = strtol(p, &end, 10);
                p = end;
            }
        }
        if (b < a || stride < 1 || b >= BT_MAX_CPUS)
            goto bad;
        for (long c = a; c <= b; c += stride) {
            if (spec->n >= BP_MAX_ORDER)
                goto bad;
            spec->cpu[spec->n++] = (short)c;
        }
        if (*p == '\0')
            return 0;
        if (*p != ',')
            goto bad;
        p++;
    }
bad:
    snprintf(err, errlen,
             "BOBOX_PIN=%s: expected scatter, compact, none or a CPU list such as 2,0,4-7 (CPUs below %d)",
             s, BT_MAX_CPUS);
    spec->policy = BP_NONE;
    spec->n = 0;
    return -1;
}

int bp_parse_skip(const char *s, struct bp_skip *skip, char *err, size_t errlen)
{
    memset(skip, 0, sizeof *skip);
    if (!s || !*s)
        return 0;
    const char *p = s;
    if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
        p += 2;
    size_t len = strlen(p);
    if (len == 0)
        goto bad;
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
        if (v && i >= BP_MAX_SKIP / 4)
            goto bad;
        for (int b = 0; b < 4; b++)
            if (v & (1 << b))
                skip->bits[(i * 4 + b) / 8] |= (unsigned char)(1u << ((i * 4 + b) % 8));
    }
    return 0;
bad:
    snprintf(err, errlen, "BOBOX_PIN_SKIP=%s: expected a hex mask such as 0x1 (bit k = thread k, 0 = main)", s);
    memset(skip, 0, sizeof *skip);
    return -1;
}

int bp_skipped(const struct bp_skip *skip, unsigned k)
{
    return k < BP_MAX_SKIP && (skip->bits[k / 8] >> (k % 8) & 1);
}

int bp_pick_slot(const unsigned *live, int n)
{
    int best = 0;
    for (int i = 1; i < n; i++)
        if (live[i] < live[best])
            best = i;
    return best;
}

int bp_thread_cpu(const short *order, int n, const struct bp_skip *skip, unsigned k)
{
    if (n <= 0 || bp_skipped(skip, k))
        return -1;
    unsigned slot = k;
    for (unsigned i = 0; i < k && i < BP_MAX_SKIP; i++)
        slot -= (unsigned)bp_skipped(skip, i);
    return order[slot % (unsigned)n];
}

int bp_inherit_allowed(cpu_set_t *mask, const char *env)
{
    cpu_set_t orig, both;
    if (!env || env[0] != 'P' || env[1] != ':' || bt_parse_cpulist(env + 2, &orig) != 0 || CPU_COUNT(mask) != 1)
        return 0;
    CPU_AND(&both, mask, &orig);
    if (!CPU_EQUAL(&both, mask))
        return 0;
    *mask = orig;
    return 1;
}

enum level { LVL_NODE, LVL_PACKAGE, LVL_L3, LVL_L2 };

struct ctx {
    const struct bt_topology *t;
    const short *first;        /* per core: its lowest allowed CPU */
    enum level level[NLEVELS]; /* outermost first */
};

static int level_key(const struct ctx *x, int core, int lvl)
{
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
static int package_spans_nodes(const struct bt_topology *t)
{
    for (int i = 0; i < t->ncores; i++)
        for (int j = i + 1; j < t->ncores; j++)
            if (t->core[i].package == t->core[j].package && t->core[i].node != t->core[j].node)
                return 1;
    return 0;
}

/* Orders cores[0..n) (one group at level lvl-1) into out: groups at level lvl, ranked by their
 * lowest CPU, each arranged recursively, then dealt round-robin (scatter) or concatenated. */
static void arrange(const struct ctx *x, const int *cores, int n, int lvl, int scatter, int *out)
{
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
            if (gmin[a] < gmin[b] || (gmin[a] == gmin[b] && x->first[v[a]] < x->first[v[b]]))
                break;
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
        if (i == 0 || gmin[i] != gmin[i - 1])
            start[ng++] = i;
    start[ng] = n;
    for (int g = 0; g < ng; g++)
        arrange(x, v + start[g], start[g + 1] - start[g], lvl + 1, scatter, tmp + start[g]);
    if (!scatter) {
        memcpy(out, tmp, sizeof tmp);
        return;
    }
    int k = 0;
    for (int i = 0; k < n; i++)
        for (int g = 0; g < ng; g++)
            if (start[g] + i < start[g + 1])
                out[k++] = tmp[start[g] + i];
}

static void add_warning(char *warn, size_t warnlen, int cpu, int *dropped)
{
    size_t len = strlen(warn);
    if (*dropped == 0)
        snprintf(warn, warnlen, "BOBOX_PIN: CPUs offline or not allowed, left out: %d", cpu);
    else if (len + 16 < warnlen)
        snprintf(warn + len, warnlen - len, ",%d", cpu);
    (*dropped)++;
}

int bp_order(const struct bt_topology *t, const cpu_set_t *allowed, const struct bp_spec *spec,
             short *order, int maxn, char *warn, size_t warnlen)
{
    int n = 0;
    if (warnlen)
        warn[0] = '\0';
    cpu_set_t ok = t->online;
    for (int c = 0; c < BT_MAX_CPUS; c++)
        if (!t->cpu[c].online)
            CPU_CLR(c, &ok);
    if (allowed)
        CPU_AND(&ok, &ok, allowed);
    if (spec->policy == BP_NONE)
        return 0;
    if (spec->policy == BP_LIST) {
        int dropped = 0;
        for (int i = 0; i < spec->n && n < maxn; i++) {
            if (CPU_ISSET(spec->cpu[i], &ok))
                order[n++] = spec->cpu[i];
            else
                add_warning(warn, warnlen, spec->cpu[i], &dropped);
        }
        return n;
    }
    if (t->ncores <= 0)
        return 0;

    int nc = t->ncores, na[nc], maxr = 0;
    short first[nc];
    for (int i = 0; i < nc; i++) {
        na[i] = 0;
        first[i] = -1;
        for (int s = 0; s < t->core[i].nsib; s++)
            if (CPU_ISSET(t->core[i].sib[s], &ok) && na[i]++ == 0)
                first[i] = t->core[i].sib[s];
        if (na[i] > maxr)
            maxr = na[i];
    }
    struct ctx x = { t, first, { LVL_NODE, LVL_PACKAGE, LVL_L3, LVL_L2 } };
    if (spec->policy == BP_SCATTER && package_spans_nodes(t)) {
        x.level[0] = LVL_PACKAGE;
        x.level[1] = LVL_NODE;
    }
    int ord[nc], cls_start[t->nclasses + 1], m = 0;
    for (int cls = 0; cls < t->nclasses; cls++) {
        int sel[nc], ns = 0;
        for (int i = 0; i < nc; i++)
            if (na[i] > 0 && t->core[i].cls == cls)
                sel[ns++] = i;
        cls_start[cls] = m;
        if (ns > 0)
            arrange(&x, sel, ns, 0, spec->policy == BP_SCATTER, ord + m);
        m += ns;
    }
    cls_start[t->nclasses] = m;
    for (int r = 0; r < maxr; r++)
        for (int cls = 0; cls < t->nclasses; cls++)
            for (int i = cls_start[cls]; i < cls_start[cls + 1]; i++) {
                const struct bt_core *k = &t->core[ord[i]];
                int seen = 0;
                for (int s = 0; s < k->nsib && n < maxn; s++)
                    if (CPU_ISSET(k->sib[s], &ok) && seen++ == r)
                        order[n++] = k->sib[s];
            }
    return n;
}
