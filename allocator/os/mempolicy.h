/* mempolicy.h - BOBOX_MEM: the NUMA policy of large objects, as numactl sets one for a whole
 * process (docs/memory-policy.md). Parsed without malloc; bobox-run links the same parser to
 * check --mem= before it starts anything. */
#ifndef BX_MEMPOLICY_H
#define BX_MEMPOLICY_H

#include <stdbool.h>
#include <stddef.h>

#define BX_MEM_MAX_NODES 1024
#define BX_MEM_LONGS (BX_MEM_MAX_NODES / (8 * sizeof(unsigned long)))

enum bx_mem_mode {
    BX_MEM_LOCAL,      /* the default: the allocating thread's node, preferred */
    BX_MEM_INTERLEAVE, /* page by page over the nodes */
    BX_MEM_BIND,       /* only these nodes: a full node fails the fault instead of spilling */
    BX_MEM_PREFERRED,  /* this node first, others when it is full */
};

typedef struct bx_mempolicy_s {
    int mode;   /* enum bx_mem_mode */
    int nnodes; /* 0: the allocating thread's node (bind, preferred without a list) */
    unsigned long mask[BX_MEM_LONGS];
} bx_mempolicy_t;

/* "local", "interleave[:NODES]", "bind[:NODES]", "preferred[:NODE]"; NODES as numactl writes
 * them: 0,2-3 or "all". interleave without a list = every allowed node. `allowed`: the nodes the
 * process may use (NULL: do not check). Returns 0, or -1 with a message in err. */
int bx_mempolicy_parse(const char *s, const unsigned long *allowed, bx_mempolicy_t *out, char *err, size_t errlen);
/* The nodes this process may allocate on (get_mempolicy MPOL_F_MEMS_ALLOWED); false if unknown. */
bool bx_mempolicy_allowed(unsigned long *mask);
/* The kernel's MPOL_* mode for a policy. */
int bx_mempolicy_kernel_mode(int mode);
/* "interleave:0-3" and so on, into buf. */
void bx_mempolicy_format(const bx_mempolicy_t *p, char *buf, size_t len);
extern const char *const bx_mem_mode_names[];

#endif
