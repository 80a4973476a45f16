// probe_heap: one bad heap operation per run, the kind named on the command line.
// test/system/hardening_probes.sh runs every kind (--list) with and without the preload.
//
// Exit status: 0 when the bad operation went unnoticed (the program carried on), 3 when a
// behaviour probe (reuse, fill) found the hardened behaviour, 4 when it did not. An allocator
// that catches a bad operation stops the program (abort with a message, or a fault in a
// guard page).
#include <alloca.h>
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

enum { UNNOTICED = 0, HARDENED = 3, NOT_HARDENED = 4 };

sigjmp_buf fault_jump;
void on_fault(int) { siglongjmp(fault_jump, 1); }

// Whether n bytes at p still all hold `byte`; a fault while reading counts as "no" (the
// freed memory is gone, which is the hardened answer).
bool still_holds(const unsigned char *p, size_t n, unsigned char byte) {
    struct sigaction sa = {}, old_segv, old_bus;
    sa.sa_handler = on_fault;
    sigaction(SIGSEGV, &sa, &old_segv);
    sigaction(SIGBUS, &sa, &old_bus);
    bool holds = false;
    if (sigsetjmp(fault_jump, 1) == 0) {
        size_t same = 0;
        for (size_t i = 0; i < n; i++) same += launder(p)[i] == byte;
        holds = same == n;
    }
    sigaction(SIGSEGV, &old_segv, nullptr);
    sigaction(SIGBUS, &old_bus, nullptr);
    return holds;
}

unsigned char *alloc(size_t n) { return launder(static_cast<unsigned char *>(malloc(n))); }

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
    unsigned char *p = alloc(n);
    memset(p, 0x11, n);
    if (kind == "over1") {
        launder(p)[n] = 0x5a;
        free(p);
    } else if (kind == "over32") {
        for (size_t i = 0; i < 32; i++) launder(p)[n + i] = 0x5a;
        free(p);
    } else if (kind == "under1") {
        launder(p)[-1] = 0x5a;
        free(p);
    } else if (kind == "under32") {
        for (size_t i = 1; i <= 32; i++) launder(p)[-(std::ptrdiff_t)i] = 0x5a;
        free(p);
    } else if (kind == "memcpy_over1") {
        memcpy(launder(p), source, n + 1);
        free(p);
    } else if (kind == "memcpy_over32") {
        memcpy(launder(p), source, n + 32);
        free(p);
    } else if (kind == "memcpy_under1") {
        memcpy(launder(p) - 1, source, 1);
        free(p);
    } else if (kind == "memcpy_under32") {
        memcpy(launder(p) - 32, source, 32);
        free(p);
    } else if (kind == "over_realloc") {
        launder(p)[n] = 0x5a;
        p = static_cast<unsigned char *>(realloc(p, n * 2));
        free(p);
    } else if (kind == "under_realloc") {
        launder(p)[-1] = 0x5a;
        p = static_cast<unsigned char *>(realloc(p, n * 2));
        free(p);
    } else if (kind == "over1m") {
        launder(p)[n + (1 << 20)] = 0x5a;
        free(p);
        churn(n, 100);
    } else if (kind == "calloc_over1") {
        free(p);
        p = launder(static_cast<unsigned char *>(calloc(1, n)));
        p[n] = 0x5a;
        free(p);
    } else if (kind == "aligned_over1") {
        free(p);
        p = launder(static_cast<unsigned char *>(aligned_alloc(64, n)));
        p[n] = 0x5a;
        free(p);
    } else if (kind == "over_usable") {
        launder(p)[malloc_usable_size(p)] = 0x5a;
        free(p);
    } else if (kind == "dfree_now") {
        free(p);
        free(p);
    } else if (kind == "dfree_delayed") {
        free(p);
        churn(n, 50);
        free(p);
    } else if (kind == "dfree_interleaved") {
        unsigned char *q = alloc(n);
        free(p);
        free(q);
        free(p);
    } else if (kind == "dfree_reused") {
        free(p);
        unsigned char *q = alloc(n); // the slot may be p's again: then the next free is q's
        free(p);
        free(q);
    } else if (kind == "dfree_realloc") {
        free(p);
        p = static_cast<unsigned char *>(realloc(launder(p), n * 2));
        free(p);
    } else if (kind == "free_unaligned") {
        free(p + 1);
    } else if (kind == "free_interior") {
        free(p + n / 2 + 8);
    } else if (kind == "free_past") {
        free(p + n);
    } else if (kind == "uaf_write") {
        free(p);
        launder(p)[0] = 0x5a;
        churn(n, 2000);
    } else if (kind == "uaf_write_mid") {
        free(p);
        launder(p)[n / 2] = 0x5a;
        churn(n, 2000);
    } else if (kind == "uaf_memcpy") {
        free(p);
        memcpy(launder(p), source, n);
        churn(n, 2000);
    } else if (kind == "uaf_write_reuse") {
        free(p);
        launder(p)[n - 1] = 0x5a;
        std::vector<void *> again;
        for (int i = 0; i < 300; i++) again.push_back(malloc(n));
        for (void *q : again) free(q);
    } else if (kind == "reuse_malloc") {
        free(p);
        return alloc(n) == p ? NOT_HARDENED : HARDENED;
    } else if (kind == "reuse_realloc") {
        unsigned char *q = static_cast<unsigned char *>(realloc(p, n * 4 + 64));
        return q != p && alloc(n) == p ? NOT_HARDENED : HARDENED;
    } else if (kind == "reuse_smaller") {
        free(p);
        return alloc(n > 16 ? n - 16 : n / 2) == p ? NOT_HARDENED : HARDENED;
    } else if (kind == "freed_filled") {
        free(p);
        return still_holds(p, n, 0x11) ? NOT_HARDENED : HARDENED;
    } else if (kind == "new_filled") {
        // Old contents handed to the next owner: the slot freed just now, or any other.
        free(p);
        unsigned char *q = alloc(n);
        return still_holds(q, n, 0x11) || still_holds(q, n, 0) ? NOT_HARDENED : HARDENED;
    } else if (kind == "free_of_new") {
        free(p);
        free(launder(new unsigned char[n]));
    } else if (kind == "delete_of_newarr") {
        free(p);
        delete launder(new unsigned char[n]);
    } else if (kind == "deletearr_of_new") {
        free(p);
        auto *q = launder(static_cast<unsigned char *>(operator new(n)));
        delete[] q;
    } else if (kind == "sized_delete_wrong") {
        free(p);
        void *q = launder(operator new(n));
        operator delete(q, n + 64);
    } else {
        fprintf(stderr, "probe_heap: unknown kind %s\n", kind.c_str());
        return 2;
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
        launder(p)[0] = 0x5a;
        free(p);
    } else if (kind == "zero_write32") {
        unsigned char *p = alloc(0);
        for (int i = 0; i < 32; i++) launder(p)[i] = 0x5a;
        free(p);
    } else if (kind == "zero_read") {
        unsigned char *p = alloc(0);
        volatile unsigned char c = launder(p)[0];
        (void)c;
        free(p);
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
        return 2;
    }
    return UNNOTICED;
}

const char *const sized_kinds[] = {
    "over1", "over32", "under1", "under32", "memcpy_over1", "memcpy_over32", "memcpy_under1",
    "memcpy_under32", "over_realloc", "under_realloc", "over1m", "over_usable", "calloc_over1", "aligned_over1",
    "dfree_now", "dfree_delayed", "dfree_interleaved", "dfree_reused", "dfree_realloc",
    "free_unaligned", "free_interior", "free_past", "uaf_write", "uaf_write_mid", "uaf_memcpy",
    "uaf_write_reuse", "reuse_malloc", "reuse_realloc", "reuse_smaller", "freed_filled",
    "new_filled", "free_of_new", "delete_of_newarr", "deletearr_of_new", "sized_delete_wrong"};
const char *const other_kinds[] = {"free_stack",  "free_alloca", "free_global", "free_mmap", "free_far_heap",
                                   "zero_write1", "zero_write32", "zero_read",  "zero_dfree", "zero_free_unaligned", "zero_reuse"};
const struct {
    const char *name;
    size_t size;
} sizes[] = {{"small", 8}, {"medium", 4096}, {"large", 256 << 10}};

} // namespace

int main(int argc, char **argv) {
    if (argc == 2 && std::string(argv[1]) == "--list") {
        for (auto &s : sizes)
            for (const char *k : sized_kinds) printf("%s.%s\n", k, s.name);
        for (const char *k : other_kinds) printf("%s\n", k);
        return 0;
    }
    if (argc != 2) {
        fprintf(stderr, "usage: probe_heap --list | probe_heap KIND[.small|.medium|.large]\n");
        return 2;
    }
    memset(source, 0x33, sizeof source);
    std::string arg = argv[1];
    size_t dot = arg.find('.');
    if (dot == std::string::npos) return other_probe(arg);
    for (auto &s : sizes)
        if (arg.substr(dot + 1) == s.name) return sized_probe(arg.substr(0, dot), s.size);
    fprintf(stderr, "probe_heap: unknown size in %s\n", arg.c_str());
    return 2;
}
