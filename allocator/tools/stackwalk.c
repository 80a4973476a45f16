/* stackwalk.c - stacks of return addresses from call-frame information, each rule decoded once
 * (stackwalk.h). x86-64 only; elsewhere libgcc does it all.
 *
 * A frame's rule says where its caller's state is: the canonical frame address (CFA, the
 * caller's stack pointer) is rsp or rbp plus an offset, the return address lies at CFA - 8,
 * and rbp was saved at CFA - 8k or not touched. gcc emits nothing else for ordinary code; what
 * it emits otherwise (stack realignment, signal trampolines) is marked in the table so that
 * such a sample goes to libgcc at once. */
#define _GNU_SOURCE
#include "tools/stackwalk.h"

#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include <unwind.h>

#include "base/common.h"
#include "os/os.h"

/* ---- libgcc ------------------------------------------------------------------------------- */

typedef struct {
    uintptr_t *pcs;
    int n, max, seen;
    uintptr_t skip_lo, skip_hi;
} libgcc_walk_t;

static _Unwind_Reason_Code libgcc_step(struct _Unwind_Context *ctx, void *arg) {
    libgcc_walk_t *w = arg;
    uintptr_t ip = _Unwind_GetIP(ctx);
    if (!ip) return _URC_END_OF_STACK;
    if (w->seen++ < 2) return _URC_NO_REASON; /* libgcc_walk and its caller (ours) */
    if (w->n == 0 && ip >= w->skip_lo && ip < w->skip_hi) return _URC_NO_REASON;
    w->pcs[w->n++] = ip;
    return w->n == w->max ? _URC_END_OF_STACK : _URC_NO_REASON;
}

/* Called, never inlined, by bx_stackwalk and bx_stackwalk_libgcc, and not as a tail call (the
 * empty asm after it), so that both frames it leaves out are there in every build. */
static BX_NOINLINE int libgcc_walk(uintptr_t *pcs, int max, uintptr_t skip_lo, uintptr_t skip_hi) {
    libgcc_walk_t w = {pcs, 0, max, 0, skip_lo, skip_hi};
    if (max > 0) _Unwind_Backtrace(libgcc_step, &w);
    return w.n;
}

BX_NOINLINE int bx_stackwalk_libgcc(uintptr_t *pcs, int max, uintptr_t skip_lo, uintptr_t skip_hi) {
    int n = libgcc_walk(pcs, max, skip_lo, skip_hi);
    __asm__ volatile("" ::: "memory");
    return n;
}

#if defined(__x86_64__)

/* ---- the rule table ----------------------------------------------------------------------- */

/* One 64-bit word a return address, so that a reader never sees half of another writer's
 * entry: the address (user space, below 2^47) above 17 bits of rule. */
#define RULE_BITS 17
#define RULE_SLOT_BITS 16
#define RULE_SLOTS (1u << RULE_SLOT_BITS)
#define CFA_RBP 1u  /* bit 0: the CFA is rbp + offset, not rsp + offset */
#define OFF_SHIFT 1 /* bits 1-12: the CFA offset in 8-byte units (frames up to 32 KB) */
#define OFF_MASK 4095u
#define OFF_MAX 4093u    /* larger offsets: libgcc's */
#define OFF_LIBGCC 4094u /* a rule only libgcc can follow */
#define OFF_END 4095u    /* no caller: the outermost frame, or no rule for it */
#define RBP_SHIFT 13     /* bits 13-16: rbp saved at CFA - 8k (k = 0: not saved) */
#define RBP_MAX 15u

static _Atomic uint64_t *rules;

bool bx_stackwalk_init(void) {
    if (!rules) rules = bx_os_map(RULE_SLOTS * sizeof *rules);
    return rules != NULL;
}

typedef struct {
    int cfa_reg; /* 7 rsp, 6 rbp; anything else: libgcc's */
    int64_t cfa_off;
    int64_t rbp_off; /* 0: rbp unchanged */
    int64_t ra_off;  /* INT64_MIN: no return address (the outermost frame) */
    bool libgcc;     /* a construct only libgcc follows */
} rule_t;

/* The table's word for a rule (pc below 2^47): what it cannot express goes to libgcc. */
static uint64_t encode(uintptr_t pc, const rule_t *r) {
    unsigned off = OFF_LIBGCC, rbp = 0;
    if (r->libgcc) return (uint64_t)pc << RULE_BITS | OFF_LIBGCC << OFF_SHIFT;
    if (r->ra_off == INT64_MIN)
        off = OFF_END;
    else if (r->ra_off == -8 && r->cfa_off > 0 && r->cfa_off % 8 == 0 && (uint64_t)r->cfa_off / 8 <= OFF_MAX &&
             r->rbp_off <= 0 && r->rbp_off % 8 == 0 && (uint64_t)-r->rbp_off / 8 <= RBP_MAX) {
        off = (unsigned)(r->cfa_off / 8);
        rbp = (unsigned)(-r->rbp_off / 8);
    }
    return (uint64_t)pc << RULE_BITS | rbp << RBP_SHIFT | off << OFF_SHIFT | (r->cfa_reg == 6 ? CFA_RBP : 0);
}

/* ---- call-frame information ----------------------------------------------------------------- */

struct dwarf_eh_bases {
    void *tbase, *dbase, *func;
};
extern const void *_Unwind_Find_FDE(void *pc, struct dwarf_eh_bases *bases);

enum {
    DW_EH_PE_omit = 0xff,
    DW_EH_PE_uleb128 = 0x01,
    DW_EH_PE_udata2 = 0x02,
    DW_EH_PE_udata4 = 0x03,
    DW_EH_PE_udata8 = 0x04,
    DW_EH_PE_sleb128 = 0x09,
    DW_EH_PE_sdata2 = 0x0a,
    DW_EH_PE_sdata4 = 0x0b,
    DW_EH_PE_sdata8 = 0x0c
};

typedef struct {
    const uint8_t *p, *end;
    bool bad;
} cursor_t;

static uint64_t uleb(cursor_t *c) {
    uint64_t v = 0;
    for (unsigned shift = 0; c->p < c->end; shift += 7) {
        uint8_t b = *c->p++;
        if (shift < 64) v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) return v;
    }
    c->bad = true;
    return 0;
}

static int64_t sleb(cursor_t *c) {
    uint64_t v = 0;
    unsigned shift = 0;
    uint8_t b = 0x80;
    while (c->p < c->end && (b & 0x80)) {
        b = *c->p++;
        if (shift < 64) v |= (uint64_t)(b & 0x7f) << shift;
        shift += 7;
    }
    if (b & 0x80) c->bad = true;
    if (shift < 64 && (b & 0x40)) v |= ~(uint64_t)0 << shift;
    return (int64_t)v;
}

static uint64_t fixed(cursor_t *c, size_t n) {
    if ((size_t)(c->end - c->p) < n) {
        c->bad = true;
        return 0;
    }
    uint64_t v = 0;
    memcpy(&v, c->p, n); /* little-endian */
    c->p += n;
    return v;
}

/* Skips a value of pointer encoding `enc` (its format only: its value is not needed). */
static void skip_encoded(cursor_t *c, uint8_t enc) {
    if (enc == DW_EH_PE_omit) return;
    switch (enc & 0x0f) {
    case 0: fixed(c, 8); break;
    case DW_EH_PE_uleb128: uleb(c); break;
    case DW_EH_PE_sleb128: sleb(c); break;
    case DW_EH_PE_udata2:
    case DW_EH_PE_sdata2: fixed(c, 2); break;
    case DW_EH_PE_udata4:
    case DW_EH_PE_sdata4: fixed(c, 4); break;
    case DW_EH_PE_udata8:
    case DW_EH_PE_sdata8: fixed(c, 8); break;
    default: c->bad = true;
    }
}

/* An entry's extent: [after its length, end). */
static bool entry(const uint8_t *at, cursor_t *c) {
    uint32_t len32;
    memcpy(&len32, at, 4);
    if (len32 == 0 || len32 == 0xffffffffu) return false; /* terminator, or 64-bit DWARF: not in .eh_frame */
    c->p = at + 4;
    c->end = at + 4 + len32;
    c->bad = false;
    return true;
}

typedef struct {
    uint64_t code_align;
    int64_t data_align;
    uint64_t ra_column;
    uint8_t fde_enc;
    bool signal, has_aug; /* has_aug: FDEs carry augmentation data ('z') */
    cursor_t insns;
} cie_t;

static bool read_cie(const uint8_t *at, cie_t *cie) {
    cursor_t c;
    if (!entry(at, &cie->insns) || (c = cie->insns, fixed(&c, 4) != 0)) return false; /* id 0: a CIE */
    uint8_t version = (uint8_t)fixed(&c, 1);
    const char *aug = (const char *)c.p;
    size_t aug_len = strnlen(aug, (size_t)(c.end - c.p));
    c.p += aug_len + 1;
    if (strstr(aug, "eh")) return false;
    cie->code_align = uleb(&c);
    cie->data_align = sleb(&c);
    cie->ra_column = version == 1 ? fixed(&c, 1) : uleb(&c);
    cie->fde_enc = 0;
    cie->signal = false;
    cie->has_aug = aug[0] == 'z';
    if (aug[0] == 'z') {
        uint64_t len = uleb(&c);
        cursor_t a = {c.p, c.p + len, c.p + len > c.end};
        for (const char *s = aug + 1; *s && !a.bad; s++) {
            if (*s == 'R')
                cie->fde_enc = (uint8_t)fixed(&a, 1);
            else if (*s == 'L')
                fixed(&a, 1);
            else if (*s == 'P')
                skip_encoded(&a, (uint8_t)fixed(&a, 1));
            else if (*s == 'S')
                cie->signal = true;
            else if (*s != 'B')
                return false;
        }
        if (a.bad) return false;
        c.p += len;
    } else if (aug[0]) {
        return false;
    }
    if (c.bad || c.p > c.end) return false;
    cie->insns.p = c.p;
    return true;
}

#define STATE_DEPTH 8

/* Runs a CFA program up to `pc`: `loc` is where it starts, the rule it builds is in *r. */
static bool run(cursor_t c, const cie_t *cie, uintptr_t loc, uintptr_t pc, rule_t *r, const rule_t *initial) {
    rule_t saved[STATE_DEPTH];
    int depth = 0;
    while (c.p < c.end && !c.bad) {
        uint8_t op = *c.p++;
        uint64_t reg = 0;
        int64_t off = 0;
        uint64_t advance = 0;
        switch (op >> 6) {
        case 1: advance = op & 0x3f; goto advance;
        case 2:
            reg = op & 0x3f;
            off = (int64_t)uleb(&c) * cie->data_align;
            goto offset;
        case 3: reg = op & 0x3f; goto restore;
        }
        switch (op) {
        case 0x00: break;                                /* nop */
        case 0x01: return false;                         /* set_loc: not in gcc's output */
        case 0x02: advance = fixed(&c, 1); goto advance; /* advance_loc1 */
        case 0x03: advance = fixed(&c, 2); goto advance;
        case 0x04: advance = fixed(&c, 4); goto advance;
        case 0x05: reg = uleb(&c), off = (int64_t)uleb(&c) * cie->data_align; goto offset; /* offset_extended */
        case 0x06: reg = uleb(&c); goto restore;
        case 0x07: /* undefined */
            reg = uleb(&c);
            if (reg == cie->ra_column)
                r->ra_off = INT64_MIN;
            else if (reg == 6 || reg == 7)
                r->libgcc = true;
            break;
        case 0x08: /* same_value */
            reg = uleb(&c);
            if (reg == 6)
                r->rbp_off = 0;
            else if (reg == cie->ra_column || reg == 7)
                r->libgcc = true;
            break;
        case 0x09: /* register: one register kept in another */
            reg = uleb(&c), uleb(&c);
            if (reg == 6 || reg == 7 || reg == cie->ra_column) r->libgcc = true;
            break;
        case 0x0a: /* remember_state */
            if (depth == STATE_DEPTH) return false;
            saved[depth++] = *r;
            break;
        case 0x0b: /* restore_state: the whole row, the CFA's rule with it */
            if (!depth) return false;
            *r = saved[--depth];
            break;
        case 0x0c: r->cfa_reg = (int)uleb(&c), r->cfa_off = (int64_t)uleb(&c); break; /* def_cfa */
        case 0x0d: r->cfa_reg = (int)uleb(&c); break;                                 /* def_cfa_register */
        case 0x0e: r->cfa_off = (int64_t)uleb(&c); break;                             /* def_cfa_offset */
        case 0x0f:                                                                    /* def_cfa_expression */
            r->libgcc = true;
            c.p += uleb(&c);
            break;
        case 0x10: /* expression */
        case 0x16: /* val_expression */
            reg = uleb(&c);
            if (reg == 6 || reg == 7 || reg == cie->ra_column) r->libgcc = true;
            c.p += uleb(&c);
            break;
        case 0x11: reg = uleb(&c), off = sleb(&c) * cie->data_align; goto offset;              /* offset_extended_sf */
        case 0x12: r->cfa_reg = (int)uleb(&c), r->cfa_off = sleb(&c) * cie->data_align; break; /* def_cfa_sf */
        case 0x13: r->cfa_off = sleb(&c) * cie->data_align; break;                             /* def_cfa_offset_sf */
        case 0x14:                                                                             /* val_offset */
        case 0x15:                                                                             /* val_offset_sf */
            reg = uleb(&c);
            op == 0x14 ? (void)uleb(&c) : (void)sleb(&c);
            if (reg == 6 || reg == 7 || reg == cie->ra_column) r->libgcc = true;
            break;
        case 0x2e: uleb(&c); break; /* GNU_args_size */
        case 0x2f:                  /* GNU_negative_offset_extended */
            reg = uleb(&c), off = -(int64_t)uleb(&c) * cie->data_align;
            goto offset;
        default: return false;
        }
        continue;
    advance:
        loc += advance * cie->code_align;
        if (loc > pc) return !c.bad;
        continue;
    offset:
        if (reg == 6)
            r->rbp_off = off;
        else if (reg == cie->ra_column)
            r->ra_off = off;
        continue;
    restore:
        if (!initial) return false; /* restore inside the CIE's own program */
        if (reg == 6)
            r->rbp_off = initial->rbp_off;
        else if (reg == cie->ra_column)
            r->ra_off = initial->ra_off;
        continue;
    }
    return !c.bad;
}

/* The rule at `pc` from the call-frame information; libgcc's when it cannot be read. */
static void find_rule(uintptr_t pc, rule_t *r) {
    *r = (rule_t){.cfa_reg = 7, .cfa_off = 8, .ra_off = INT64_MIN};
    struct dwarf_eh_bases bases;
    const uint8_t *fde = _Unwind_Find_FDE((void *)pc, &bases);
    if (!fde) return; /* no information: the walk ends here, as libgcc's does */
    cursor_t c;
    cie_t cie;
    int32_t cie_delta;
    memcpy(&cie_delta, fde + 4, 4);
    if (!entry(fde, &c) || !read_cie(fde + 4 - cie_delta, &cie) || cie.signal) goto libgcc;
    c.p += 4;
    skip_encoded(&c, cie.fde_enc);        /* pc_begin: bases.func has it */
    skip_encoded(&c, cie.fde_enc & 0x0f); /* pc_range */
    if (cie.has_aug) c.p += uleb(&c);
    if (c.bad || c.p > c.end) goto libgcc;
    rule_t initial = {.cfa_reg = 7, .cfa_off = 8, .ra_off = INT64_MIN};
    if (!run(cie.insns, &cie, 0, UINTPTR_MAX, &initial, NULL)) goto libgcc;
    *r = initial;
    if (!run(c, &cie, (uintptr_t)bases.func, pc, r, &initial)) goto libgcc;
    if (r->cfa_reg != 6 && r->cfa_reg != 7) r->libgcc = true;
    return;
libgcc:
    r->libgcc = true;
}

/* A walk may read the stack only: frames lie above the stack pointer, within this bound of it. */
#define FRAME_MAX (1ul << 20)

BX_NOINLINE int bx_stackwalk(uintptr_t *pcs, int max, uintptr_t skip_lo, uintptr_t skip_hi) {
    int n = 0;
    uintptr_t pc, sp, bp;
    if (!rules || max <= 0) goto libgcc;
    __asm__ volatile("leaq 0f(%%rip), %0\n0:\n\tmovq %%rsp, %1\n\tmovq %%rbp, %2" : "=r"(pc), "=r"(sp), "=r"(bp));
    for (uintptr_t at = pc; n < max; at = pc - 1) { /* a return address may be the next function's first byte */
        if (BX_UNLIKELY(at >> (64 - RULE_BITS))) goto libgcc;
        _Atomic uint64_t *slot = &rules[(at * 0x9E3779B97F4A7C15ull) >> (64 - RULE_SLOT_BITS)];
        uint64_t e = atomic_load_explicit(slot, memory_order_relaxed);
        if (BX_UNLIKELY(e >> RULE_BITS != at)) {
            rule_t r;
            find_rule(at, &r);
            e = encode(at, &r);
            atomic_store_explicit(slot, e, memory_order_relaxed);
        }
        unsigned off = (unsigned)(e >> OFF_SHIFT) & OFF_MASK, rbp = (unsigned)(e >> RBP_SHIFT) & RBP_MAX;
        if (BX_UNLIKELY(off > OFF_MAX)) {
            if (off == OFF_END) break;
            goto libgcc;
        }
        uintptr_t cfa = (e & CFA_RBP ? bp : sp) + off * 8;
        if (cfa - sp - 1 >= FRAME_MAX || cfa % 8) break; /* not a frame above this one */
        if (rbp) bp = *(const uintptr_t *)(cfa - rbp * 8);
        pc = *(const uintptr_t *)(cfa - 8);
        sp = cfa;
        if (!pc) break;
        if (n == 0 && pc - skip_lo < skip_hi - skip_lo) continue;
        pcs[n++] = pc;
    }
    return n;
libgcc:
    n = libgcc_walk(pcs, max, skip_lo, skip_hi);
    __asm__ volatile("" ::: "memory");
    return n;
}

#else

bool bx_stackwalk_init(void) { return true; }

BX_NOINLINE int bx_stackwalk(uintptr_t *pcs, int max, uintptr_t skip_lo, uintptr_t skip_hi) {
    int n = libgcc_walk(pcs, max, skip_lo, skip_hi);
    __asm__ volatile("" ::: "memory");
    return n;
}

#endif
