/* The machine as /sys describes it: logical CPUs, cores (by sibling set), packages, NUMA nodes,
 * shared caches, hybrid core kinds. Pure: no globals and no malloc, so the preloaded shim can read
 * it under any allocator and the unit tests can point it at fixture trees. */
#ifndef BOBOX_PIN_TOPOLOGY_H
#define BOBOX_PIN_TOPOLOGY_H

#include <sched.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define BT_MAX_CPUS CPU_SETSIZE /* what sched_getaffinity with a cpu_set_t can describe */
#define BT_MAX_SMT 16           /* logical CPUs per core kept together (POWER has 8) */

enum bt_kind { BT_KIND_PLAIN = 0, BT_KIND_P = 1, BT_KIND_E = 2 };

struct bt_cpu {
    int online;     /* online and part of a core */
    int core;       /* index into bt_topology.core */
    int l1, l2, l3; /* lowest online CPU sharing that data cache, -1 if unknown */
    int capacity;   /* cpu_capacity, 0 if absent */
};

struct bt_core {
    int package; /* physical_package_id, -1 if unknown */
    int core_id; /* as the OS reports it; repeats across packages */
    int node;    /* NUMA node, -1 if no node lists it */
    int kind;    /* enum bt_kind */
    int cls;     /* speed class, 0 = fastest (hybrid parts only) */
    int nsib;
    short sib[BT_MAX_SMT]; /* its online CPUs, ascending */
};

struct bt_topology {
    int ncores, npackages, nnodes, nclasses, nonline;
    int hybrid; /* classes came from: 0 nothing, 1 cpu_core/cpu_atom, 2 cpu_capacity */
    cpu_set_t online;
    struct bt_cpu cpu[BT_MAX_CPUS];
    struct bt_core core[BT_MAX_CPUS];
};

/* Reads DIR/sys/devices/system/{cpu,node} (DIR = fsroot, "" or NULL for the real /sys).
 * Returns 0, or -1 with a message in err. */
int bt_read(struct bt_topology *t, const char *fsroot, char *err, size_t errlen);

/* "0-3,8,10-11" (also "a-b:stride") -> set. Returns 0, or -1 if malformed or out of range. */
int bt_parse_cpulist(const char *s, cpu_set_t *out);
/* "00000000,0000000f" (32-bit groups, most significant first) -> set. */
int bt_parse_cpumask(const char *s, cpu_set_t *out);
/* set -> "0-3,8"; always NUL-terminated, truncated with "..." if too long. */
void bt_format_cpulist(const cpu_set_t *set, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
