/* bobox-run: runs a program with libbobox.so and libbobox-pin.so preloaded, or prints the plan. */
#define _GNU_SOURCE
#include "os/mempolicy.h"
#include "plan.h"
#include "tools/live.h"
#include "topology.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
    "usage: bobox-run [OPTIONS] -- PROGRAM [ARGS...]\n"
    "       bobox-run [--pin=POLICY|LIST] [--skip=MASK] [--cores=p] --plan N\n"
    "       bobox-run --topology\n"
    "       bobox-run --stat PID | --watch PID\n"
    "\n"
    "Runs PROGRAM with the Bobox allocator (libbobox.so) and the thread-pinning shim\n"
    "(libbobox-pin.so) preloaded; LD_PRELOAD keeps what it already held. The main thread is\n"
    "thread 0, every thread made with pthread_create (std::thread, OpenMP workers) the next\n"
    "one, and thread k runs on CPU k of the plan, wrapping around when threads outnumber CPUs.\n"
    "The plan takes one logical CPU of every core before any Hyper-Threading sibling, within\n"
    "the CPUs the program may use (taskset, cgroup cpusets). Processes the program starts\n"
    "share the plan: a child first takes the place of the thread that started it, and every\n"
    "new thread of the tree the place with the fewest threads.\n"
    "\n"
    "options:\n"
    "  --pin=POLICY    scatter (default): consecutive threads on different packages,\n"
    "                  then NUMA nodes of a package, then caches, then cores (as\n"
    "                  KMP_AFFINITY=scatter); compact: fill the cores of one node\n"
    "                  before the next; none: pin nothing; or a CPU list used in that\n"
    "                  order, e.g. --pin=2,0,4-7; or likwid-pin domain expressions:\n"
    "                  --pin=S0:0-3@S1:0-3 (N: the machine, S<i>: package i, M<i> or\n"
    "                  N<i>: NUMA node i, C<i>: i-th last-level cache; indices count\n"
    "                  the domain's cores first, then their HT siblings; see\n"
    "                  --topology) (sets BOBOX_PIN)\n"
    "                  OpenMP place names: --pin=cores|ll_caches|numa_domains|sockets\n"
    "                  spreads threads over those places as scatter does, each bound\n"
    "                  to all of its place (threads = scatter)\n"
    "  --cores=p|all   p: no thread on an E-core of a hybrid part (BOBOX_PIN_CORES)\n"
    "  --skip=MASK     hex mask, bit k set = thread k is not pinned and takes no CPU from\n"
    "                  the plan, e.g. 0x2 for a runtime's helper thread (BOBOX_PIN_SKIP)\n"
    "  --no-alloc      preload only the pinning shim, keep the program's malloc\n"
    "  --verbose       one line per pinned thread on stderr (BOBOX_PIN_VERBOSE=1):\n"
    "                  bobox-pin: thread=K tid=T cpu=C core=X package=P node=N\n"
    "  --dry-run       plan and report, bind nothing (BOBOX_PIN_DRYRUN=1)\n"
    "  --stats         allocator statistics at exit (BOBOX_STATS=1)\n"
    "  --mem=POLICY    NUMA policy of large objects (above about 510 KB), as numactl sets\n"
    "                  one for a whole process; small and medium objects stay on their\n"
    "                  thread's node (BOBOX_MEM). interleave[:NODES]: page by page over\n"
    "                  NODES, by default every node the process may use; bind[:NODES]:\n"
    "                  only NODES, by default the allocating thread's node, no spill-over;\n"
    "                  preferred[:NODE]: NODE first, by default the thread's node. NODES\n"
    "                  as numactl writes them: 0,2-3 or all\n"
    "  --profile=PREFIX  sampling heap profiler on (BOBOX_PROF=PREFIX): at exit the live\n"
    "                  heap goes to PREFIX.PID.heap, read by google-pprof --text\n"
    "  --stats-live    keep the allocator's statistics in a file while PROGRAM runs\n"
    "                  (BOBOX_STATS_LIVE=1), for --stat and --watch\n"
    "  --stat PID      print the live statistics of process PID (run with --stats-live or\n"
    "                  BOBOX_STATS_LIVE=1): in use, mapped, resident, per size range and\n"
    "                  NUMA node, remote frees, heaps; removes files of processes gone\n"
    "  --watch PID     the same every second, until the process ends\n"
    "  --plan N        print the plan for N threads as a table and run nothing\n"
    "  --topology      print the machine as the shim sees it (packages, nodes, caches,\n"
    "                  cores, siblings, core kinds, allowed CPUs, domains) and run nothing\n"
    "  -h, --help      this text\n"
    "\n"
    "environment:\n"
    "  BOBOX_FSROOT=DIR  read the topology from DIR/sys/devices/system/{cpu,node} (a tree\n"
    "                    saved by hwloc-gather-topology works) and plan for its online CPUs\n"
    "  OMP_PLACES        unless OMP_PROC_BIND, OMP_PLACES, GOMP_CPU_AFFINITY or KMP_AFFINITY\n"
    "                    is already set, bobox-run sets OMP_PLACES to the plan's CPUs in order,\n"
    "                    so OpenMP places its threads as the shim would; if one is set, the\n"
    "                    shim leaves the process to the OpenMP runtime. Not when OMP_NUM_THREADS\n"
    "                    asks for more threads than the plan has CPUs: OpenMP would stack them\n"
    "\n"
    "More threads than CPUs: once every place of the plan holds as many threads as it\n"
    "has CPUs, each further thread is bound to the plan's CPUs of its NUMA node (else its\n"
    "package, else all of them) instead of one CPU; --verbose and --plan show it.\n"
    "\n"
    "The libraries are looked up next to bobox-run, then in ../lib relative to it.\n"
    "Exit status: that of PROGRAM; 2 for a bad option; 127 if PROGRAM or a library is missing.\n";

static int die_usage(const char *msg, const char *arg) {
    fprintf(stderr, "bobox-run: %s%s\nTry 'bobox-run --help'.\n", msg, arg ? arg : "");
    return 2;
}

/* Finds NAME next to this executable, or in ../lib relative to it. */
static int find_lib(const char *name, char *out, size_t len) {
    char exe[PATH_MAX - 64]; /* room for the library name within PATH_MAX */
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return -1;
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash) return -1;
    *slash = '\0';
    snprintf(out, len, "%s/%s", exe, name);
    if (access(out, R_OK) == 0) return 0;
    snprintf(out, len, "%s/../lib/%s", exe, name);
    if (access(out, R_OK) == 0) {
        char real[PATH_MAX];
        if (realpath(out, real)) snprintf(out, len, "%s", real);
        return 0;
    }
    return -1;
}

static int load(struct bt_topology *t, cpu_set_t *allowed) {
    char err[600];
    const char *fsroot = getenv("BOBOX_FSROOT");
    if (fsroot && !*fsroot) fsroot = NULL;
    if (bt_read(t, fsroot, err, sizeof err) != 0) {
        fprintf(stderr, "bobox-run: cannot read the topology: %s\n", err);
        return -1;
    }
    if (fsroot)
        *allowed = t->online;
    else if (sched_getaffinity(0, sizeof *allowed, allowed) != 0) {
        fprintf(stderr, "bobox-run: cannot read the allowed CPUs: %s\n", strerror(errno));
        return -1;
    } else {
        bp_inherit_allowed(allowed, getenv("BOBOX_PIN_ALLOWED")); /* started by a pinned thread */
    }
    return 0;
}

static const char *kind_name(const struct bt_topology *t, const struct bt_core *k, char *buf, size_t len) {
    if (t->hybrid == 1) return k->kind == BT_KIND_P ? "P" : k->kind == BT_KIND_E ? "E" : "-";
    if (t->hybrid == 2) {
        snprintf(buf, len, "c%d", k->cls);
        return buf;
    }
    return "-";
}

static int print_plan(long nthreads, const struct bp_spec *spec, const struct bp_skip *skip) {
    static struct bt_topology t;
    static short order[BP_MAX_ORDER];
    cpu_set_t allowed;
    char warn[600], list[512];
    if (load(&t, &allowed) != 0) return 1;
    int n = bp_order(&t, &allowed, spec, order, BP_MAX_ORDER, warn, sizeof warn);
    if (warn[0]) fprintf(stderr, "bobox-run: %s\n", warn);
    cpu_set_t usable;
    CPU_AND(&usable, &allowed, &t.online);
    bt_format_cpulist(&usable, list, sizeof list);
    /* the last column: what each thread is bound to, when that is not always its one CPU */
    int over = 0;
    for (long k = 0; k < nthreads && !over && n > 0; k++) {
        int cpu = bp_thread_cpu(order, n, skip, (unsigned)k);
        over = cpu >= 0 && bp_overflows(&t, &usable, spec->unit, cpu, bp_thread_round(n, skip, (unsigned)k));
    }
    int wide = over || spec->unit != BP_UNIT_CPU;
    printf("plan for %ld threads, policy %s: %d CPUs allowed (%s) of %d online, %d cores, %d packages, "
           "%d NUMA nodes%s%s\n",
           nthreads, spec->unit != BP_UNIT_CPU ? bp_unit_name(spec->unit) : bp_policy_name(spec->policy),
           CPU_COUNT(&usable), list, t.nonline, t.ncores, t.npackages, t.nnodes,
           t.hybrid == 1   ? ", hybrid (P then E cores, then P siblings)"
           : t.hybrid == 2 ? ", hybrid by cpu_capacity"
                           : "",
           over ? "; oversubscribed: threads beyond the places' CPUs are bound to their node (or package, or "
                  "the whole plan)"
                : "");
    if (n == 0) {
        printf("no thread is pinned\n");
        return spec->policy == BP_NONE ? 0 : 1;
    }
    printf("%6s %5s %7s %7s %5s %7s %4s %4s %4s%s\n", "thread", "cpu", "core_id", "package", "node", "sibling", "L2",
           "L3", "kind", wide ? " bound to" : "");
    for (long k = 0; k < nthreads; k++) {
        int cpu = bp_thread_cpu(order, n, skip, (unsigned)k);
        if (cpu < 0) {
            printf("%6ld %5s\n", k, "skip");
            continue;
        }
        const struct bt_cpu *c = &t.cpu[cpu];
        const struct bt_core *core = &t.core[c->core];
        int rank = 0;
        for (int s = 0; s < core->nsib && core->sib[s] != cpu; s++) rank += CPU_ISSET(core->sib[s], &usable) ? 1 : 0;
        char kb[16];
        char place[512] = "";
        if (wide) {
            cpu_set_t set;
            if (bp_overflows(&t, &usable, spec->unit, cpu, bp_thread_round(n, skip, (unsigned)k)))
                bp_overflow_cpus(&t, &usable, order, n, spec->unit, cpu, &set);
            else
                bp_place_cpus(&t, &usable, spec->unit, cpu, &set);
            place[0] = ' ';
            bt_format_cpulist(&set, place + 1, sizeof place - 1);
        }
        printf("%6ld %5d %7d %7d %5d %7d %4d %4d %4s%s\n", k, cpu, core->core_id, core->package, core->node, rank,
               c->l2, c->l3, kind_name(&t, core, kb, sizeof kb), place);
    }
    return 0;
}

/* The machine as a tree (package > node > L3 > core) and the likwid-pin domains with their
 * CPUs in index order, so that a domain expression can be read off. */
static int print_topology(void) {
    static struct bt_topology t;
    static short dom[BT_MAX_CPUS];
    cpu_set_t allowed, usable;
    char list[1024], kb[16];
    if (load(&t, &allowed) != 0) return 1;
    CPU_AND(&usable, &allowed, &t.online);
    bt_format_cpulist(&t.online, list, sizeof list);
    printf("%d CPUs online (%s), %d cores, %d packages, %d NUMA nodes%s\n", t.nonline, list, t.ncores, t.npackages,
           t.nnodes,
           t.hybrid == 1   ? ", hybrid (P and E cores)"
           : t.hybrid == 2 ? ", hybrid by cpu_capacity"
                           : "");
    bt_format_cpulist(&usable, list, sizeof list);
    printf("allowed: %s\n", list);
    /* a core is listed under the first (package, node, L3) it is seen with, in CPU order */
    int done[BT_MAX_CPUS] = {0};
    for (int c = 0; c < BT_MAX_CPUS; c++) {
        if (!t.cpu[c].online || done[t.cpu[c].core]) continue;
        const struct bt_core *k0 = &t.core[t.cpu[c].core];
        int pkg = k0->package, node = k0->node, l3 = t.cpu[c].l3;
        printf("package %d, node %d, L3 of CPU %d:\n", pkg, node, l3);
        for (int d = c; d < BT_MAX_CPUS; d++) {
            if (!t.cpu[d].online || done[t.cpu[d].core]) continue;
            const struct bt_core *k = &t.core[t.cpu[d].core];
            if (k->package != pkg || k->node != node || t.cpu[d].l3 != l3) continue;
            done[t.cpu[d].core] = 1;
            printf("  core %4d  CPUs", k->core_id);
            for (int s = 0; s < k->nsib; s++)
                printf(" %d%s", k->sib[s], CPU_ISSET(k->sib[s], &usable) ? "" : "(not allowed)");
            printf("  L2 of CPU %d  kind %s\n", t.cpu[k->sib[0]].l2, kind_name(&t, k, kb, sizeof kb));
        }
    }
    printf("domains (index order for --pin=DOMAIN:INDICES):\n");
    char name[16];
    for (int kind = 0; kind < 4; kind++)
        for (int id = kind == 0 ? -1 : 0; id < BT_MAX_CPUS; id++) {
            int len = id < 0 ? snprintf(name, sizeof name, "N") : snprintf(name, sizeof name, "%c%d", "NSMC"[kind], id);
            int n = bp_domain_cpus(&t, name, (size_t)len, dom, BT_MAX_CPUS);
            if (n <= 0) {
                if (kind == 0 || kind == 3 || id > 4096) break; /* N has one domain; C<i> are numbered without gaps */
                continue;                                       /* package and node ids may have gaps */
            }
            printf("  %-5s", name);
            for (int i = 0; i < n; i++) printf(" %d", dom[i]);
            printf("\n");
            if (kind == 0) break;
        }
    return 0;
}

/* OMP_PLACES="{a},{b},..." in plan order, so that OpenMP binds its team as we would. */
static void set_omp_places(const struct bp_spec *spec) {
    static const char *const vars[] = {"OMP_PROC_BIND", "OMP_PLACES", "GOMP_CPU_AFFINITY", "KMP_AFFINITY"};
    static struct bt_topology t;
    static short order[BP_MAX_ORDER];
    static char places[BP_MAX_ORDER * 8];
    char warn[600];
    cpu_set_t allowed;
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++)
        if (getenv(vars[i])) return; /* the user's OpenMP settings stand */
    if (spec->policy == BP_NONE || (getenv("BOBOX_FSROOT") && *getenv("BOBOX_FSROOT")) || load(&t, &allowed) != 0)
        return;
    int n = bp_order(&t, &allowed, spec, order, BP_MAX_ORDER, warn, sizeof warn);
    /* A team larger than the places' CPUs: OpenMP would stack its threads on one-CPU places; the
     * shim binds the extra ones wider (docs/pinning-oversubscription.md). */
    const char *team = getenv("OMP_NUM_THREADS");
    if (team && n > 0) {
        long want = strtol(team, NULL, 10), cpus = 0;
        for (int i = 0; i < n; i++) {
            cpu_set_t set;
            bp_place_cpus(&t, &allowed, spec->unit, order[i], &set);
            cpus += CPU_COUNT(&set);
        }
        if (want > cpus) return;
    }
    size_t pos = 0;
    for (int i = 0; i < n && pos + 16 < sizeof places; i++) {
        cpu_set_t set;
        char list[512];
        bp_place_cpus(&t, &allowed, spec->unit, order[i], &set); /* one CPU, or its place */
        bt_format_cpulist(&set, list, sizeof list);
        pos += (size_t)snprintf(places + pos, sizeof places - pos, "%s{%s}", i ? "," : "", list);
    }
    if (pos >= sizeof places) return; /* too many places to write: the shim alone binds the threads */
    if (n > 0) {
        setenv("OMP_PLACES", places, 1);
        setenv("BOBOX_PIN_OMP_PLACES", places, 1);
    }
}

/* LD_PRELOAD = our libraries, then what was there (without repeating ours). */
static int set_preload(int with_alloc) {
    char pin[PATH_MAX], alloc[PATH_MAX] = "";
    if (find_lib("libbobox-pin.so", pin, sizeof pin) != 0) {
        fprintf(stderr, "bobox-run: libbobox-pin.so is neither next to bobox-run nor in ../lib\n");
        return -1;
    }
    if (with_alloc && find_lib("libbobox.so", alloc, sizeof alloc) != 0) {
        fprintf(stderr, "bobox-run: libbobox.so is neither next to bobox-run nor in ../lib "
                        "(--no-alloc runs without it)\n");
        return -1;
    }
    const char *old = getenv("LD_PRELOAD");
    size_t len = strlen(pin) + strlen(alloc) + (old ? strlen(old) : 0) + 4;
    char *v = malloc(len), *rest = strdup(old ? old : "");
    if (!v || !rest) return -1;
    snprintf(v, len, "%s%s%s", with_alloc ? alloc : "", with_alloc ? ":" : "", pin);
    for (char *save = NULL, *tok = strtok_r(rest, ": ", &save); tok; tok = strtok_r(NULL, ": ", &save))
        if (strcmp(tok, pin) != 0 && !(with_alloc && strcmp(tok, alloc) == 0)) {
            strcat(v, ":");
            strcat(v, tok);
        }
    setenv("LD_PRELOAD", v, 1);
    free(v);
    free(rest);
    return 0;
}


/* ---- the live statistics (allocator/tools/live.h) -------------------------------------- */

/* Where a process of this user may have put its file, in the allocator's order (a process
 * started from a session has XDG_RUNTIME_DIR, which is /run/user/UID). */
static int live_dirs(const char **dirs, char *run_user, size_t len) {
    int n = 0;
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    if (xdg && xdg[0] == '/') dirs[n++] = xdg;
    snprintf(run_user, len, "/run/user/%u", (unsigned)getuid());
    dirs[n++] = run_user;
    dirs[n++] = "/dev/shm";
    dirs[n++] = "/tmp";
    return n;
}

/* The start time of process pid (/proc/PID/stat's 22nd field); 0 if it cannot be read. */
static unsigned long long proc_start(long pid) {
    char p[64], stat[1024];
    snprintf(p, sizeof p, "/proc/%ld/stat", pid);
    FILE *f = fopen(p, "r");
    if (!f) return 0;
    size_t n = fread(stat, 1, sizeof stat - 1, f);
    fclose(f);
    stat[n] = 0;
    char *c = strrchr(stat, ')');
    if (!c) return 0;
    for (int field = 2; *c && field < 22; c++)
        if (*c == ' ') field++;
    return strtoull(c, NULL, 10);
}

static int process_gone(long pid) { return kill((pid_t)pid, 0) != 0 && errno == ESRCH; }

/* Removes this user's files of processes that are gone (killed before they could). */
static void sweep_stale(void) {
    const char *dirs[4];
    char run_user[64];
    int n = live_dirs(dirs, run_user, sizeof run_user);
    for (int d = 0; d < n; d++) {
        DIR *dir = opendir(dirs[d]);
        if (!dir) continue;
        struct dirent *e;
        while ((e = readdir(dir))) {
            long pid;
            char tail[16];
            if (sscanf(e->d_name, "bobox-%ld.%15s", &pid, tail) != 2 || strcmp(tail, "stats") || pid <= 0) continue;
            struct stat st;
            if (fstatat(dirfd(dir), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
                st.st_uid != getuid())
                continue;
            if (process_gone(pid)) unlinkat(dirfd(dir), e->d_name, 0);
        }
        closedir(dir);
    }
}

/* Reads one consistent copy of pid's file into out; 0, or 1 with a message (none, stale,
 * unreadable). *age_ms: how old the figures are. */
static int read_live(long pid, char *out, size_t outlen, double *age_ms) {
    const char *dirs[4];
    char run_user[64], path[4200];
    int n = live_dirs(dirs, run_user, sizeof run_user), fd = -1;
    for (int d = 0; d < n && fd < 0; d++) {
        snprintf(path, sizeof path, "%s/bobox-%ld.stats", dirs[d], pid);
        fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    }
    if (fd < 0) {
        fprintf(stderr, "bobox-run: no live statistics of process %ld%s\n", pid,
                process_gone(pid) ? ": there is no such process"
                                  : " (run it with bobox-run --stats-live or BOBOX_STATS_LIVE=1)");
        return 1;
    }
    static char buf[BX_LIVE_FILE_BYTES + 1];
    unsigned long long seq = 1, seq2 = 0, ms = 0, start = 0;
    int file_pid = 0;
    for (int tries = 0; tries < 1000 && (seq & 1 || seq != seq2); tries++) {
        ssize_t got = pread(fd, buf, BX_LIVE_FILE_BYTES, 0);
        if (got <= 0 || sscanf(buf, "bobox-live 1 seq %llu ms %llu pid %d start %llu", &seq, &ms, &file_pid,
                               &start) != 4) {
            close(fd);
            fprintf(stderr, "bobox-run: %s is not a bobox statistics file\n", path);
            return 1;
        }
        buf[got] = 0;
        char head[128];
        ssize_t h = pread(fd, head, sizeof head - 1, 0);
        head[h > 0 ? h : 0] = 0;
        if (sscanf(head, "bobox-live 1 seq %llu", &seq2) != 1) seq2 = seq + 1;
        if (seq & 1 || seq != seq2) usleep(1000);
    }
    close(fd);
    if (file_pid != pid || process_gone(pid) || (proc_start(pid) && proc_start(pid) != start)) {
        unlink(path);
        fprintf(stderr, "bobox-run: process %ld is gone; removed its stale statistics file %s\n", pid, path);
        return 1;
    }
    if (seq & 1 || seq != seq2) {
        fprintf(stderr, "bobox-run: %s keeps changing; try again\n", path);
        return 1;
    }
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    *age_ms = (double)now.tv_sec * 1e3 + (double)now.tv_nsec / 1e6 - (double)ms;
    const char *body = strchr(buf, '\n');
    snprintf(out, outlen, "%s", body ? body + 1 : "");
    return 0;
}

static int print_live(long pid, int watch) {
    static char text[BX_LIVE_FILE_BYTES + 1];
    for (int round = 0;; round++) {
        double age;
        int failed = read_live(pid, text, sizeof text, &age);
        if (!round) sweep_stale(); /* the others, once pid's own file has had its say */
        if (failed) return round ? 0 : 1;
        printf("%sbobox: process %ld, statistics of %.1f s ago\n%s", round ? "\n" : "", pid, age / 1e3, text);
        fflush(stdout);
        if (!watch) return 0;
        sleep(1);
    }
}

int main(int argc, char **argv) {
    const char *pin = NULL, *skipmask = NULL, *cores = NULL, *mem = NULL, *profile = NULL;
    int no_alloc = 0, verbose = 0, dryrun = 0, stats = 0, live = 0, topology = 0, i;
    long plan = -1;
    char err[600];

    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--")) {
            i++;
            break;
        }
        if (a[0] != '-') break;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(usage, stdout);
            return 0;
        } else if (!strncmp(a, "--pin=", 6)) {
            pin = a + 6;
        } else if (!strcmp(a, "--pin") && i + 1 < argc) {
            pin = argv[++i];
        } else if (!strncmp(a, "--skip=", 7)) {
            skipmask = a + 7;
        } else if (!strcmp(a, "--skip") && i + 1 < argc) {
            skipmask = argv[++i];
        } else if (!strncmp(a, "--cores=", 8)) {
            cores = a + 8;
        } else if (!strncmp(a, "--mem=", 6)) {
            mem = a + 6;
            if (!*mem)
                return die_usage("--mem wants a policy: interleave[:NODES], bind[:NODES], preferred[:NODE]", NULL);
        } else if (!strncmp(a, "--profile=", 10)) {
            profile = a + 10;
            if (!*profile) return die_usage("--profile wants a path prefix, e.g. --profile=/tmp/prof", NULL);
        } else if (!strcmp(a, "--stat") || !strcmp(a, "--watch")) {
            if (i + 1 >= argc) return die_usage(a, " wants a process ID");
            char *end;
            long pid = strtol(argv[i + 1], &end, 10);
            if (end == argv[i + 1] || *end || pid <= 0 || pid > 4194304)
                return die_usage("--stat and --watch want a process ID, not ", argv[i + 1]);
            return print_live(pid, !strcmp(a, "--watch"));
        } else if (!strcmp(a, "--stats-live")) {
            live = 1;
        } else if (!strcmp(a, "--topology")) {
            topology = 1;
        } else if (!strcmp(a, "--no-alloc")) {
            no_alloc = 1;
        } else if (!strcmp(a, "--verbose")) {
            verbose = 1;
        } else if (!strcmp(a, "--dry-run")) {
            dryrun = 1;
        } else if (!strcmp(a, "--stats")) {
            stats = 1;
        } else if (!strncmp(a, "--plan", 6) && (a[6] == '=' || (a[6] == '\0' && i + 1 < argc))) {
            const char *s = a[6] == '=' ? a + 7 : argv[++i];
            char *end;
            plan = strtol(s, &end, 10);
            if (end == s || *end || plan < 1 || plan > 1000000)
                return die_usage("--plan wants a thread count, not ", s);
        } else {
            return die_usage("unknown option ", a);
        }
    }

    static struct bp_spec spec;
    static struct bp_skip skip;
    const char *pin_value = pin ? pin : getenv("BOBOX_PIN");
    const char *skip_value = skipmask ? skipmask : getenv("BOBOX_PIN_SKIP");
    const char *cores_value = cores ? cores : getenv("BOBOX_PIN_CORES");
    if (topology) return print_topology();
    if (bp_parse_policy(pin_value, &spec, err, sizeof err) != 0 ||
        bp_parse_skip(skip_value, &skip, err, sizeof err) != 0 ||
        bp_parse_cores(cores_value, &spec, err, sizeof err) != 0)
        return die_usage(err, NULL);
    if (plan > 0) return print_plan(plan, &spec, &skip);
    if (i >= argc) return die_usage("no program to run", NULL);
    if (mem) {
        bx_mempolicy_t policy;
        unsigned long nodes[BX_MEM_LONGS];
        if (bx_mempolicy_parse(mem, bx_mempolicy_allowed(nodes) ? nodes : NULL, &policy, err, sizeof err) != 0)
            return die_usage("--mem=", err + strlen("BOBOX_MEM="));
        if (no_alloc)
            return die_usage("--mem sets the allocator's policy: it needs the allocator, not --no-alloc", NULL);
        setenv("BOBOX_MEM", mem, 1);
    }
    if (profile) {
        if (no_alloc) return die_usage("--profile needs the allocator, not --no-alloc", NULL);
        setenv("BOBOX_PROF", profile, 1);
    }

    if (pin) setenv("BOBOX_PIN", pin, 1);
    if (skipmask) setenv("BOBOX_PIN_SKIP", skipmask, 1);
    if (cores) setenv("BOBOX_PIN_CORES", cores, 1);
    if (verbose) setenv("BOBOX_PIN_VERBOSE", "1", 1);
    if (dryrun) setenv("BOBOX_PIN_DRYRUN", "1", 1);
    if (stats) setenv("BOBOX_STATS", "1", 1);
    if (live) {
        if (no_alloc) return die_usage("--stats-live needs the allocator, not --no-alloc", NULL);
        setenv("BOBOX_STATS_LIVE", "1", 1);
    }
    if (!dryrun) set_omp_places(&spec);
    if (set_preload(!no_alloc) != 0) return 127;
    execvp(argv[i], argv + i);
    fprintf(stderr, "bobox-run: cannot run %s: %s\n", argv[i], strerror(errno));
    return errno == ENOENT ? 127 : 126;
}
