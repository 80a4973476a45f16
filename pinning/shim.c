/* libbobox-pin.so: preloaded, it pins the main thread and every thread made with pthread_create
 * to the place of the plan with the fewest live threads, counted over the whole process tree
 * (plan.c, tree.c). No malloc anywhere on our side, no stdio: it must work under any malloc,
 * including libbobox.so and mallocs that create threads themselves. */
#define _GNU_SOURCE
#include "plan.h"
#include "topology.h"
#include "tree.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

/* The set a process planned from, passed to its children: "P:list" while our pinning is the
 * only thing that narrowed masks, "F:list" once the program set an affinity itself, "X:" after
 * a bad setting was reported (so children stay quiet about it). */
#define ENV_ALLOWED "BOBOX_PIN_ALLOWED"
#define ENV_OMP_MARK "BOBOX_PIN_OMP_PLACES" /* the OMP_PLACES that bobox-run derived from our plan */

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
typedef int (*sched_set_fn)(pid_t, size_t, const cpu_set_t *);
typedef int (*pthread_set_fn)(pthread_t, size_t, const cpu_set_t *);
static _Atomic(sched_set_fn) real_sched_set;
static _Atomic(pthread_set_fn) real_pthread_set;

static struct bt_topology topo; /* ~90 KB: static, not on a stack, not from malloc */
static struct bp_spec spec;
static struct bp_skip skip;
static short order[BP_MAX_ORDER];
static cpu_set_t unpinned; /* the mask a skipped thread gets: all that the process may use */
static int norder, verbose, dryrun, omp_ours;
static atomic_int active;
static atomic_uint next_thread = 1; /* 0 is the main thread */
static atomic_int bind_failed;
static atomic_int init_state; /* 0 not yet, 1 running, 2 done */
static __thread int in_init __attribute__((tls_model("initial-exec")));
static __thread int my_cpu __attribute__((tls_model("initial-exec"))) = -1;
static __thread int my_slot __attribute__((tls_model("initial-exec"))) = -1;
static __thread int my_row __attribute__((tls_model("initial-exec"))) = -1; /* in the tree's table */
static __thread int my_wide __attribute__((tls_model("initial-exec")));     /* bound wider than its place */
static char env_allowed[sizeof ENV_ALLOWED "=P:" + 8192];
#define FLAG_AT (sizeof ENV_ALLOWED) /* index of P/F/X in env_allowed */

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf - 1, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if (n > (int)sizeof buf - 2) n = (int)sizeof buf - 2;
    buf[n++] = '\n';
    ssize_t w = write(2, buf, (size_t)n); /* one write: lines of threads do not interleave */
    (void)w;
}

static pid_t gettid_(void) { return (pid_t)syscall(SYS_gettid); }

/* The next definition, by version first: an unversioned dlsym can hand back an old
 * compatibility version of pthread_create. */
static void *next_sym(const char *name) {
    static const char *const versions[] = {"GLIBC_2.34",  "GLIBC_2.2.5", "GLIBC_2.17",
                                           "GLIBC_2.3.4", "GLIBC_2.1",   "GLIBC_2.0"};
    for (size_t i = 0; i < sizeof versions / sizeof *versions; i++) {
        void *p = dlvsym(RTLD_NEXT, name, versions[i]);
        if (p) return p;
    }
    return dlsym(RTLD_NEXT, name);
}

/* The default version: dlsym finds it without the failed dlvsym calls of next_sym, each of
 * which mallocs an error message. Before the main thread is pinned that malloc would pick the
 * NUMA node of its heap (a thread's first malloc does) from the CPU it is about to leave. */
static void *next_default(const char *name) { return dlsym(RTLD_NEXT, name); }

static create_fn real_create(void) {
    static _Atomic(create_fn) fn;
    create_fn f = atomic_load_explicit(&fn, memory_order_acquire);
    if (!f) {
        f = (create_fn)next_sym("pthread_create");
        atomic_store_explicit(&fn, f, memory_order_release);
    }
    return f;
}

/* The allocator's own thread (libbobox.so's reclaimer) is not one of the program's: it takes
 * no place in the plan. Looked up once; NULL without libbobox.so. */
static void *allocator_thread(void) {
    static _Atomic(void *) fn;
    static atomic_int looked;
    if (!atomic_load_explicit(&looked, memory_order_acquire)) {
        atomic_store_explicit(&fn, dlsym(RTLD_DEFAULT, "bobox_reclaimer"), memory_order_relaxed);
        atomic_store_explicit(&looked, 1, memory_order_release);
    }
    return atomic_load_explicit(&fn, memory_order_relaxed);
}

static cpu_set_t plan_allowed; /* the set the plan was made from: places are cut from it */

/* 0: the topology is not read (the tree's order was reused), 1: being read, 2: read, 3: unreadable */
static atomic_int topo_state;

/* The topology, read when an overflowing thread first needs its node; 0 if it cannot be read. */
static int need_topology(void) {
    int st = atomic_load_explicit(&topo_state, memory_order_acquire), expect = 0;
    if (st == 0 && atomic_compare_exchange_strong(&topo_state, &expect, 1)) {
        char err[300];
        st = bt_read(&topo, NULL, err, sizeof err) == 0 ? 2 : 3;
        atomic_store_explicit(&topo_state, st, memory_order_release);
    }
    while ((st = atomic_load_explicit(&topo_state, memory_order_acquire)) == 1) sched_yield();
    return st == 2;
}

/* What a thread on `cpu` is bound to: one CPU or its place; wider when its place is full
 * (bp_overflow_cpus). Returns 1 in that case. */
static int bind_set(int cpu, unsigned others, cpu_set_t *set) {
    /* one-CPU places need no topology to count (the tree's order may have spared reading it) */
    int full = spec.unit == BP_UNIT_CPU ? others >= 1 : bp_overflows(&topo, &plan_allowed, spec.unit, cpu, others);
    if (full) {
        if (need_topology()) return bp_overflow_cpus(&topo, &plan_allowed, order, norder, spec.unit, cpu, set);
        *set = plan_allowed; /* no topology: no node to keep to */
        return CPU_COUNT(set) > 1;
    }
    bp_place_cpus(&topo, &plan_allowed, spec.unit, cpu, set); /* one CPU, or its place */
    return 0;
}

static int bind_to(pid_t tid, const cpu_set_t *set) {
    /* the raw call: our own sched_setaffinity wrapper is for the program's calls */
    return syscall(SYS_sched_setaffinity, tid, sizeof *set, set) == 0 ? 0 : errno;
}

/* A pinned thread ends (its start routine returns, pthread_exit, cancellation): its place is free. */
static void release_row(void *row) { pt_release((int)(intptr_t)row); }

/* Binds thread k (tid 0 = the caller) to its place and reports it. slot -1: a skipped thread,
 * which gets the whole allowed set back rather than the one CPU of the pinned thread that
 * created it. others: threads of the tree already on that place. */
static void pin(unsigned k, pid_t tid, int slot, unsigned others) {
    int cpu = slot < 0 ? -1 : order[slot];
    if (cpu < 0) {
        if (!dryrun) syscall(SYS_sched_setaffinity, tid, sizeof unpinned, &unpinned);
        return;
    }
    cpu_set_t set;
    int wide = bind_set(cpu, others, &set);
    if (!dryrun) {
        int e = bind_to(tid, &set);
        if (e) {
            if (atomic_exchange(&bind_failed, 1) == 0)
                say("bobox-pin: cannot bind thread %u to CPU %d: %s; threads that cannot be bound run "
                    "unpinned (reported once)",
                    k, cpu, strerror(e));
            return;
        }
    }
    if (tid == 0 || tid == gettid_()) {
        my_cpu = cpu;
        my_slot = slot;
        my_wide = wide;
    }
    if (verbose || dryrun) {
        const struct bt_core *c = &topo.core[topo.cpu[cpu].core];
        char place[300] = "";
        if (spec.unit != BP_UNIT_CPU || wide) {
            memcpy(place, " cpus=", 7);
            bt_format_cpulist(&set, place + 6, sizeof place - 6);
        }
        if (wide && pt_first_overflow())
            say("bobox-pin: more threads than CPUs in the plan (%d places, each full): thread %u and later extra "
                "threads are bound to the CPUs of their node (or package, or the whole plan) instead of one CPU "
                "each, so that the scheduler can balance them",
                norder, k);
        say("bobox-pin: thread=%u tid=%d cpu=%d core=%d package=%d node=%d%s%s", k, tid ? (int)tid : (int)gettid_(),
            cpu, c->core_id, c->package, c->node, place, wide ? " oversubscribed" : "");
    }
}

/* The environment as the process was given it, read directly: a program may define getenv and
 * putenv itself (bash does, and once its putenv has run, its getenv no longer sees environ). */
static const char *env_get(const char *name) {
    size_t n = strlen(name);
    for (char **e = environ; e && *e; e++)
        if (!strncmp(*e, name, n) && (*e)[n] == '=') return *e + n + 1;
    return NULL;
}

/* 1 or 0 for a boolean setting; -1 for anything else */
static int flag_env(const char *name) {
    const char *v = env_get(name);
    if (!v || !*v || !strcmp(v, "0")) return 0;
    return strcmp(v, "1") == 0 ? 1 : -1;
}

static void set_inherited(char flag, const cpu_set_t *allowed) {
    int n = snprintf(env_allowed, sizeof env_allowed, "%s=%c:", ENV_ALLOWED, flag);
    if (allowed) bt_format_cpulist(allowed, env_allowed + n, sizeof env_allowed - (size_t)n);
    /* libc's putenv, not a program's own (see env_get); static storage: the flag may flip later */
    int (*put)(char *) = (int (*)(char *))next_default("putenv");
    (put ? put : putenv)(env_allowed);
}

static int in_plan(const cpu_set_t *set) {
    for (int i = 0; i < norder; i++)
        if (CPU_ISSET(order[i], set)) return 1;
    return 0;
}

/* The program set an affinity itself: its children keep the mask they inherit. who: 1 the
 * calling thread, 0 another thread, -1 a new thread's attribute. */
static void mark_foreign(int who, size_t size, const cpu_set_t *set) {
    if (!atomic_load(&active) || env_allowed[0] == '\0') return;
    /* the OpenMP runtime applying the places bobox-run derived from our plan (libgomp passes
     * masks of the kernel's size, often smaller than a cpu_set_t) */
    if (omp_ours && set && size <= sizeof(cpu_set_t)) {
        cpu_set_t s;
        CPU_ZERO(&s);
        memcpy(&s, set, size);
        if (spec.unit != BP_UNIT_CPU && CPU_COUNT(&s) > 1) /* a place bobox-run put in OMP_PLACES */
            for (int i = 0; i < norder; i++) {
                cpu_set_t place;
                bp_place_cpus(&topo, &plan_allowed, spec.unit, order[i], &place);
                if (CPU_EQUAL(&place, &s)) return;
            }
        if (CPU_COUNT(&s) == 1 && ((who == 1 && my_cpu >= 0 && CPU_ISSET(my_cpu, &s)) || (who < 0 && in_plan(&s))))
            return;
    }
    __atomic_store_n(&env_allowed[FLAG_AT], 'F', __ATOMIC_RELAXED);
}

static void init(void) {
    char err[600], warn[600];
    const char *inh = env_get(ENV_ALLOWED);
    int inherited = inh && (inh[0] == 'P' || inh[0] == 'F' || inh[0] == 'X') && inh[1] == ':';
    int quiet = inherited && inh[0] == 'X'; /* a parent already complained */
    const char *fsroot = env_get("BOBOX_FSROOT");
    if (fsroot && !*fsroot) fsroot = NULL;

    int v = flag_env("BOBOX_PIN_VERBOSE"), d = flag_env("BOBOX_PIN_DRYRUN");
    const char *policy = env_get("BOBOX_PIN");
    if (!policy) policy = "";
    if (bp_parse_policy(policy, &spec, err, sizeof err) != 0 ||
        bp_parse_skip(env_get("BOBOX_PIN_SKIP"), &skip, err, sizeof err) != 0 ||
        (v < 0 && snprintf(err, sizeof err, "BOBOX_PIN_VERBOSE=%s: expected 0 or 1", env_get("BOBOX_PIN_VERBOSE"))) ||
        (d < 0 && snprintf(err, sizeof err, "BOBOX_PIN_DRYRUN=%s: expected 0 or 1", env_get("BOBOX_PIN_DRYRUN"))))
        goto bad;
    verbose = v;
    dryrun = d;
    if (spec.policy == BP_NONE) return;
    if (bp_parse_cores(env_get("BOBOX_PIN_CORES"), &spec, err, sizeof err) != 0 && !inherited)
        say("bobox-pin: %s; using all", err);
    /* what the tree's stored order is keyed by: the policy and the core kinds it may use */
    char key[300];
    snprintf(key, sizeof key, "%s%s", policy, spec.pcores_only ? "\ncores=p" : "");

    static const char *const omp_vars[] = {"OMP_PROC_BIND", "OMP_PLACES", "GOMP_CPU_AFFINITY", "KMP_AFFINITY"};
    const char *mark = env_get(ENV_OMP_MARK), *places = env_get("OMP_PLACES");
    omp_ours = mark && places && !strcmp(mark, places);
    for (size_t i = 0; i < sizeof omp_vars / sizeof *omp_vars; i++)
        if (env_get(omp_vars[i]) && !(omp_ours && i == 1)) {
            if ((verbose || dryrun) && !inherited)
                say("bobox-pin: %s is set: the OpenMP runtime's placement stands, pinning off", omp_vars[i]);
            return;
        }

    cpu_set_t allowed;
    int inherited_cpu = -1; /* the one CPU of the thread that started this process */
    if (fsroot) {
        if (bt_read(&topo, fsroot, err, sizeof err) != 0) goto bad;
        atomic_store(&topo_state, 2);
        allowed = topo.online; /* a saved tree: its online CPUs stand for the allowed set */
        if (sched_getaffinity(getpid(), sizeof unpinned, &unpinned) != 0) CPU_ZERO(&unpinned);
    } else {
        if (sched_getaffinity(getpid(), sizeof allowed, &allowed) != 0) {
            snprintf(err, sizeof err, "cannot read the allowed CPUs: %s", strerror(errno));
            goto bad;
        }
        /* A one-CPU mask from our pinning of the parent's thread: plan from the parent's set.
         * The environment says so; a program that rebuilt its environment (a shell started
         * under the preload) still has the tree of an ancestor, and the set it plans from. */
        int one = -1;
        for (int c = 0; c < CPU_SETSIZE && CPU_COUNT(&allowed) == 1 && one < 0; c++)
            if (CPU_ISSET(c, &allowed)) one = c;
        cpu_set_t tree_set;
        int in_tree = pt_discover(&tree_set);
        if (inherited) {
            if (bp_inherit_allowed(&allowed, inh)) inherited_cpu = one;
        } else if (in_tree && one >= 0 && CPU_ISSET(one, &tree_set)) {
            allowed = tree_set;
            inherited_cpu = one;
        }
        unpinned = allowed;
        /* The tree's order, when it was planned the same way: no topology to read. Verbose
         * and dry runs read it anyway, to name each CPU's core and node. */
        if (!verbose && !dryrun && spec.unit == BP_UNIT_CPU) /* places need the topology */
            norder = pt_known_order(key, &allowed, order);
        if (!norder) {
            if (bt_read(&topo, NULL, err, sizeof err) != 0) goto bad;
            atomic_store(&topo_state, 2);
        }
    }
    warn[0] = '\0';
    if (!norder) norder = bp_order(&topo, &allowed, &spec, order, BP_MAX_ORDER, warn, sizeof warn);
    if (warn[0] && !inherited) say("bobox-pin: %s", warn);
    if (norder == 0) {
        snprintf(err, sizeof err, "BOBOX_PIN=%s: no allowed CPU to pin to", policy);
        goto bad;
    }
    if ((verbose || dryrun) && !inherited) {
        char al[512], ord[512];
        size_t pos = 0;
        bt_format_cpulist(&allowed, al, sizeof al);
        ord[0] = '\0';
        for (int i = 0; i < norder && pos + 16 < sizeof ord; i++)
            pos += (size_t)snprintf(ord + pos, sizeof ord - pos, "%s%d", i ? "," : "", order[i]);
        if (pos + 16 >= sizeof ord) snprintf(ord + pos, sizeof ord - pos, ",...");
        say("bobox-pin: pid=%d policy=%s allowed=%s order=%s%s%s", (int)getpid(),
            spec.unit != BP_UNIT_CPU ? bp_unit_name(spec.unit) : bp_policy_name(spec.policy), al, ord,
            dryrun ? " dryrun" : "", omp_ours ? " omp-places" : "");
    }
    plan_allowed = allowed;
    pt_attach(order, norder, &allowed, key);
    atomic_store(&active, 1);
    if (!bp_skipped(&skip, 0)) {
        unsigned others;
        int row, s = pt_take_process(-1, inherited_cpu, &row, &others);
        my_row = row;
        pin(0, getpid(), s, others);
    }
    /* After the pin: putenv may malloc, and the main thread's first malloc picks the NUMA node
     * of its heap from the CPU it runs on. */
    set_inherited('P', &allowed);
    return;
bad:
    if (!quiet) say("bobox-pin: %s; pinning off", err);
    set_inherited('X', NULL);
}

/* A new process of the tree: only the forking thread lives on. It takes that thread's place
 * while the parent's thread holds it (a parent that forks usually waits or sleeps), else the
 * place of least weight in the tree. */
static void after_fork_child(void) {
    atomic_store(&next_thread, 1); /* a new process: its threads count from 1 again */
    int reading = 1;               /* a thread of the parent was reading the topology: it is gone */
    atomic_compare_exchange_strong(&topo_state, &reading, 0);
    if (my_slot < 0) return; /* not pinned (skipped, or the program chose its mask): stays as it is */
    unsigned others;
    int row, s = pt_take_process(my_row, my_cpu, &row, &others);
    my_row = row;
    if (s != my_slot || others > 0 || my_wide) pin(0, 0, s, others); /* else the parent's mask is right */
}

/* The process exits normally: its places go back to the tree (others are reaped by the survivors). */
__attribute__((destructor)) static void bobox_pin_dtor(void) {
    if (atomic_load(&active)) pt_process_exit();
}

/* Lazy and thread-safe: a library constructor (libgomp's, say) may create threads before our
 * constructor runs. A call that comes back from inside init (a malloc that starts a thread)
 * goes through unpinned instead of deadlocking. */
static void ensure_init(void) {
    if (atomic_load_explicit(&init_state, memory_order_acquire) == 2 || in_init) return;
    int expect = 0;
    if (atomic_compare_exchange_strong(&init_state, &expect, 1)) {
        in_init = 1;
        /* Looked up once here, not in a thread's first sched_setaffinity: a lookup may malloc,
         * and that thread's first malloc would tie its heap to the node it is leaving. */
        atomic_store(&real_sched_set, (sched_set_fn)next_default("sched_setaffinity"));
        atomic_store(&real_pthread_set, (pthread_set_fn)next_default("pthread_setaffinity_np"));
        init();
        if (atomic_load(&active)) pthread_atfork(NULL, NULL, after_fork_child);
        in_init = 0;
        atomic_store_explicit(&init_state, 2, memory_order_release);
        return;
    }
    while (atomic_load_explicit(&init_state, memory_order_acquire) != 2) sched_yield();
}

__attribute__((constructor)) static void bobox_pin_ctor(void) { ensure_init(); }

struct start {
    void *(*fn)(void *);
    void *arg;
    unsigned k;
    int slot;        /* -1: a skipped thread */
    int row;         /* its row in the tree's table */
    unsigned others; /* threads already on its place */
    sem_t bound;
};

/* The new thread binds itself before anything of the user's runs, so its first malloc already
 * sees its planned CPU (and NUMA node); the creator waits for that, so a pthread_setaffinity_np
 * the program makes after pthread_create returns always comes later and wins. */
static void *trampoline(void *p) {
    struct start *s = p;
    void *(*fn)(void *) = s->fn;
    void *arg = s->arg;
    int slot = s->slot;
    intptr_t row = s->row;
    my_row = s->row;
    pin(s->k, 0, s->slot, s->others);
    sem_post(&s->bound); /* s lives on the creator's stack: not touched after this */
    if (slot < 0) return fn(arg);
    void *ret;
    /* Also run by pthread_exit and cancellation: the place is free again for the next thread. */
    pthread_cleanup_push(release_row, (void *)row);
    ret = fn(arg);
    pthread_cleanup_pop(1);
    return ret;
}

static int attr_has_affinity(const pthread_attr_t *attr, cpu_set_t *set) {
    if (pthread_attr_getaffinity_np(attr, sizeof *set, set) != 0) {
        CPU_ZERO(set);
        return 1; /* a mask larger than ours: certainly set */
    }
    return CPU_COUNT(set) != CPU_SETSIZE; /* glibc reports all ones when none is set */
}

EXPORT int pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*fn)(void *), void *arg) {
    create_fn real = real_create();
    if (!real) return EAGAIN;
    ensure_init();
    if (!atomic_load_explicit(&active, memory_order_acquire) || (void *)fn == allocator_thread())
        return real(thread, attr, fn, arg);
    unsigned k = atomic_fetch_add(&next_thread, 1);
    cpu_set_t chosen;
    if (attr && attr_has_affinity(attr, &chosen)) { /* the caller (an OpenMP runtime, say) chose */
        mark_foreign(-1, sizeof chosen, &chosen);
        return real(thread, attr, fn, arg);
    }
    struct start s = {fn, arg, k, -1, -1, 0, {{0}}};
    if (sem_init(&s.bound, 0, 0) != 0) return real(thread, attr, fn, arg);
    if (!bp_skipped(&skip, k)) s.slot = pt_take_thread(&s.row, &s.others);
    if (s.slot >= 0 && s.others > 0) need_topology(); /* here, not on a new thread's small stack */
    int rc = real(thread, attr, trampoline, &s);
    if (rc != 0 && s.slot >= 0) pt_release(s.row);
    if (rc == 0) {
        int old;
        pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old); /* s must outlive the wait */
        while (sem_wait(&s.bound) != 0 && errno == EINTR)
            ;
        pthread_setcancelstate(old, NULL);
    }
    sem_destroy(&s.bound);
    return rc;
}

EXPORT int sched_setaffinity(pid_t pid, size_t size, const cpu_set_t *set) {
    ensure_init();
    mark_foreign(pid == 0 || pid == gettid_(), size, set);
    sched_set_fn f = atomic_load(&real_sched_set);
    if (!f) /* called before our constructor finished */
        f = (sched_set_fn)next_default("sched_setaffinity");
    if (f) return f(pid, size, set);
    return syscall(SYS_sched_setaffinity, pid, size, set) == 0 ? 0 : -1;
}

EXPORT int pthread_setaffinity_np(pthread_t thread, size_t size, const cpu_set_t *set) {
    ensure_init();
    mark_foreign(pthread_equal(thread, pthread_self()), size, set);
    pthread_set_fn f = atomic_load(&real_pthread_set);
    if (!f) f = (pthread_set_fn)next_default("pthread_setaffinity_np");
    return f ? f(thread, size, set) : ENOSYS;
}
