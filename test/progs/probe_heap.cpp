// probe_heap: one bad heap operation per run, the kind named on the command line.
// test/system/hardening_probes.sh runs every kind (--list) under each allocator.
//
// A probe does its bad operation and then ends as an attacked program goes on: the object is
// never freed afterwards, unless freeing it is the bad operation (double, invalid or
// mismatched free), so an allocator catches it at the operation or not at all.
//
// Exit status: 0 when the bad operation went unnoticed (NOT_CAUGHT on stdout), 3 when a
// behaviour probe (reuse, fill) found the hardened behaviour, 4 when it did not, 2 on a usage
// error. An allocator that catches a bad operation stops the program (abort with a message,
// or a fault). A fault prints which phase it hit on stderr, "at the bad access" when it is
// the program's own out-of-bounds or freed-memory access, and the process then dies of it.
#include <alloca.h>
#include <link.h>
#include <ucontext.h>
#include <csetjmp>
#include <csignal>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <malloc.h>
#include <new>
#include <string>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

// The bad operations are the point of this program.
#pragma GCC diagnostic ignored "-Wuse-after-free"
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#pragma GCC diagnostic ignored "-Wfree-nonheap-object"

namespace {

// Hides where a pointer came from, so that the compiler neither warns about nor removes the
// bad operation under test.
template <class T> T *launder(T *p) {
    asm volatile("" : "+r"(p)::"memory");
    return p;
}

// Hides a length, so that a memcpy kind calls memcpy rather than becoming an inline store.
size_t hide(size_t n) {
    asm volatile("" : "+r"(n));
    return n;
}

enum { UNNOTICED = 0, USAGE = 2, HARDENED = 3, NOT_HARDENED = 4 };

// ---- faults: at the program's own bad access, or anywhere else -----------------------------
volatile sig_atomic_t in_access = 0;

// The executable segments of the preloaded libbobox.so, found before the bad operation: a
// fault there is inside the allocator (its copy checks run inside a bad memcpy's call), not
// at the program's access, and must not count as a catch.
struct Range {
    uintptr_t lo, hi;
};
Range bobox_text[8];
int bobox_texts = 0;
int find_bobox(struct dl_phdr_info *info, size_t, void *) {
    if (!info->dlpi_name || !strstr(info->dlpi_name, "libbobox.so")) return 0;
    for (int i = 0; i < info->dlpi_phnum && bobox_texts < 8; i++) {
        const ElfW(Phdr) &ph = info->dlpi_phdr[i];
        if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X))
            bobox_text[bobox_texts++] = {info->dlpi_addr + ph.p_vaddr, info->dlpi_addr + ph.p_vaddr + ph.p_memsz};
    }
    return 1;
}
bool in_bobox(uintptr_t pc) {
    for (int i = 0; i < bobox_texts; i++)
        if (pc >= bobox_text[i].lo && pc < bobox_text[i].hi) return true;
    return false;
}

void on_fatal_fault(int sig, siginfo_t *, void *context) {
    static const char at[] = "probe_heap: fault at the bad access\n";
    static const char off[] = "probe_heap: fault outside the bad access\n";
    static const char lib[] = "probe_heap: fault inside libbobox.so during the bad access\n";
    uintptr_t pc = (uintptr_t)((ucontext_t *)context)->uc_mcontext.gregs[REG_RIP];
    if (in_access && in_bobox(pc)) (void)!write(2, lib, sizeof lib - 1);
    else if (in_access) (void)!write(2, at, sizeof at - 1);
    else (void)!write(2, off, sizeof off - 1);
    signal(sig, SIG_DFL); // returning runs the faulting instruction again: the process dies of it
}

// Runs the program's own bad load or store; a fault inside it is the allocator's catch
// (a guard page, or freed memory given back).
template <class F> void bad_access(F f) {
    in_access = 1;
    asm volatile("" ::: "memory");
    f();
    asm volatile("" ::: "memory");
    in_access = 0;
}

sigjmp_buf fault_jump;
void on_read_fault(int) { siglongjmp(fault_jump, 1); }

// What read_back saw: a static buffer, as a vector would take the freed slot it is reading.
unsigned char seen[(1 << 20) + 64];

// Copies n bytes at p into seen; false when the read faults (the memory is gone).
bool read_back(const unsigned char *p, size_t n) {
    struct sigaction sa = {}, old_segv, old_bus;
    sa.sa_handler = on_read_fault;
    sigaction(SIGSEGV, &sa, &old_segv);
    sigaction(SIGBUS, &sa, &old_bus);
    volatile bool ok = false;
    if (sigsetjmp(fault_jump, 1) == 0) {
        for (size_t i = 0; i < n; i++) seen[i] = launder(p)[i];
        ok = true;
    }
    sigaction(SIGSEGV, &old_segv, nullptr);
    sigaction(SIGBUS, &old_bus, nullptr);
    return ok;
}

// A fill: seen[from, n) all hold one value other than the program's own `old` (zero counts).
// A free-list link or any leftover of the old contents is not one.
bool is_fill(size_t from, size_t n, unsigned char old) {
    if (from >= n) return false;
    for (size_t i = from; i < n; i++)
        if (seen[i] != seen[from]) return false;
    return seen[from] != old;
}

unsigned char *alloc(size_t n) { return launder(static_cast<unsigned char *>(malloc(n))); }

// The program's own bytes, 0x11; launder() after the memset keeps the compiler from dropping
// it as a dead store before free.
unsigned char *filled(size_t n) {
    unsigned char *p = alloc(n);
    memset(p, 0x11, n);
    return launder(p);
}

// Allocation traffic of other sizes and of the same size, as a program would go on doing.
void churn(size_t n, int rounds) {
    for (int i = 0; i < rounds; i++) {
        void *a = malloc(n), *b = malloc(n / 2 + 1), *c = malloc(24);
        free(launder(a));
        free(launder(b));
        free(launder(c));
    }
}

unsigned char source[(1 << 20) + 64];
char far_away[4096];

// ---- the kinds of one object size ----------------------------------------------------------
int sized_probe(const std::string &kind, size_t n) {
    if (kind == "over1") {
        unsigned char *p = filled(n);
        bad_access([&] { launder(p)[n] ^= 0x5a; });
    } else if (kind == "over32") {
        unsigned char *p = filled(n);
        bad_access([&] {
            for (size_t i = 0; i < 32; i++) launder(p)[n + i] ^= 0x5a;
        });
    } else if (kind == "under1") {
        unsigned char *p = filled(n);
        bad_access([&] { launder(p)[-1] ^= 0x5a; });
    } else if (kind == "under32") {
        unsigned char *p = filled(n);
        bad_access([&] {
            for (size_t i = 1; i <= 32; i++) launder(p)[-(std::ptrdiff_t)i] ^= 0x5a;
        });
    } else if (kind == "memcpy_over1") {
        unsigned char *p = filled(n);
        bad_access([&] { memcpy(launder(p), source, hide(n + 1)); });
    } else if (kind == "memcpy_over32") {
        unsigned char *p = filled(n);
        bad_access([&] { memcpy(launder(p), source, hide(n + 32)); });
    } else if (kind == "memcpy_under1") {
        unsigned char *p = filled(n);
        bad_access([&] { memcpy(launder(p) - 1, source, hide(1)); });
    } else if (kind == "memcpy_under32") {
        unsigned char *p = filled(n);
        bad_access([&] { memcpy(launder(p) - 32, source, hide(32)); });
    } else if (kind == "over_realloc") {
        // realloc is the kind: the next call on the object after the overflow.
        unsigned char *p = filled(n);
        bad_access([&] { launder(p)[n] ^= 0x5a; });
        launder(realloc(p, n * 2));
    } else if (kind == "under_realloc") {
        unsigned char *p = filled(n);
        bad_access([&] { launder(p)[-1] ^= 0x5a; });
        launder(realloc(p, n * 2));
    } else if (kind == "over1m") {
        unsigned char *p = filled(n);
        bad_access([&] { launder(p)[n + (1 << 20)] ^= 0x5a; });
    } else if (kind == "calloc_over1") {
        auto *p = launder(static_cast<unsigned char *>(calloc(1, n)));
        bad_access([&] { p[n] ^= 0x5a; });
    } else if (kind == "aligned_over1") {
        auto *p = launder(static_cast<unsigned char *>(aligned_alloc(64, n)));
        bad_access([&] { p[n] ^= 0x5a; });
    } else if (kind == "over_usable") {
        unsigned char *p = filled(n);
        size_t usable = malloc_usable_size(p);
        bad_access([&] { launder(p)[usable] ^= 0x5a; });
    } else if (kind == "dfree_now") {
        unsigned char *p = filled(n);
        free(p);
        free(p);
    } else if (kind == "dfree_delayed") {
        unsigned char *p = filled(n);
        free(p);
        churn(n, 50);
        free(p);
    } else if (kind == "dfree_interleaved") {
        unsigned char *p = filled(n), *q = alloc(n);
        free(p);
        free(q);
        free(p);
    } else if (kind == "dfree_reused") {
        unsigned char *p = filled(n);
        free(p);
        unsigned char *q = alloc(n); // the slot may be p's again: then the next free is q's
        free(p);
        free(q);
    } else if (kind == "dfree_realloc") {
        unsigned char *p = filled(n);
        free(p);
        launder(realloc(launder(p), n * 2));
    } else if (kind == "free_unaligned") {
        free(filled(n) + 1);
    } else if (kind == "free_interior") {
        free(filled(n) + n / 2 + 8);
    } else if (kind == "free_past") {
        free(filled(n) + n);
    } else if (kind == "uaf_write") {
        unsigned char *p = filled(n);
        free(p);
        bad_access([&] { launder(p)[0] ^= 0x5a; });
    } else if (kind == "uaf_write_mid") {
        unsigned char *p = filled(n);
        free(p);
        bad_access([&] { launder(p)[n / 2] ^= 0x5a; });
    } else if (kind == "uaf_memcpy") {
        unsigned char *p = filled(n);
        free(p);
        bad_access([&] { memcpy(launder(p), source, hide(n)); });
    } else if (kind == "uaf_write_reuse") {
        // The program goes on allocating the size: 300 objects held (a LIFO or FIFO list
        // hands the slot out again), then at least 1100 objects or 64 MB through one slot
        // each (a quarantine of 1024 objects or 32 MB turns over).
        unsigned char *p = filled(n);
        free(p);
        bad_access([&] { launder(p)[n - 1] ^= 0x5a; });
        std::vector<void *> again;
        for (int i = 0; i < 300; i++) again.push_back(malloc(n));
        for (void *q : again) free(q);
        size_t rounds = (64 << 20) / n + 1;
        if (rounds > 1100) rounds = 1100;
        for (size_t i = 0; i < rounds; i++) free(launder(malloc(n)));
    } else if (kind == "reuse_malloc") {
        unsigned char *p = filled(n);
        free(p);
        return alloc(n) == p ? NOT_HARDENED : HARDENED;
    } else if (kind == "reuse_realloc") {
        // Grown to 4n+64, past the slot in every size range. Hardened: realloc moved it (a
        // stale copy of the old pointer no longer reaches the object) and the next malloc
        // of the old size does not hand out the old address.
        unsigned char *p = filled(n);
        auto *q = launder(static_cast<unsigned char *>(realloc(p, n * 4 + 64)));
        if (q == p) return NOT_HARDENED;
        return alloc(n) == p ? NOT_HARDENED : HARDENED;
    } else if (kind == "reuse_smaller") {
        unsigned char *p = filled(n);
        free(p);
        return alloc(n > 16 ? n - 16 : n / 2) == p ? NOT_HARDENED : HARDENED;
    } else if (kind == "freed_filled") {
        // The first 16 bytes may keep the allocator's link (in objects larger than that);
        // the rest must be one fill value, or gone (the read faults).
        unsigned char *p = filled(n);
        free(p);
        if (!read_back(p, n)) return HARDENED;
        return is_fill(n > 16 ? 16 : 0, n, 0x11) ? HARDENED : NOT_HARDENED;
    } else if (kind == "new_filled") {
        // 16 objects with the program's bytes, freed; the next object of the size must be one
        // fill value throughout (zero counts), whichever memory it is. Read directly: a new
        // object that faults is the allocator's crash, not an answer.
        unsigned char *old[16];
        for (auto &o : old) o = filled(n);
        for (auto *o : old) free(o);
        memcpy(seen, alloc(n), n);
        return is_fill(0, n, 0x11) ? HARDENED : NOT_HARDENED;
    } else if (kind == "free_of_new") {
        free(launder(new unsigned char[n]));
    } else if (kind == "delete_of_newarr") {
        delete launder(new unsigned char[n]);
    } else if (kind == "deletearr_of_new") {
        auto *q = launder(static_cast<unsigned char *>(operator new(n)));
        delete[] q;
    } else if (kind == "sized_delete_wrong") {
        void *q = launder(operator new(n));
        operator delete(q, n + 64);
    } else {
        fprintf(stderr, "probe_heap: unknown kind %s\n", kind.c_str());
        return USAGE;
    }
    return UNNOTICED;
}

int other_probe(const std::string &kind) {
    if (kind == "free_stack") {
        char buf[64];
        free(launder(buf) + 16);
    } else if (kind == "free_alloca") {
        char *a = static_cast<char *>(alloca(256));
        a[0] = 1;
        free(launder(a));
    } else if (kind == "free_global") {
        free(launder(far_away) + 64);
    } else if (kind == "free_mmap") {
        void *m = mmap(nullptr, 1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        free(launder(static_cast<char *>(m)) + 4096);
    } else if (kind == "free_far_heap") {
        unsigned char *p = alloc(48);
        free(p + (8 << 20));
    } else if (kind == "zero_write1") {
        unsigned char *p = alloc(0);
        bad_access([&] { launder(p)[0] ^= 0x5a; });
    } else if (kind == "zero_write32") {
        unsigned char *p = alloc(0);
        bad_access([&] {
            for (int i = 0; i < 32; i++) launder(p)[i] ^= 0x5a;
        });
    } else if (kind == "zero_read") {
        unsigned char *p = alloc(0);
        bad_access([&] {
            volatile unsigned char c = launder(p)[0];
            (void)c;
        });
    } else if (kind == "zero_dfree") {
        unsigned char *p = alloc(0);
        free(p);
        free(p);
    } else if (kind == "zero_free_unaligned") {
        free(alloc(0) + 1);
    } else if (kind == "zero_reuse") {
        unsigned char *p = alloc(0);
        free(p);
        return alloc(0) == p ? NOT_HARDENED : HARDENED;
    } else {
        fprintf(stderr, "probe_heap: unknown kind %s\n", kind.c_str());
        return USAGE;
    }
    return UNNOTICED;
}

// The family tells the test which catch is the right one: an abort with the message of that
// family, or (for accesses) a fault at the access; "behaviour" kinds answer by exit status.
struct Kind {
    const char *name, *family;
};
const Kind sized_kinds[] = {
    {"over1", "overflow"},
    {"over32", "overflow"},
    {"under1", "underflow"},
    {"under32", "underflow"},
    {"memcpy_over1", "overflow"},
    {"memcpy_over32", "overflow"},
    {"memcpy_under1", "underflow"},
    {"memcpy_under32", "underflow"},
    {"over_realloc", "overflow"},
    {"under_realloc", "underflow"},
    {"over1m", "overflow"},
    {"over_usable", "overflow"},
    {"calloc_over1", "overflow"},
    {"aligned_over1", "overflow"},
    {"dfree_now", "double_free"},
    {"dfree_delayed", "double_free"},
    {"dfree_interleaved", "double_free"},
    {"dfree_reused", "double_free"},
    {"dfree_realloc", "double_free"},
    {"free_unaligned", "invalid_free"},
    {"free_interior", "invalid_free"},
    {"free_past", "invalid_free"},
    {"uaf_write", "write_after_free"},
    {"uaf_write_mid", "write_after_free"},
    {"uaf_memcpy", "write_after_free"},
    {"uaf_write_reuse", "write_after_free"},
    {"reuse_malloc", "behaviour"},
    {"reuse_realloc", "behaviour"},
    {"reuse_smaller", "behaviour"},
    {"freed_filled", "behaviour"},
    {"new_filled", "behaviour"},
    {"free_of_new", "mismatch"},
    {"delete_of_newarr", "mismatch"},
    {"deletearr_of_new", "mismatch"},
    {"sized_delete_wrong", "mismatch"},
};
const Kind other_kinds[] = {
    {"free_stack", "invalid_free"},  {"free_alloca", "invalid_free"},  {"free_global", "invalid_free"},
    {"free_mmap", "invalid_free"},   {"free_far_heap", "invalid_free"}, {"zero_write1", "overflow"},
    {"zero_write32", "overflow"},    {"zero_read", "read"},            {"zero_dfree", "double_free"},
    {"zero_free_unaligned", "invalid_free"}, {"zero_reuse", "behaviour"},
};
// small, medium and large are the public suite's three sizes; huge is above bobox's large
// threshold (about 510 KB), an object in its own mapping.
const struct {
    const char *name;
    size_t size;
} sizes[] = {{"small", 8}, {"medium", 4096}, {"large", 256 << 10}, {"huge", 1 << 20}};

} // namespace

int main(int argc, char **argv) {
    if (argc == 2 && std::string(argv[1]) == "--list") {
        for (auto &s : sizes)
            for (const Kind &k : sized_kinds) printf("%s.%s %s\n", k.name, s.name, k.family);
        for (const Kind &k : other_kinds) printf("%s %s\n", k.name, k.family);
        return 0;
    }
    if (argc != 2) {
        fprintf(stderr, "usage: probe_heap --list | probe_heap KIND[.small|.medium|.large|.huge]\n");
        return USAGE;
    }
    dl_iterate_phdr(find_bobox, nullptr);
    struct sigaction sa = {};
    sa.sa_sigaction = on_fatal_fault;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &sa, nullptr);
    sigaction(SIGBUS, &sa, nullptr);
    memset(source, 0x33, sizeof source);

    std::string arg = argv[1];
    size_t dot = arg.find('.');
    int rc = USAGE;
    if (dot == std::string::npos) rc = other_probe(arg);
    else {
        bool sized = false;
        for (auto &s : sizes)
            if (arg.substr(dot + 1) == s.name) sized = true, rc = sized_probe(arg.substr(0, dot), s.size);
        if (!sized) fprintf(stderr, "probe_heap: unknown size in %s\n", arg.c_str());
    }
    // write(), not stdio: no allocation after the bad operation.
    if (rc == UNNOTICED) (void)!write(1, "NOT_CAUGHT\n", 11);
    return rc;
}
