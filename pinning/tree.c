/* tree.c - the process tree's table of places (tree.h). */
#define _GNU_SOURCE
#include "tree.h"
#include "plan.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define PT_MAGIC 0x3274702d786f626fULL /* "obox-pt2" */
#define PT_ROWS 4096
#define PT_REAP_NS 20000000ULL /* survivors look for dead processes at most this often */

struct pt_row {
    int32_t pid; /* 0: a free row */
    int32_t tid;
    uint64_t start; /* the process's start time: after exec, the same process finds its row */
    uint32_t gen;   /* bumped when the row is freed: a borrower's link names one use of it */
    int16_t slot;
    uint8_t weight;  /* 1, or 0 while a child process borrows the place */
    uint8_t main;    /* a process's main thread */
    uint16_t others; /* threads that held the place when this one took it: > 0 is oversubscribed */
    int32_t lender;  /* the row whose place this one borrowed, -1 */
    uint32_t lender_gen;
};

struct pt_table {
    _Atomic uint64_t magic; /* stored last, with release */
    int32_t norder;
    uint32_t rows_used;
    uint32_t rows_end; /* rows at and after this index were never used: scans stop here */
    uint64_t last_reap_ns;
    cpu_set_t allowed;         /* the set the tree plans from */
    char policy[256];          /* BOBOX_PIN that made the order ("" for the default) */
    _Atomic int told_overflow; /* the verbose note on oversubscription was written */
    short order[BP_MAX_ORDER]; /* exec'd processes with the same policy and set reuse it */
    pthread_mutex_t lock;      /* process-shared and robust: a process may die holding it */
    unsigned weight[BP_MAX_ORDER];
    struct pt_row row[PT_ROWS];
};

static struct pt_table *tab;
static struct pt_table own_table; /* no shared memory at all: this process alone */
static struct pt_table *found;    /* the nearest ancestor's table (pt_discover) */
static char found_path[96];
static const short *ord;
static int named; /* tab is the file at path */
static char path[96];

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Fields 4 (parent) and 22 (start time) of /proc/PID/stat, after the command name, which may
 * hold spaces and parens. pid 0: this process. 0 on success. */
static int read_stat(pid_t pid, pid_t *ppid, uint64_t *start) {
    char buf[1024], name[48];
    if (pid)
        snprintf(name, sizeof name, "/proc/%d/stat", (int)pid);
    else
        snprintf(name, sizeof name, "/proc/self/stat");
    int fd = open(name, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return -1;
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    for (int field = 2; field < 22 && p; field++) {
        p = strchr(p + 1, ' ');
        if (p && field == 3) *ppid = (pid_t)strtol(p + 1, NULL, 10);
    }
    if (!p) return -1;
    *start = strtoull(p + 1, NULL, 10);
    return 0;
}

/* This process's start time, read once per process (pt_discover reads it first). */
static pid_t start_pid;
static uint64_t start_val;
static uint64_t start_time(void) {
    pid_t pp;
    if (start_pid != getpid()) {
        start_val = 0;
        read_stat(0, &pp, &start_val);
        start_pid = getpid();
    }
    return start_val;
}

/* A tree's file is named after the process that started it: its pid and start time. */
static void tree_path(char *buf, size_t len, pid_t pid, uint64_t start) {
    snprintf(buf, len, "/dev/shm/bobox-pin.%d.%llu", (int)pid, (unsigned long long)start);
}

static void init_table(struct pt_table *t, const short *order, int n, const cpu_set_t *allowed, const char *policy,
                       int shared) {
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    if (shared) {
        pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
        pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
    }
    pthread_mutex_init(&t->lock, &a);
    pthread_mutexattr_destroy(&a);
    t->norder = n;
    t->allowed = *allowed;
    /* a policy too long to keep is never matched: its children read the topology themselves */
    if (strlen(policy) < sizeof t->policy)
        memcpy(t->policy, policy, strlen(policy) + 1);
    else
        memcpy(t->policy, "\n", 2);
    memcpy(t->order, order, (size_t)n * sizeof *order);
    atomic_store_explicit(&t->magic, PT_MAGIC, memory_order_release);
}

static struct pt_table *map_fd(int fd) {
    void *m = mmap(NULL, sizeof(struct pt_table), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    return m == MAP_FAILED ? NULL : m;
}

/* A table file of this user, mapped, or NULL. */
static struct pt_table *open_table(const char *p) {
    int fd = open(p, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return NULL;
    struct stat st;
    struct pt_table *t = NULL;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
        st.st_size == (off_t)sizeof(struct pt_table))
        t = map_fd(fd);
    close(fd);
    if (t && atomic_load_explicit(&t->magic, memory_order_acquire) != PT_MAGIC) {
        munmap(t, sizeof *t);
        t = NULL;
    }
    return t;
}

int pt_discover(cpu_set_t *allowed) {
    int saved = errno;
    pid_t pid = getpid(), pp = 0;
    uint64_t start;
    /* this process's own tree from before an exec, else the nearest ancestor's; the chain ends
     * at a process that is gone */
    for (int depth = 0; depth < 64 && pid > 1 && !found; depth++, pid = pp) {
        if (read_stat(pid, &pp, &start) != 0) break;
        if (depth == 0) {
            start_pid = pid;
            start_val = start;
        }
        tree_path(found_path, sizeof found_path, pid, start);
        found = open_table(found_path);
    }
    if (found) *allowed = found->allowed;
    errno = saved;
    return found != NULL;
}

static void lock(void);
static void unlock(void);
static void reap(int force);

/* Trees whose processes all died without exiting normally (Ctrl-C, SIGKILL) leave their file
 * behind: the next tree started removes those of this user that hold no live process. */
static void remove_stale(void) {
    char buf[4096], p[sizeof path];
    int dfd = open("/dev/shm", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) return;
    long n;
    while ((n = syscall(SYS_getdents64, dfd, buf, sizeof buf)) > 0) {
        for (long off = 0; off < n;) {
            struct {
                uint64_t ino;
                int64_t off;
                unsigned short reclen;
                unsigned char type;
                char name[];
            } *d = (void *)(buf + off);
            off += d->reclen;
            int pid;
            unsigned long long st;
            if (sscanf(d->name, "bobox-pin.%d.%llu", &pid, &st) != 2) continue;
            if (kill(pid, 0) == 0 || errno != ESRCH) continue; /* the process that started it lives */
            snprintf(p, sizeof p, "/dev/shm/%s", d->name);
            struct pt_table *t = open_table(p);
            if (!t) continue;
            struct pt_table *mine = tab;
            tab = t;
            lock();
            reap(1);
            int empty = t->rows_used == 0;
            unlock();
            tab = mine;
            munmap(t, sizeof *t);
            if (empty) unlink(p);
        }
    }
    close(dfd);
}

static struct pt_table *create_named(const short *order, int n, const cpu_set_t *allowed, const char *policy) {
    remove_stale();
    tree_path(path, sizeof path, getpid(), start_time());
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) return NULL;
    struct pt_table *t = ftruncate(fd, sizeof(struct pt_table)) == 0 ? map_fd(fd) : NULL;
    close(fd);
    if (!t) {
        unlink(path);
        return NULL;
    }
    init_table(t, order, n, allowed, policy, 1);
    return t;
}

int pt_known_order(const char *policy, const cpu_set_t *allowed, short *order) {
    if (!found || strcmp(found->policy, policy) != 0 || !CPU_EQUAL(&found->allowed, allowed) || found->norder <= 0 ||
        found->norder > BP_MAX_ORDER)
        return 0;
    memcpy(order, found->order, (size_t)found->norder * sizeof *order);
    return found->norder;
}

int pt_attach(const short *order, int norder, const cpu_set_t *allowed, const char *policy) {
    int saved = errno;
    ord = order;
    named = 1;
    if (found && found->norder == norder && !memcmp(found->order, order, (size_t)norder * sizeof *order)) {
        tab = found;
        memcpy(path, found_path, sizeof path);
    } else {
        if (found) munmap(found, sizeof *found);
        tab = create_named(order, norder, allowed, policy);
    }
    found = NULL;
    if (!tab) {
        named = 0;
        path[0] = '\0';
        void *m = mmap(NULL, sizeof(struct pt_table), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        tab = m == MAP_FAILED ? &own_table : m;
        init_table(tab, order, norder, allowed, policy, tab != &own_table);
    }
    errno = saved;
    return named ? 0 : tab != &own_table ? 1 : 2;
}

static void recount(void) {
    memset(tab->weight, 0, sizeof tab->weight);
    tab->rows_used = 0;
    for (uint32_t i = 0; i < tab->rows_end; i++) {
        struct pt_row *r = &tab->row[i];
        if (!r->pid) continue;
        tab->rows_used++;
        if (r->weight && r->slot >= 0 && r->slot < tab->norder) tab->weight[r->slot]++;
    }
}

static void lock(void) {
    if (pthread_mutex_lock(&tab->lock) == EOWNERDEAD) {
        /* its owner died mid-update: make the counts agree with the rows again */
        pthread_mutex_consistent(&tab->lock);
        recount();
    }
}

static void unlock(void) { pthread_mutex_unlock(&tab->lock); }

static void drop(int i) {
    struct pt_row *r = &tab->row[i];
    if (r->weight) tab->weight[r->slot]--;
    if (r->lender >= 0) {
        struct pt_row *l = &tab->row[r->lender];
        if (l->pid && l->gen == r->lender_gen && !l->weight) {
            l->weight = 1; /* the place goes back to the thread that lent it */
            tab->weight[l->slot]++;
        }
    }
    r->pid = 0;
    r->gen++;
    tab->rows_used--;
    while (tab->rows_end && !tab->row[tab->rows_end - 1].pid) tab->rows_end--;
}

/* Rows of processes that are gone without exiting through exit() (a signal, _exit). */
static void reap(int force) {
    uint64_t now = now_ns();
    if (!force && now - tab->last_reap_ns < PT_REAP_NS) return;
    tab->last_reap_ns = now;
    pid_t me = getpid(), alive = 0, dead = 0;
    for (uint32_t i = 0; i < tab->rows_end; i++) {
        pid_t p = tab->row[i].pid;
        if (!p || p == me || p == alive) continue;
        if (p != dead) {
            if (kill(p, 0) == 0 || errno != ESRCH) {
                alive = p;
                continue;
            }
            dead = p;
        }
        drop(i);
    }
}

/* The lowest free row: the used ones stay packed at the front, where the scans look. */
static int add_row(int slot, int main, int lender) {
    uint32_t i = 0;
    while (i < tab->rows_end && tab->row[i].pid) i++;
    if (i == tab->rows_end) {
        if (i == PT_ROWS) return -1; /* full: the thread is placed but not counted */
        tab->rows_end++;
    }
    struct pt_row *r = &tab->row[i];
    r->pid = getpid();
    r->tid = (int32_t)syscall(SYS_gettid);
    r->start = 0;
    r->slot = (int16_t)slot;
    r->weight = 1;
    r->main = (uint8_t)main;
    r->others = (uint16_t)(tab->weight[slot] > 65535 ? 65535 : tab->weight[slot]);
    r->lender = lender;
    r->lender_gen = lender >= 0 ? tab->row[lender].gen : 0;
    tab->weight[slot]++;
    tab->rows_used++;
    return (int)i;
}

int pt_take_thread(int *row, unsigned *others) {
    int saved = errno;
    lock();
    reap(0);
    int s = bp_pick_slot(tab->weight, tab->norder);
    *others = tab->weight[s];
    *row = add_row(s, 0, -1);
    unlock();
    errno = saved;
    return s;
}

void pt_release(int row) {
    if (row < 0 || row >= PT_ROWS) return;
    int saved = errno;
    lock();
    if (tab->row[row].pid == getpid()) drop(row);
    unlock();
    errno = saved;
}

/* A row of the parent that holds its place and runs on cpu (-1: any), or -1. */
static int parent_holding(int hint, int cpu) {
    pid_t pp = getppid();
    if (hint >= 0 && hint < PT_ROWS && tab->row[hint].pid == pp && tab->row[hint].weight) return hint;
    if (cpu < 0) return -1;
    for (uint32_t i = 0; i < tab->rows_end; i++) {
        struct pt_row *r = &tab->row[i];
        if (r->pid == pp && r->weight && ord[r->slot] == cpu) return i;
    }
    return -1;
}

int pt_take_process(int parent_row, int inherited_cpu, int *row, unsigned *others) {
    int saved = errno;
    uint64_t start = start_time();
    pid_t me = getpid();
    int s = -1;
    lock();
    /* After exec: this process's main row stays; rows of its other threads went with the old
     * image (and a row of an earlier process with the same pid is stale). */
    for (uint32_t i = 0; i < tab->rows_end; i++) {
        struct pt_row *r = &tab->row[i];
        if (r->pid != me) continue;
        if (r->main && r->start == start && s < 0) {
            s = r->slot;
            *row = (int)i;
        } else {
            drop(i);
        }
    }
    if (s < 0) {
        reap(0);
        int lender = parent_holding(parent_row, inherited_cpu);
        if (lender >= 0) {
            s = tab->row[lender].slot;
            tab->row[lender].weight = 0;
            tab->weight[s]--;
        } else {
            s = bp_pick_slot(tab->weight, tab->norder);
        }
        *row = add_row(s, 1, lender);
        if (*row >= 0) {
            tab->row[*row].start = start;
            if (lender >= 0) tab->row[*row].others = tab->row[lender].others;
        } else if (lender >= 0) {
            tab->row[lender].weight = 1; /* not recorded: nothing could give it back */
            tab->weight[s]++;
        }
    }
    /* as when the place was first taken: after exec the process's own row, after a borrow the
     * lender's (a child stands in for its parent), so an exec does not turn the first thread
     * of a place into an extra one because others came later */
    *others = *row >= 0 ? tab->row[*row].others : tab->weight[s];
    unlock();
    errno = saved;
    return s;
}

int pt_first_overflow(void) { return tab && atomic_exchange(&tab->told_overflow, 1) == 0; }

void pt_process_exit(void) {
    if (!tab) return;
    int saved = errno;
    pid_t me = getpid();
    lock();
    for (uint32_t i = 0; i < tab->rows_end; i++)
        if (tab->row[i].pid == me) drop((int)i);
    reap(1);
    int last = tab->rows_used == 0;
    unlock();
    if (last && named) unlink(path); /* a later process of the tree, if any, starts a new one */
    errno = saved;
}
