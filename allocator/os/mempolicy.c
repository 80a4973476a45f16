/* mempolicy.c - parsing BOBOX_MEM (mempolicy.h). No malloc: it runs in the allocator's start-up. */
#define _GNU_SOURCE
#include "os/mempolicy.h"

#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MPOL_PREFERRED_ 1
#define MPOL_BIND_ 2
#define MPOL_INTERLEAVE_ 3
#define MPOL_F_MEMS_ALLOWED_ (1 << 2)
#define BITS (8 * sizeof(unsigned long))

const char *const bx_mem_mode_names[] = {"local", "interleave", "bind", "preferred"};

static bool has(const unsigned long *m, long n) { return m[n / BITS] >> (n % BITS) & 1; }
static void set(unsigned long *m, long n) { m[n / BITS] |= 1UL << (n % BITS); }

int bx_mempolicy_kernel_mode(int mode) {
    return mode == BX_MEM_INTERLEAVE ? MPOL_INTERLEAVE_ : mode == BX_MEM_BIND ? MPOL_BIND_ : MPOL_PREFERRED_;
}

bool bx_mempolicy_allowed(unsigned long *mask) {
    memset(mask, 0, BX_MEM_LONGS * sizeof *mask);
    return syscall(SYS_get_mempolicy, NULL, mask, (unsigned long)BX_MEM_MAX_NODES + 1, NULL,
                   (unsigned long)MPOL_F_MEMS_ALLOWED_) == 0;
}

/* "0,2-3": each number below BX_MEM_MAX_NODES, ranges ascending. false on anything else. */
static bool parse_nodes(const char *p, unsigned long *mask) {
    for (;;) {
        long a = 0, b;
        if (*p < '0' || *p > '9') return false;
        while (*p >= '0' && *p <= '9' && a < BX_MEM_MAX_NODES) a = a * 10 + (*p++ - '0');
        b = a;
        if (*p == '-') {
            p++;
            if (*p < '0' || *p > '9') return false;
            b = 0;
            while (*p >= '0' && *p <= '9' && b < BX_MEM_MAX_NODES) b = b * 10 + (*p++ - '0');
        }
        if (a >= BX_MEM_MAX_NODES || b >= BX_MEM_MAX_NODES || b < a) return false;
        for (long n = a; n <= b; n++) set(mask, n);
        if (*p == '\0') return true;
        if (*p++ != ',') return false;
    }
}

static int count(const unsigned long *m) {
    int n = 0;
    for (size_t i = 0; i < BX_MEM_LONGS; i++) n += __builtin_popcountl(m[i]);
    return n;
}

/* "0-1,4" */
static void format_nodes(const unsigned long *m, char *buf, size_t len) {
    size_t pos = 0;
    buf[0] = '\0';
    for (long n = 0; n < BX_MEM_MAX_NODES && pos + 24 < len; n++) {
        if (!has(m, n)) continue;
        long e = n;
        while (e + 1 < BX_MEM_MAX_NODES && has(m, e + 1)) e++;
        int w = e > n ? snprintf(buf + pos, len - pos, "%s%ld-%ld", pos ? "," : "", n, e)
                      : snprintf(buf + pos, len - pos, "%s%ld", pos ? "," : "", n);
        if (w > 0) pos += (size_t)w;
        n = e;
    }
}

void bx_mempolicy_format(const bx_mempolicy_t *p, char *buf, size_t len) {
    char nodes[200];
    format_nodes(p->mask, nodes, sizeof nodes);
    snprintf(buf, len, "%s%s%s", bx_mem_mode_names[p->mode], p->nnodes ? ":" : "", p->nnodes ? nodes : "");
}

int bx_mempolicy_parse(const char *s, const unsigned long *allowed, bx_mempolicy_t *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    if (!s || !*s) return 0;
    int mode = -1;
    size_t len = strcspn(s, ":");
    for (int i = 0; i < 4; i++)
        if (strlen(bx_mem_mode_names[i]) == len && !strncmp(s, bx_mem_mode_names[i], len)) mode = i;
    const char *list = s[len] == ':' ? s + len + 1 : NULL;
    if (mode < 0 || (mode == BX_MEM_LOCAL && list)) goto syntax;
    out->mode = mode;
    if (list && strcmp(list, "all") == 0) {
        if (!allowed) goto syntax; /* "all" needs to know the nodes */
        memcpy(out->mask, allowed, sizeof out->mask);
    } else if (list && !parse_nodes(list, out->mask)) {
        goto syntax;
    } else if (!list && mode == BX_MEM_INTERLEAVE && allowed) {
        memcpy(out->mask, allowed, sizeof out->mask); /* numactl --interleave=all */
    }
    out->nnodes = count(out->mask);
    if (mode == BX_MEM_PREFERRED && out->nnodes > 1) {
        snprintf(err, errlen, "BOBOX_MEM=%s: preferred takes one node (as numactl --preferred)", s);
        goto bad;
    }
    if (allowed && count(allowed) > 0)
        for (long n = 0; n < BX_MEM_MAX_NODES; n++)
            if (has(out->mask, n) && !has(allowed, n)) {
                char ok[200];
                format_nodes(allowed, ok, sizeof ok);
                snprintf(err, errlen, "BOBOX_MEM=%s: node %ld is not one this process may use (allowed: %s)", s, n, ok);
                goto bad;
            }
    return 0;
syntax:
    snprintf(err, errlen,
             "BOBOX_MEM=%s: expected interleave[:NODES], bind[:NODES], preferred[:NODE] or local, NODES as in "
             "numactl (0,2-3 or all)",
             s);
bad:
    memset(out, 0, sizeof *out);
    return -1;
}
