/* tree.h - the places of the plan taken by the threads of a whole process tree.
 *
 * Every process started under the shim (fork, exec, posix_spawn) shares one table: a row per
 * pinned thread, its place and its weight. A new thread takes the place with the least weight
 * over the whole tree, so the processes of a forking server or of `make -j` spread over the
 * CPUs instead of each starting again at the first place. A new process first borrows the
 * place of the thread that started it, when that thread still holds it: a launcher, a shell
 * or a server waits or sleeps while its child works, so the child runs where the parent would
 * have; the place goes back to the parent when the child ends. Rows of processes that died
 * without exiting normally are reaped by the survivors (kill(pid, 0) says ESRCH).
 *
 * The table is a file in /dev/shm named after the process that started the tree (pid and start
 * time), so that exec'd descendants find it through their ancestors, whatever environment
 * they were given; without /dev/shm it is shared memory that only forked children inherit.
 * No malloc. */
#ifndef BOBOX_PIN_TREE_H
#define BOBOX_PIN_TREE_H

#include <sched.h>
#include <sys/types.h>

/* Finds the tree of the nearest ancestor that has one, and the CPU set it plans from; 1 if
 * there is one. */
int pt_discover(cpu_set_t *allowed);
/* The order of the tree pt_discover found, if it was made by the same policy (BOBOX_PIN, ""
 * for the default) from the same set: its length, copied into order; else 0. An exec'd
 * process then need not read the topology again (thousands of /sys files on a large machine). */
int pt_known_order(const char *policy, const cpu_set_t *allowed, short *order);
/* Joins the tree pt_discover found if it plans the same order, else starts one that plans
 * from `allowed` with `policy`. 0: a named tree; 1: shared with forked children only; 2: this
 * process's own. */
int pt_attach(const short *order, int norder, const cpu_set_t *allowed, const char *policy);

/* A new thread of this process: the place of least weight; *row receives its row (-1 when the
 * table is full: the thread is placed but not counted), *others how many other threads of the
 * tree hold that place now (more than the place has CPUs: every place is full). */
int pt_take_thread(int *row, unsigned *others);
/* The thread of `row` ends: its place is free again. */
void pt_release(int row);
/* The main thread of a process new to the tree (after fork in the child, or at start-up):
 * its own row if the process had one before exec; else the place of the parent's thread that
 * started it, when that thread still holds it (`parent_row` after fork, else the parent's row
 * on `inherited_cpu`; -1: unknown); else the place of least weight. */
int pt_take_process(int parent_row, int inherited_cpu, int *row, unsigned *others);
/* 1 the first time any process of the tree asks: the verbose note on oversubscription is
 * written once per tree. */
int pt_first_overflow(void);
/* The process ends normally: every row of it goes, borrowed places go back, and the last
 * process of the tree removes the file. */
void pt_process_exit(void);

#endif
