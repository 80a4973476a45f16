/* Run under libbobox-pin.so (scatter) in the guest: starts threads, reads each one's real
 * affinity and the CPU it runs on, and checks them against the guest kernel's topology (read
 * from /sys here, not by our reader), against `bobox-run --plan` and against the machine the
 * host booted.
 * usage: vm_affinity NTHREADS PLANFILE S,N,C,T scatter|compact
 *        (S,N,C,T: the packages, nodes, cores and threads per core the host booted) */
#include "vm_sys.h"

#include <pthread.h>

static struct vm_topo topo;
static pthread_barrier_t all_started;
static int mask_cpu[4096], run_cpu[4096], mask_count[4096];
static cpu_set_t mask[4096];

/* "0-3,8" */
static void format_set(const cpu_set_t *set, char *buf, size_t len)
{
    size_t pos = 0;
    buf[0] = '\0';
    for (int c = 0; c < VM_MAX_CPUS && pos + 16 < len; c++) {
        if (!CPU_ISSET(c, set))
            continue;
        int e = c;
        while (e + 1 < VM_MAX_CPUS && CPU_ISSET(e + 1, set))
            e++;
        pos += (size_t)(e > c ? snprintf(buf + pos, len - pos, "%s%d-%d", pos ? "," : "", c, e)
                              : snprintf(buf + pos, len - pos, "%s%d", pos ? "," : "", c));
        c = e;
    }
}

/* The CPUs of node `node`, as the kernel lists them. */
static void node_cpus(int node, cpu_set_t *set)
{
    CPU_ZERO(set);
    for (int c = 0; c < VM_MAX_CPUS; c++)
        if (topo.cpu[c].online && topo.cpu[c].node == node)
            CPU_SET(c, set);
}

static void record(int k)
{
    cpu_set_t set;
    mask_count[k] = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : -1;
    mask[k] = set;
    mask_cpu[k] = vm_first(&set);
    for (int i = 0; i < 3; i++) /* a thread moved by its pinning may still be on its old CPU once */
        sched_yield();
    run_cpu[k] = sched_getcpu();
}

static void *worker(void *arg)
{
    record((int)(long)arg);
    pthread_barrier_wait(&all_started); /* alive until all are placed: creation order = plan order */
    return NULL;
}

/* The plan's CPU of each thread, and what it is bound to (its "bound to" column, or its CPU). */
static int read_plan(const char *path, int *cpu, char (*bound)[64], int n)
{
    FILE *f = fopen(path, "r");
    char line[512];
    int got = 0;
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f)) {
        int k, c;
        if (sscanf(line, "%d %d", &k, &c) == 2 && k == got && got < n) {
            /* thread cpu core_id package node sibling L2 L3 kind [bound to] */
            char *tok[12], *save = NULL;
            int nt = 0;
            for (char *t = strtok_r(line, " \t\n", &save); t && nt < 12; t = strtok_r(NULL, " \t\n", &save))
                tok[nt++] = t;
            snprintf(bound[got], sizeof bound[got], "%s", nt == 10 ? tok[9] : tok[1]);
            cpu[got++] = c;
        }
    }
    fclose(f);
    return got;
}

int main(int argc, char **argv)
{
    if (argc != 5 || (strcmp(argv[4], "scatter") && strcmp(argv[4], "compact"))) {
        fprintf(stderr, "usage: vm_affinity NTHREADS PLANFILE S,N,C,T scatter|compact\n");
        return 2;
    }
    int n = atoi(argv[1]), want[4];
    if (n < 1 || n > 4096 || sscanf(argv[3], "%d,%d,%d,%d", &want[0], &want[1], &want[2], &want[3]) != 4) {
        fprintf(stderr, "vm_affinity: bad arguments\n");
        return 2;
    }
    if (vm_read_topo(&topo) != 0) {
        vm_result(0, "guest-topology", "cannot read /sys/devices/system/cpu");
        return 1;
    }
    int compact = !strcmp(argv[4], "compact");
    if (!compact) /* once per guest */
        vm_result(topo.npackages == want[0] && topo.nnodes == want[1] && topo.ncores == want[2] &&
                  topo.max_siblings == want[3],
              "guest-topology", "kernel shows %d packages, %d nodes, %d cores, %d threads/core; booted %s",
              topo.npackages, topo.nnodes, topo.ncores, topo.max_siblings, argv[3]);

    pthread_barrier_init(&all_started, NULL, (unsigned)n);
    pthread_t th[4096];
    record(0);
    for (int k = 1; k < n; k++)
        if (pthread_create(&th[k], NULL, worker, (void *)(long)k) != 0) {
            vm_result(0, "affinity-threads", "pthread_create %d failed", k);
            return 1;
        }
    pthread_barrier_wait(&all_started);
    for (int k = 1; k < n; k++)
        pthread_join(th[k], NULL);

    /* every thread up to the CPU count: one CPU in its mask, and running there; those beyond
     * it (oversubscription): the CPUs of the node of the CPU the plan gives them, and running
     * on one of them */
    static int plan[4096];
    static char bound[4096][64];
    int np = read_plan(argv[2], plan, bound, n);
    char why[1024] = "";
    for (int k = 0; k < n && !why[0]; k++) {
        if (k < topo.ncpus) {
            if (mask_count[k] != 1 || run_cpu[k] != mask_cpu[k])
                snprintf(why, sizeof why, "thread %d: %d CPUs in its mask (first %d), runs on %d", k, mask_count[k],
                         mask_cpu[k], run_cpu[k]);
            continue;
        }
        cpu_set_t want;
        char got[256], exp[256];
        node_cpus(k < np && plan[k] >= 0 && plan[k] < VM_MAX_CPUS ? topo.cpu[plan[k]].node : -1, &want);
        format_set(&mask[k], got, sizeof got);
        format_set(&want, exp, sizeof exp);
        if (!CPU_EQUAL(&mask[k], &want) || run_cpu[k] < 0 || !CPU_ISSET(run_cpu[k], &mask[k]))
            snprintf(why, sizeof why, "thread %d beyond the %d CPUs: mask %s, want its node's CPUs %s; runs on %d", k,
                     topo.ncpus, got, exp, run_cpu[k]);
    }
    vm_result(!why[0], compact ? "compact-affinity-one-cpu" : "affinity-one-cpu", "%s", why);

    /* the plan bobox-run printed is the one the shim applied */
    why[0] = '\0';
    if (np != n)
        snprintf(why, sizeof why, "bobox-run --plan listed %d of %d threads", np, n);
    for (int k = 0; k < n && !why[0]; k++) {
        char got[256];
        format_set(&mask[k], got, sizeof got);
        if (strcmp(bound[k], got))
            snprintf(why, sizeof why, "thread %d: plan says %s, the shim bound it to %s", k, bound[k], got);
    }
    vm_result(!why[0], compact ? "compact-plan-matches-shim" : "plan-matches-shim", "%s", why);

    if (compact) {
        /* compact: one thread per core first, and a node's cores one after the other */
        int core_used[VM_MAX_CPUS] = { 0 }, node_done[VM_MAX_CPUS] = { 0 };
        why[0] = '\0';
        for (int k = 0; k < n && k < topo.ncores && !why[0]; k++) {
            struct vm_cpu *me = &topo.cpu[mask_cpu[k] < 0 ? 0 : mask_cpu[k]];
            if (core_used[me->core]++)
                snprintf(why, sizeof why, "thread %d: CPU %d is a sibling of a core already used", k, mask_cpu[k]);
            else if (node_done[me->node])
                snprintf(why, sizeof why, "thread %d: back on node %d after leaving it", k, me->node);
            if (k > 0 && topo.cpu[mask_cpu[k - 1]].node != me->node)
                node_done[topo.cpu[mask_cpu[k - 1]].node] = 1;
        }
        vm_result(!why[0], "compact-fills-nodes", "%s", why);
        return vm_failures ? 1 : 0;
    }

    /* scatter by the kernel's tree: one thread per core before any sibling; at each step the
     * package with the fewest threads (among those with a free core), and in it the node with
     * the fewest; every CPU once before any twice */
    int core_used[VM_MAX_CPUS] = { 0 }, in_pkg[VM_MAX_CPUS] = { 0 }, in_node[VM_MAX_CPUS] = { 0 };
    int cores_pkg[VM_MAX_CPUS] = { 0 }, cores_node[VM_MAX_CPUS] = { 0 }, cpu_used[VM_MAX_CPUS] = { 0 };
    for (int c = 0; c < VM_MAX_CPUS; c++)
        if (topo.cpu[c].online && topo.cpu[c].core == c)
            cores_pkg[topo.cpu[c].package]++, cores_node[topo.cpu[c].node]++;
    why[0] = '\0';
    for (int k = 0; k < n && k < topo.ncpus && !why[0]; k++) {
        int c = mask_cpu[k];
        if (c < 0 || c >= VM_MAX_CPUS || !topo.cpu[c].online) {
            snprintf(why, sizeof why, "thread %d on CPU %d, not online", k, c);
            break;
        }
        struct vm_cpu *me = &topo.cpu[c];
        if (cpu_used[c]++)
            snprintf(why, sizeof why, "thread %d: CPU %d used twice in the first %d threads", k, c, topo.ncpus);
        if (k < topo.ncores) {
            if (core_used[me->core]++)
                snprintf(why, sizeof why, "thread %d: CPU %d is a sibling of a core already used, %d cores", k, c,
                         topo.ncores);
            for (int o = 0; o < VM_MAX_CPUS && !why[0]; o++) {
                struct vm_cpu *x = &topo.cpu[o];
                if (!x->online || x->core != o)
                    continue;
                if (in_pkg[x->package] < cores_pkg[x->package] && in_pkg[x->package] < in_pkg[me->package])
                    snprintf(why, sizeof why, "thread %d on package %d (%d threads) while package %d has %d", k,
                             me->package, in_pkg[me->package], x->package, in_pkg[x->package]);
                else if (x->package == me->package && in_node[x->node] < cores_node[x->node] &&
                         in_node[x->node] < in_node[me->node])
                    snprintf(why, sizeof why, "thread %d on node %d (%d threads) while node %d of its package has %d",
                             k, me->node, in_node[me->node], x->node, in_node[x->node]);
            }
            in_pkg[me->package]++, in_node[me->node]++;
        }
    }
    for (int k = topo.ncpus; k < n && !why[0]; k++) {
        cpu_set_t want; /* wrapping around: the node of the CPU of thread k - ncpus */
        node_cpus(topo.cpu[mask_cpu[k - topo.ncpus]].node, &want);
        if (!CPU_EQUAL(&mask[k], &want))
            snprintf(why, sizeof why, "thread %d not bound to the node of thread %d's CPU %d: no wrap-around", k,
                     k - topo.ncpus, mask_cpu[k - topo.ncpus]);
    }
    vm_result(!why[0], "scatter-follows-kernel-tree", "%s", why);
    return vm_failures ? 1 : 0;
}
