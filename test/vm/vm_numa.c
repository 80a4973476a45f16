/* Run under both libraries (bobox-run) in a guest with several NUMA nodes: the memory a thread
 * allocates lies on the node of the CPU it is pinned to (move_pages asks the kernel where each
 * page is), for small, medium and large objects:
 *   own            the owner allocates and touches
 *   foreign-touch  the owner allocates, a thread of another node touches first: only the
 *                  allocator's binding (mbind) keeps the pages on the owner's node
 *   remote-reuse   a thread of another node frees the owner's objects, the owner allocates again
 *   handback       everything freed into the caches, the threads exit; new threads, each moved
 *                  to another node than its predecessor, allocate: caches and adopted heaps must
 *                  hand them memory of their own node
 * Also: every thread is pinned to one CPU and the threads cover every node.
 *
 * vm_numa --mem=interleave|bind:N (under bobox-run --mem=the same, BOBOX_THP=never): the pages of
 * a large object follow that policy (interleave: each page on the node after its predecessor's,
 * every node used; bind:N: all on node N), while small and medium objects stay on the node of the
 * allocating thread. */
#include "vm_sys.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PAGE 4096UL
#define MAX_THREADS 256
#define MAX_OBJS 256

static const struct {
    const char *name;
    size_t size;
    int count;
} kinds[] = { { "small", 64, 256 }, { "medium", 64 << 10, 8 }, { "large", 4 << 20, 2 } };
#define NKINDS 3

enum phase { OWN, FOREIGN, REUSE, HANDBACK, NPHASES };
static const char *const phase_names[] = { "own", "foreign-touch", "remote-reuse", "handback" };

struct tally {
    long pages, wrong;
    char first[256]; /* the first wrong page, described */
};

static struct vm_topo topo;
static int nthreads, node_of[MAX_THREADS], partner[MAX_THREADS], pinned_ok = 1;
static void *objs[MAX_THREADS][2][NKINDS][MAX_OBJS]; /* [thread][set A/B][kind][i] */
static struct tally tallies[NPHASES][NKINDS];
static pthread_mutex_t tally_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t step;

static int current_node(void)
{
    int cpu = sched_getcpu();
    return cpu >= 0 && cpu < VM_MAX_CPUS ? topo.cpu[cpu].node : -1;
}

/* "N kB free" on a node: a preferred node that is full lets the kernel place pages elsewhere. */
static const char *node_free(int node)
{
    static __thread char buf[64];
    char path[96], line[256];
    snprintf(path, sizeof path, "/sys/devices/system/node/node%d/meminfo", node);
    snprintf(buf, sizeof buf, "free unknown");
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f)) {
        char *p = strstr(line, "MemFree:");
        if (p) {
            snprintf(buf, sizeof buf, "%ld kB free", atol(p + 8));
            break;
        }
    }
    if (f)
        fclose(f);
    return buf;
}

/* The memory policy of the mapping at p: the node the allocator bound it to, if it did. */
static const char *policy_of(void *p)
{
    static __thread char buf[64];
    int mode = -1;
    unsigned long mask[16] = { 0 };
    if (syscall(SYS_get_mempolicy, &mode, mask, 1024UL, p, 2UL /* MPOL_F_ADDR */) != 0)
        return "no policy";
    int node = -1;
    for (int i = 0; i < 1024 && node < 0; i++)
        if (mask[i / 64] >> (i % 64) & 1)
            node = i;
    snprintf(buf, sizeof buf, mode == 0 ? "not bound" : "bound to node %d (mode %d)", node, mode);
    return buf;
}

/* Asks the kernel which node each page of objects[0..n) of `size` bytes is on. */
static void check(enum phase ph, int kind, void **objects, int n, size_t size, int want, int thread)
{
    static __thread void *pages[2048];
    static __thread int status[2048];
    long np = 0, wrong = 0;
    char first[256] = "";
    for (int i = 0; i < n; i++) {
        uintptr_t a = (uintptr_t)objects[i] & ~(PAGE - 1), end = (uintptr_t)objects[i] + size;
        for (; a < end; a += PAGE) {
            pages[np++] = (void *)a;
            if (np == 2048 || (i == n - 1 && a + PAGE >= end)) {
                if (syscall(SYS_move_pages, 0, (unsigned long)np, pages, NULL, status, 0) != 0)
                    for (long k = 0; k < np; k++)
                        status[k] = -errno;
                for (long k = 0; k < np; k++)
                    if (status[k] != want && wrong++ == 0)
                        snprintf(first, sizeof first, "thread %d (node %d, now on %d, %s): %s page %p on node %d, %s",
                                 thread, want, current_node(), node_free(want), kinds[kind].name, pages[k], status[k],
                                 policy_of(pages[k]));
                pthread_mutex_lock(&tally_lock);
                tallies[ph][kind].pages += np;
                pthread_mutex_unlock(&tally_lock);
                np = 0;
            }
        }
    }
    pthread_mutex_lock(&tally_lock);
    if (wrong && tallies[ph][kind].wrong == 0)
        memcpy(tallies[ph][kind].first, first, sizeof first);
    tallies[ph][kind].wrong += wrong;
    pthread_mutex_unlock(&tally_lock);
}

static void alloc_set(int t, int set, int touch)
{
    for (int k = 0; k < NKINDS; k++)
        for (int i = 0; i < kinds[k].count; i++) {
            objs[t][set][k][i] = malloc(kinds[k].size);
            if (!objs[t][set][k][i]) {
                fprintf(stderr, "malloc(%zu) failed\n", kinds[k].size);
                exit(1);
            }
            if (touch)
                memset(objs[t][set][k][i], 0x5a, kinds[k].size);
        }
}

static void free_set(int t, int set)
{
    for (int k = 0; k < NKINDS; k++)
        for (int i = 0; i < kinds[k].count; i++)
            free(objs[t][set][k][i]);
}

static void check_set(enum phase ph, int t, int set)
{
    for (int k = 0; k < NKINDS; k++)
        check(ph, k, objs[t][set][k], kinds[k].count, kinds[k].size, node_of[t], t);
}

/* Superblock and large-cache traffic: more medium objects than one superblock holds, and large
 * ones, allocated, touched and freed by their owner. */
static void churn(void)
{
    static __thread void *p[200];
    for (int i = 0; i < 200; i++)
        memset(p[i] = malloc(64 << 10), 1, 64 << 10);
    for (int i = 0; i < 200; i++)
        free(p[i]);
    for (int i = 0; i < 6; i++)
        memset(p[i] = malloc(4 << 20), 1, 4 << 20);
    for (int i = 0; i < 6; i++)
        free(p[i]);
}

static void *wave1(void *arg)
{
    int t = (int)(long)arg;
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0 || CPU_COUNT(&set) != 1)
        pinned_ok = 0;
    node_of[t] = current_node();
    pthread_barrier_wait(&step); /* every node known: partners can be chosen */
    if (t == 0)
        for (int i = 0; i < nthreads; i++) {
            partner[i] = -1;
            for (int d = 1; d < nthreads && partner[i] < 0; d++)
                if (node_of[(i + d) % nthreads] != node_of[i])
                    partner[i] = (i + d) % nthreads;
        }
    alloc_set(t, 0, 1);
    check_set(OWN, t, 0);
    alloc_set(t, 1, 0);
    pthread_barrier_wait(&step);
    for (int o = 0; o < nthreads; o++) /* first touch of the objects of threads we partner */
        if (partner[o] == t)
            for (int k = 0; k < NKINDS; k++)
                for (int i = 0; i < kinds[k].count; i++)
                    memset(objs[o][1][k][i], 0xa5, kinds[k].size);
    pthread_barrier_wait(&step);
    check_set(FOREIGN, t, 1);
    for (int round = 0; round < 4; round++) {
        pthread_barrier_wait(&step);
        for (int o = 0; o < nthreads; o++)
            if (partner[o] == t)
                free_set(o, 0);
        pthread_barrier_wait(&step);
        alloc_set(t, 0, 1);
        check_set(REUSE, t, 0);
    }
    pthread_barrier_wait(&step);
    free_set(t, 0);
    free_set(t, 1);
    churn();
    return NULL;
}

/* A new thread, moved to the node after its predecessor's: what the caches and the heaps the
 * old threads left hand it must be memory of the new node. */
static void *wave2(void *arg)
{
    int t = (int)(long)arg, target = -1;
    for (int d = 1; d <= topo.nnodes && target < 0; d++) /* the next node that has CPUs */
        for (int c = 0; c < VM_MAX_CPUS && target < 0; c++)
            if (topo.cpu[c].online && topo.cpu[c].node == (node_of[t] + d) % 64)
                target = topo.cpu[c].node;
    if (target < 0)
        target = node_of[t];
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int c = 0; c < VM_MAX_CPUS; c++)
        if (topo.cpu[c].online && topo.cpu[c].node == target)
            CPU_SET(c, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0 || current_node() != target)
        pinned_ok = 0;
    node_of[t] = target;
    churn();
    alloc_set(t, 0, 1);
    check_set(HANDBACK, t, 0);
    free_set(t, 0);
    return NULL;
}

/* The node of each page of [p, p + size), into status (at most 4096 pages). */
static long page_nodes(void *p, size_t size, int *status)
{
    static void *pages[4096];
    long np = 0;
    for (uintptr_t a = (uintptr_t)p & ~(PAGE - 1); a < (uintptr_t)p + size && np < 4096; a += PAGE)
        pages[np++] = (void *)a;
    if (syscall(SYS_move_pages, 0, (unsigned long)np, pages, NULL, status, 0) != 0)
        return -1;
    return np;
}

static int mem_policy_check(const char *policy)
{
    static int status[4096];
    int bind_node = -1, own = current_node(), nodes[64], nn = 0;
    if (strcmp(policy, "interleave") && sscanf(policy, "bind:%d", &bind_node) != 1) {
        fprintf(stderr, "vm_numa: --mem=interleave or --mem=bind:N\n");
        return 2;
    }
    for (int node = 0; node < 62; node++) /* the nodes that have CPUs (and, in QEMU, memory) */
        for (int c = 0; c < VM_MAX_CPUS; c++)
            if (topo.cpu[c].online && topo.cpu[c].node == node) {
                nodes[nn++] = node;
                break;
            }
    char name[64], why[300] = "";
    snprintf(name, sizeof name, "mem-%s-large", policy);
    size_t size = 8 << 20; /* 2048 pages */
    char *large = malloc(size);
    if (!large) {
        vm_result(0, name, "malloc failed");
        return 1;
    }
    memset(large, 1, size);
    long np = page_nodes(large, size, status), seen = 0;
    if (np <= 0)
        snprintf(why, sizeof why, "move_pages failed: %s", strerror(errno));
    for (long i = 0; i < np && !why[0]; i++) {
        int want = bind_node;
        if (bind_node < 0 && i > 0) { /* interleave: the next node after the previous page's */
            int k = 0;
            while (k < nn && nodes[k] != status[i - 1])
                k++;
            want = nodes[(k + 1) % nn];
        }
        if (want >= 0 && status[i] != want)
            snprintf(why, sizeof why, "page %ld of %ld on node %d, want %d (%s)", i, np, status[i], want,
                     policy_of(large + i * PAGE));
        for (int k = 0; k < nn; k++)
            if (status[i] == nodes[k])
                seen |= 1L << k;
    }
    if (!why[0] && bind_node < 0 && seen != (1L << nn) - 1)
        snprintf(why, sizeof why, "the pages use %d of %d nodes", __builtin_popcountl((unsigned long)seen), nn);
    if (why[0])
        vm_result(0, name, "%s", why);
    else
        vm_result(1, name, "%ld pages as the policy says", np);
    free(large);

    /* small and medium objects: on the node of the thread, whatever the policy */
    why[0] = '\0';
    for (int k = 0; k < 2 && !why[0]; k++) {
        void *obj[256];
        for (int i = 0; i < kinds[k].count; i++)
            memset(obj[i] = malloc(kinds[k].size), 2, kinds[k].size);
        for (int i = 0; i < kinds[k].count && !why[0]; i++) {
            long n = page_nodes(obj[i], kinds[k].size, status);
            for (long j = 0; j < n && !why[0]; j++)
                if (status[j] != own)
                    snprintf(why, sizeof why, "a %s object's page on node %d, the thread's node is %d", kinds[k].name,
                             status[j], own);
        }
        for (int i = 0; i < kinds[k].count; i++)
            free(obj[i]);
    }
    snprintf(name, sizeof name, "mem-%s-small-medium", policy);
    vm_result(!why[0], name, "%s", why[0] ? why : "on the thread's node");
    return vm_failures ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (vm_read_topo(&topo) != 0) {
        vm_result(0, "numa-topology", "cannot read /sys");
        return 1;
    }
    if (argc == 2 && !strncmp(argv[1], "--mem=", 6)) {
        if (topo.nnodes < 2) {
            vm_skip("mem-policy", "the guest has one NUMA node");
            return 0;
        }
        return mem_policy_check(argv[1] + 6);
    }
    if (topo.nnodes < 2) {
        vm_skip("numa-placement", "the guest has one NUMA node");
        return 0;
    }
    nthreads = topo.ncpus < MAX_THREADS ? topo.ncpus : MAX_THREADS;
    pthread_barrier_init(&step, NULL, (unsigned)nthreads);
    pthread_t th[MAX_THREADS];
    for (int t = 1; t < nthreads; t++)
        pthread_create(&th[t], NULL, wave1, (void *)(long)t);
    wave1((void *)0);
    for (int t = 1; t < nthreads; t++)
        pthread_join(th[t], NULL);
    int nodes_used = 0;
    for (int node = 0; node < 64; node++) {
        int used = 0;
        for (int t = 0; t < nthreads; t++)
            used |= node_of[t] == node;
        nodes_used += used;
    }
    vm_result(pinned_ok && nodes_used == topo.nnodes, "numa-threads-pinned",
              pinned_ok ? "%d threads on %d of %d nodes" : "a thread is not pinned to one CPU (%d threads)",
              nthreads, nodes_used, topo.nnodes);
    for (int t = 1; t < nthreads; t++)
        pthread_create(&th[t], NULL, wave2, (void *)(long)t);
    for (int t = 1; t < nthreads; t++)
        pthread_join(th[t], NULL);
    if (!pinned_ok)
        vm_result(0, "numa-threads-moved", "a second-wave thread could not move to its node");

    for (int ph = 0; ph < NPHASES; ph++)
        for (int k = 0; k < NKINDS; k++) {
            char name[64];
            struct tally *y = &tallies[ph][k];
            snprintf(name, sizeof name, "numa-%s-%s", phase_names[ph], kinds[k].name);
            vm_result(y->pages > 0 && y->wrong == 0, name, y->wrong ? "%ld of %ld pages off their node; first: %s"
                                                                    : "%ld of %ld pages off their node%s",
                      y->wrong, y->pages, y->first);
        }
    return vm_failures ? 1 : 0;
}
