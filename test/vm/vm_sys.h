/* The guest kernel's topology read straight from /sys, apart from pinning/topology.c so that the
 * VM tests check our reader and planner against the kernel rather than against themselves. And
 * the line format the guest runner counts: "VMTEST PASS|FAIL|SKIP name[: why]". */
#ifndef BOBOX_VM_SYS_H
#define BOBOX_VM_SYS_H
#define _GNU_SOURCE
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VM_MAX_CPUS 256

struct vm_cpu {
    int online, package, node, core; /* core: lowest CPU of its thread_siblings_list */
};

struct vm_topo {
    int ncpus; /* online CPUs, numbered below VM_MAX_CPUS */
    int npackages, nnodes, ncores, max_siblings;
    struct vm_cpu cpu[VM_MAX_CPUS];
};

static inline int vm_read_line(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    int ok = fgets(buf, (int)len, f) != NULL;
    fclose(f);
    buf[strcspn(buf, "\n")] = '\0';
    return ok ? 0 : -1;
}

/* "0-3,8" -> set; -1 if malformed */
static inline int vm_parse_list(const char *s, cpu_set_t *set)
{
    CPU_ZERO(set);
    while (*s) {
        char *end;
        long a = strtol(s, &end, 10), b = a;
        if (end == s)
            return -1;
        if (*end == '-')
            b = strtol(end + 1, &end, 10);
        for (long c = a; c <= b && c < VM_MAX_CPUS; c++)
            CPU_SET((int)c, set);
        s = *end == ',' ? end + 1 : end;
        if (*end && *end != ',')
            return -1;
    }
    return 0;
}

static inline int vm_first(const cpu_set_t *set)
{
    for (int c = 0; c < VM_MAX_CPUS; c++)
        if (CPU_ISSET(c, set))
            return c;
    return -1;
}

static inline int vm_count_distinct(const int *v, int n)
{
    int d = 0;
    for (int i = 0; i < n; i++) {
        int seen = 0;
        for (int j = 0; j < i && !seen; j++)
            seen = v[j] == v[i];
        d += !seen;
    }
    return d;
}

static inline int vm_read_topo(struct vm_topo *t)
{
    char path[256], buf[1024];
    cpu_set_t online, set;
    memset(t, 0, sizeof *t);
    if (vm_read_line("/sys/devices/system/cpu/online", buf, sizeof buf) || vm_parse_list(buf, &online))
        return -1;
    int pk[VM_MAX_CPUS], nd[VM_MAX_CPUS], co[VM_MAX_CPUS], n = 0;
    for (int c = 0; c < VM_MAX_CPUS; c++) {
        struct vm_cpu *k = &t->cpu[c];
        k->node = -1;
        if (!CPU_ISSET(c, &online))
            continue;
        k->online = 1;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/physical_package_id", c);
        if (vm_read_line(path, buf, sizeof buf))
            return -1;
        k->package = atoi(buf);
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/thread_siblings_list", c);
        if (vm_read_line(path, buf, sizeof buf) || vm_parse_list(buf, &set))
            return -1;
        k->core = vm_first(&set);
        if (CPU_COUNT(&set) > t->max_siblings)
            t->max_siblings = CPU_COUNT(&set);
        pk[n] = k->package, co[n] = k->core, n++;
    }
    for (int node = 0; node < 64; node++) {
        snprintf(path, sizeof path, "/sys/devices/system/node/node%d/cpulist", node);
        if (vm_read_line(path, buf, sizeof buf))
            continue;
        if (vm_parse_list(buf, &set))
            return -1;
        for (int c = 0; c < VM_MAX_CPUS; c++)
            if (CPU_ISSET(c, &set))
                t->cpu[c].node = node;
    }
    int m = 0;
    for (int c = 0; c < VM_MAX_CPUS; c++)
        if (t->cpu[c].online)
            nd[m++] = t->cpu[c].node;
    t->ncpus = n;
    t->npackages = vm_count_distinct(pk, n);
    t->nnodes = vm_count_distinct(nd, m);
    t->ncores = vm_count_distinct(co, n);
    return 0;
}

static int vm_failures;

static inline void vm_result(int ok, const char *name, const char *fmt, ...)
{
    char why[2048] = "";
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, sizeof why, fmt, ap);
        va_end(ap);
    }
    printf("VMTEST %s %s%s%s\n", ok ? "PASS" : "FAIL", name, why[0] ? ": " : "", why);
    fflush(stdout);
    vm_failures += !ok;
}

static inline void vm_skip(const char *name, const char *why)
{
    printf("VMTEST SKIP %s: %s\n", name, why);
    fflush(stdout);
}
#endif
