/* Reads the topology from sysfs with open/read only: no stdio, no opendir, no malloc, so it is
 * safe inside a preloaded library whatever malloc is in use. Nothing here trusts a shortcut:
 * cores are sibling sets (core_id repeats across packages), siblings need not be adjacent,
 * hex masks stand in for missing *_list files, and offline CPUs are dropped everywhere. */
#define _GNU_SOURCE
#include "topology.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_NODES 1024

static int read_text(const char *path, char *buf, size_t len) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    size_t got = 0;
    while (got + 1 < len) {
        ssize_t n = read(fd, buf + got, len - 1 - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += (size_t)n;
    }
    close(fd);
    buf[got] = '\0';
    return 0;
}

static int read_int(const char *path, int *v) {
    char buf[64], *end;
    if (read_text(path, buf, sizeof buf) != 0) return -1;
    long x = strtol(buf, &end, 10);
    if (end == buf) return -1;
    *v = (int)x;
    return 0;
}

static const char *skip_space(const char *s) {
    while (*s == ' ' || *s == '\t' || *s == '\n') s++;
    return s;
}

static int parse_num(const char **s, long *v) {
    char *end;
    if (**s < '0' || **s > '9') return -1;
    *v = strtol(*s, &end, 10);
    *s = end;
    return 0;
}

int bt_parse_cpulist(const char *s, cpu_set_t *out) {
    CPU_ZERO(out);
    s = skip_space(s);
    if (*s == '\0') return 0; /* an empty list is a valid empty set (a node without CPUs) */
    for (;;) {
        long a, b, stride = 1;
        if (parse_num(&s, &a) != 0) return -1;
        b = a;
        if (*s == '-') {
            s++;
            if (parse_num(&s, &b) != 0 || b < a) return -1;
            if (*s == ':') {
                s++;
                if (parse_num(&s, &stride) != 0 || stride < 1) return -1;
            }
        }
        if (b >= BT_MAX_CPUS) return -1;
        for (long c = a; c <= b; c += stride) CPU_SET((int)c, out);
        s = skip_space(s);
        if (*s == '\0') return 0;
        if (*s != ',') return -1;
        s++;
    }
}

int bt_parse_cpumask(const char *s, cpu_set_t *out) {
    CPU_ZERO(out);
    s = skip_space(s);
    const char *end = s;
    while (*end && *end != '\n' && *end != ' ') end++;
    if (end == s) return -1;
    int bit = 0;
    for (const char *p = end; p-- > s;) { /* least significant digit last */
        int v;
        if (*p == ',') continue;
        if (*p >= '0' && *p <= '9')
            v = *p - '0';
        else if (*p >= 'a' && *p <= 'f')
            v = *p - 'a' + 10;
        else if (*p >= 'A' && *p <= 'F')
            v = *p - 'A' + 10;
        else
            return -1;
        for (int i = 0; i < 4; i++, bit++)
            if (v & (1 << i)) {
                if (bit >= BT_MAX_CPUS) return -1;
                CPU_SET(bit, out);
            }
    }
    return 0;
}

void bt_format_cpulist(const cpu_set_t *set, char *buf, size_t len) {
    size_t pos = 0;
    if (len == 0) return;
    buf[0] = '\0';
    for (int c = 0; c < BT_MAX_CPUS; c++) {
        if (!CPU_ISSET(c, set)) continue;
        int e = c;
        while (e + 1 < BT_MAX_CPUS && CPU_ISSET(e + 1, set)) e++;
        char item[32];
        int n = e > c ? snprintf(item, sizeof item, "%s%d-%d", pos ? "," : "", c, e)
                      : snprintf(item, sizeof item, "%s%d", pos ? "," : "", c);
        if (pos + (size_t)n + 4 >= len) {
            snprintf(buf + pos, len - pos, "...");
            return;
        }
        memcpy(buf + pos, item, (size_t)n + 1);
        pos += (size_t)n;
        c = e;
    }
}

/* The list file if there is one, else the hex mask (old kernels have only masks). */
static int read_set(const char *dir, const char *list, const char *mask, cpu_set_t *out) {
    char path[1200], buf[8192];
    if (list) {
        snprintf(path, sizeof path, "%s/%s", dir, list);
        if (read_text(path, buf, sizeof buf) == 0 && bt_parse_cpulist(buf, out) == 0) return 0;
    }
    if (mask) {
        snprintf(path, sizeof path, "%s/%s", dir, mask);
        if (read_text(path, buf, sizeof buf) == 0 && bt_parse_cpumask(buf, out) == 0) return 0;
    }
    return -1;
}

static int file_exists(const char *path) { return access(path, F_OK) == 0; }

/* Which CPUs exist and are online: cpu/online, else present/possible, else probing; then each
 * cpuN/online file has the last word (hot-unplugged CPUs show 0 there). */
static void read_online(const char *cpudir, cpu_set_t *online) {
    char path[1200];
    if (read_set(cpudir, "online", NULL, online) != 0 && read_set(cpudir, "present", NULL, online) != 0 &&
        read_set(cpudir, "possible", NULL, online) != 0) {
        CPU_ZERO(online);
        for (int c = 0; c < BT_MAX_CPUS; c++) {
            snprintf(path, sizeof path, "%s/cpu%d", cpudir, c);
            if (file_exists(path)) CPU_SET(c, online);
        }
    }
    for (int c = 0; c < BT_MAX_CPUS; c++) {
        int v;
        if (!CPU_ISSET(c, online)) continue;
        snprintf(path, sizeof path, "%s/cpu%d/online", cpudir, c);
        if (read_int(path, &v) == 0 && v == 0) CPU_CLR(c, online);
    }
}

static int lowest(const cpu_set_t *s) {
    for (int c = 0; c < BT_MAX_CPUS; c++)
        if (CPU_ISSET(c, s)) return c;
    return -1;
}

static void read_caches(struct bt_topology *t, const char *cpudir, int c) {
    char dir[1200], path[1300], buf[64];
    struct bt_cpu *cpu = &t->cpu[c];
    cpu->l1 = cpu->l2 = cpu->l3 = -1;
    for (int i = 0; i < 32; i++) {
        int level;
        cpu_set_t shared;
        snprintf(dir, sizeof dir, "%s/cpu%d/cache/index%d", cpudir, c, i);
        snprintf(path, sizeof path, "%s/level", dir);
        if (read_int(path, &level) != 0) break;
        snprintf(path, sizeof path, "%s/type", dir);
        if (read_text(path, buf, sizeof buf) == 0 && strncmp(buf, "Instruction", 11) == 0) continue;
        if (read_set(dir, "shared_cpu_list", "shared_cpu_map", &shared) != 0) CPU_ZERO(&shared);
        CPU_AND(&shared, &shared, &t->online);
        CPU_SET(c, &shared);
        int leader = lowest(&shared);
        if (level == 1)
            cpu->l1 = leader;
        else if (level == 2)
            cpu->l2 = leader;
        else if (level == 3)
            cpu->l3 = leader;
    }
}

static int count_distinct(const int *v, int n) {
    int d = 0;
    for (int i = 0; i < n; i++) {
        int seen = 0;
        for (int j = 0; j < i && !seen; j++) seen = v[j] == v[i];
        d += !seen;
    }
    return d;
}

/* Speed classes. Intel hybrid parts name their P- and E-cores in /sys/devices/cpu_core and
 * cpu_atom; ARM big.LITTLE gives cpu_capacity. Capacities within 10% of a class's fastest CPU
 * share its class, so small per-core turbo differences do not reorder a uniform machine. */
static void read_classes(struct bt_topology *t, const char *root) {
    char dir[1100];
    cpu_set_t pset, eset;
    snprintf(dir, sizeof dir, "%s/sys/devices", root);
    int have_p = read_set(dir, "cpu_core/cpus", NULL, &pset) == 0;
    int have_e = read_set(dir, "cpu_atom/cpus", NULL, &eset) == 0;
    t->nclasses = 1;
    if (have_p && have_e) {
        t->hybrid = 1;
        t->nclasses = 2;
        for (int i = 0; i < t->ncores; i++) {
            struct bt_core *k = &t->core[i];
            int c = k->sib[0];
            k->kind = CPU_ISSET(c, &eset) ? BT_KIND_E : CPU_ISSET(c, &pset) ? BT_KIND_P : BT_KIND_PLAIN;
            k->cls = k->kind == BT_KIND_E ? 1 : 0;
        }
        return;
    }
    int caps[BT_MAX_CPUS], n = 0;
    for (int i = 0; i < t->ncores; i++) caps[n++] = t->cpu[t->core[i].sib[0]].capacity;
    if (count_distinct(caps, n) < 2) return;
    /* sort descending, then cut into classes */
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && caps[j] > caps[j - 1]; j--) {
            int x = caps[j];
            caps[j] = caps[j - 1];
            caps[j - 1] = x;
        }
    int tops[BT_MAX_CPUS], ntops = 0;
    for (int i = 0; i < n; i++)
        if (ntops == 0 || (long)caps[i] * 10 < (long)tops[ntops - 1] * 9) tops[ntops++] = caps[i];
    if (ntops < 2) return;
    t->hybrid = 2;
    t->nclasses = ntops;
    for (int i = 0; i < t->ncores; i++) {
        int cap = t->cpu[t->core[i].sib[0]].capacity, cls = 0;
        while (cls + 1 < ntops && (long)cap * 10 < (long)tops[cls] * 9) cls++;
        t->core[i].cls = cls;
    }
}

static void read_nodes(struct bt_topology *t, const char *root) {
    char nodedir[1100], dir[1200];
    cpu_set_t ids, cpus;
    int found = 0;
    for (int c = 0; c < BT_MAX_CPUS; c++)
        if (t->cpu[c].online) t->core[t->cpu[c].core].node = -1;
    snprintf(nodedir, sizeof nodedir, "%s/sys/devices/system/node", root);
    if (read_set(nodedir, "online", NULL, &ids) != 0 && read_set(nodedir, "possible", NULL, &ids) != 0) {
        CPU_ZERO(&ids); /* no list of nodes: probe node0..nodeN */
        for (int n = 0; n < MAX_NODES && n < BT_MAX_CPUS; n++) CPU_SET(n, &ids);
    }
    for (int n = 0; n < BT_MAX_CPUS; n++) {
        if (!CPU_ISSET(n, &ids)) continue;
        snprintf(dir, sizeof dir, "%s/node%d", nodedir, n);
        if (read_set(dir, "cpulist", "cpumap", &cpus) != 0) continue;
        found = 1;
        for (int c = 0; c < BT_MAX_CPUS; c++)
            if (CPU_ISSET(c, &cpus) && t->cpu[c].online && t->core[t->cpu[c].core].node < 0)
                t->core[t->cpu[c].core].node = n;
    }
    if (!found) /* a kernel without NUMA: one node */
        for (int i = 0; i < t->ncores; i++) t->core[i].node = 0;
}

int bt_read(struct bt_topology *t, const char *fsroot, char *err, size_t errlen) {
    char cpudir[1100], dir[1200], path[1300];
    const char *root = fsroot ? fsroot : "";
    memset(t, 0, sizeof *t);
    snprintf(cpudir, sizeof cpudir, "%s/sys/devices/system/cpu", root);
    if (!file_exists(cpudir)) {
        snprintf(err, errlen, "no %s", cpudir);
        return -1;
    }
    read_online(cpudir, &t->online);
    for (int c = 0; c < BT_MAX_CPUS; c++) t->cpu[c].core = -1;

    /* A core is the set of CPUs that list each other as thread siblings; its first (lowest)
     * online CPU founds it, and every CPU joins the first core that claims it. */
    for (int c = 0; c < BT_MAX_CPUS; c++) {
        if (!CPU_ISSET(c, &t->online) || t->cpu[c].core >= 0) continue;
        cpu_set_t sib;
        snprintf(dir, sizeof dir, "%s/cpu%d/topology", cpudir, c);
        if (read_set(dir, "core_cpus_list", "core_cpus", &sib) != 0 &&
            read_set(dir, "thread_siblings_list", "thread_siblings", &sib) != 0)
            CPU_ZERO(&sib);
        CPU_AND(&sib, &sib, &t->online);
        CPU_SET(c, &sib);
        struct bt_core *k = &t->core[t->ncores];
        for (int s = c; s < BT_MAX_CPUS; s++)
            if (CPU_ISSET(s, &sib) && t->cpu[s].core < 0 && k->nsib < BT_MAX_SMT) {
                t->cpu[s].core = t->ncores;
                t->cpu[s].online = 1;
                k->sib[k->nsib++] = (short)s;
            }
        snprintf(path, sizeof path, "%s/physical_package_id", dir);
        if (read_int(path, &k->package) != 0) k->package = -1;
        snprintf(path, sizeof path, "%s/core_id", dir);
        if (read_int(path, &k->core_id) != 0) k->core_id = -1;
        t->ncores++;
    }
    if (t->ncores == 0) {
        snprintf(err, errlen, "no online CPUs under %s", cpudir);
        return -1;
    }
    for (int c = 0; c < BT_MAX_CPUS; c++) {
        if (!t->cpu[c].online) continue;
        t->nonline++;
        snprintf(path, sizeof path, "%s/cpu%d/cpu_capacity", cpudir, c);
        if (read_int(path, &t->cpu[c].capacity) != 0) t->cpu[c].capacity = 0;
        read_caches(t, cpudir, c);
    }
    read_nodes(t, root);
    read_classes(t, root);

    int v[BT_MAX_CPUS];
    for (int i = 0; i < t->ncores; i++) v[i] = t->core[i].package;
    t->npackages = count_distinct(v, t->ncores);
    for (int i = 0; i < t->ncores; i++) v[i] = t->core[i].node;
    t->nnodes = count_distinct(v, t->ncores);
    return 0;
}
