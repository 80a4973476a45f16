// Checked mode's checks of what a program leaves behind (run with BOBOX_CHECK=1 by
// test/system/hardening_checked.sh, as every [.checked] case): bobox_check_heap() verifies
// every live object's canaries and every object in the quarantine, as the check at exit does
// (test/system/hardening_checked_exit.sh runs the exit itself). Each abort is checked in a
// forked child that then leaves through _exit, so that only the check under test can report.
#include <catch2/catch.hpp>
#include <algorithm>
#include <csignal>
#include <fcntl.h>
#include <new>
#include <string>
#include <sys/resource.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include "api.h"
#include "child.h"

using namespace api;

namespace {

using check_heap_fn = int (*)(void);
int check_heap_now() {
#ifdef API_PREFIXED
    return bobox_check_heap();
#else
    static check_heap_fn f = lookup<check_heap_fn>("bobox_check_heap");
    REQUIRE(f != nullptr);
    return f();
#endif
}

std::string text(const char *fmt, const void *p, size_t a = 0, size_t b = 0) {
    char buf[256];
    snprintf(buf, sizeof buf, fmt, p, a, b);
    return buf;
}

struct Shape {
    const char *what;
    size_t size, alignment;
};
const Shape shapes[] = {{"small", 24, 0},       {"small, exact class", 48, 0}, {"medium", 100000, 0},
                        {"large", 3 << 20, 0}, {"aligned", 200, 256},         {"aligned large", 5000, 65536}};

char *make(const Shape &s) {
    return static_cast<char *>(s.alignment ? a_aligned_alloc(s.alignment, s.size) : a_malloc(s.size));
}
} // namespace

TEST_CASE("checked mode: bobox_check_heap reports an overflow or underflow of an object never freed", "[.checked]") {
    REQUIRE(checked_mode());
    for (const Shape &s : shapes) {
        char *p = make(s);
        REQUIRE(p != nullptr);
        memset(p, 0x5a, s.size); // every requested byte is the program's
        REQUIRE(check_heap_now() == 1);
        auto [sig, err] = in_child([&] {
            p[s.size] = 0;
            check_heap_now();
        });
        INFO(s.what << ": " << err);
        REQUIRE(sig == SIGABRT);
        REQUIRE(err.find(text("bobox: bobox_check_heap(): heap overflow past the end of %p (size %zu): byte %zu overwritten",
                              p, s.size, s.size)) != std::string::npos);
        auto [sig2, err2] = in_child([&] {
            p[-1] = 0;
            check_heap_now();
        });
        INFO(err2);
        REQUIRE(sig2 == SIGABRT);
        REQUIRE(err2.find(text("bobox: bobox_check_heap(): heap underflow before the start of %p (size %zu): byte 1 before it overwritten",
                               p, s.size)) != std::string::npos);
        a_free(p);
    }
}

TEST_CASE("checked mode: bobox_check_heap reports a write into an object waiting in the quarantine", "[.checked]") {
    REQUIRE(checked_mode());
    for (size_t size : {size_t(24), size_t(4096), size_t(100000)}) {
        char *p = static_cast<char *>(a_malloc(size));
        memset(p, 0x11, size);
        a_free(p);
        REQUIRE(check_heap_now() == 1);
        auto [sig, err] = in_child([&] {
            opaque(p)[size / 2] = 0x5a;
            check_heap_now();
        });
        INFO(size << " bytes: " << err);
        REQUIRE(sig == SIGABRT);
        REQUIRE(err.find(text("bobox: write after free: object %p (", p)) != std::string::npos);
        REQUIRE(err.find(text("changed at byte %zu after it was freed", reinterpret_cast<void *>(size / 2))) !=
                std::string::npos);
    }
}

TEST_CASE("checked mode: the registry of live objects follows objects across threads, realloc and fork", "[.checked]") {
    REQUIRE(checked_mode());
    // Objects allocated in some threads, freed or reallocated in others, some left live:
    // no false alarm from the checks, and a freed object is no longer the program's.
    constexpr int kThreads = 4, kEach = 3000;
    std::vector<std::vector<char *>> made(kThreads);
    std::vector<std::thread> ts;
    for (int t = 0; t < kThreads; t++)
        ts.emplace_back([&, t] {
            Rng rng(t + 1);
            for (int i = 0; i < kEach; i++) {
                size_t n = rng.below(4) == 0 ? rng.below(200000) : rng.below(600);
                char *p = static_cast<char *>(a_malloc(n));
                memset(p, t, n);
                made[t].push_back(p);
            }
        });
    for (auto &t : ts) t.join();
    ts.clear();
    for (int t = 0; t < kThreads; t++)
        ts.emplace_back([&, t] {
            auto &mine = made[(t + 1) % kThreads];
            for (size_t i = 0; i < mine.size(); i++) {
                if (i % 3 == 0) {
                    a_free(mine[i]);
                    mine[i] = nullptr;
                } else if (i % 3 == 1) {
                    mine[i] = static_cast<char *>(a_realloc(mine[i], 40 + i % 300));
                    memset(mine[i], 1, 40 + i % 300);
                }
            }
        });
    for (auto &t : ts) t.join();
    REQUIRE(check_heap_now() == 1);
    char *freed = static_cast<char *>(a_malloc(72));
    a_free(freed);
    if (!foreign_allowed()) {
        REQUIRE(a_owns(made[0][1]) == 1);
        REQUIRE(a_owns(freed) == 0); // in the quarantine: not live
    }
    auto [sig, err] = in_child([&] {
        if (check_heap_now() != 1) _exit(3);
        for (auto &v : made)
            for (char *p : v) a_free(p);
        if (check_heap_now() != 1) _exit(3);
    });
    INFO(err);
    REQUIRE(sig == 0);
    for (auto &v : made)
        for (char *p : v) a_free(p);
    REQUIRE(check_heap_now() == 1);
}

namespace {
// Whether the byte at a can be read (write() from it fails with EFAULT otherwise), and
// whether its page is mapped at all (mincore fails with ENOMEM on a hole): memory the
// allocator holds with no access is mapped and unreadable.
bool readable(const void *a) {
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    ssize_t n = write(fds[1], a, 1);
    close(fds[0]);
    close(fds[1]);
    return n == 1;
}
bool mapped(const void *a) {
    unsigned char v;
    uintptr_t page = reinterpret_cast<uintptr_t>(a) & ~(uintptr_t(page_size()) - 1);
    return mincore(reinterpret_cast<void *>(page), 1, &v) == 0;
}
} // namespace

TEST_CASE("checked mode: a freed large object has no access while it waits in the quarantine", "[.checked]") {
    REQUIRE(checked_mode());
    for (const Shape &s : {Shape{"large", 600 << 10, 0}, Shape{"large, 3 MB", 3 << 20, 0},
                           Shape{"aligned large", 5000, 65536}}) {
        char *p = make(s);
        REQUIRE(p != nullptr);
        memset(p, 0x11, s.size);
        a_free(p);
        INFO(s.what);
        REQUIRE(mapped(p));
        REQUIRE_FALSE(readable(p));
        REQUIRE_FALSE(readable(p + s.size - 1));
        auto [sig, err] = in_child([&] { opaque(p)[s.size / 2] = 0x5a; });
        REQUIRE(sig == SIGSEGV);
        // A second free, realloc or malloc_usable_size is told apart without reading it.
        std::string parked = text("double free %p (the object is in the quarantine)", p);
        auto [sig2, err2] = in_child([&] { a_free(p); });
        INFO(err2);
        REQUIRE(sig2 == SIGABRT);
        REQUIRE(err2.find("bobox: free(): " + parked) != std::string::npos);
        auto [sig3, err3] = in_child([&] { a_realloc(p, 100); });
        INFO(err3);
        REQUIRE(sig3 == SIGABRT);
        REQUIRE(err3.find("bobox: realloc(): " + parked) != std::string::npos);
        auto [sig4, err4] = in_child([&] { a_usable(p); });
        INFO(err4);
        REQUIRE(sig4 == SIGABRT);
        REQUIRE(err4.find("bobox: malloc_usable_size(): " + parked) != std::string::npos);
        if (!foreign_allowed()) REQUIRE(a_owns(p) == 0);
        REQUIRE(check_heap_now() == 1);
    }
    // Pushed out by later frees, the mappings are opened again: what reuses them can write.
    for (int i = 0; i < 1100; i++) a_free(a_malloc(16));
    for (size_t size : {size_t(600 << 10), size_t(3) << 20, size_t(700 << 10)}) {
        char *q = static_cast<char *>(a_malloc(size));
        memset(q, 0x22, size);
        a_free(q);
    }
    REQUIRE(check_heap_now() == 1);
}

TEST_CASE("checked mode: a large object is followed by 1 MB with no access", "[.checked]") {
    REQUIRE(checked_mode());
    const size_t mb = size_t(1) << 20, page = page_size();
    for (const Shape &s : {Shape{"large", 600 << 10, 0}, Shape{"large, 3 MB", 3 << 20, 0},
                           Shape{"aligned large", 5000, 65536}, Shape{"page-aligned large", 700 << 10, 4096}}) {
        a_malloc_trim(0); // no cached mapping: a fresh one, its size what the object needs
        char *p = make(s);
        REQUIRE(p != nullptr);
        memset(p, 0x5a, s.size);
        INFO(s.what);
        // Up to 1 MB past the end, a byte is canary (caught by the check) or has no access
        // (mapped by the allocator: not a hole that happened to follow).
        for (size_t at : {s.size + 2 * page, s.size + mb / 2, s.size + mb}) {
            INFO("byte " << at);
            if (readable(p + at)) {
                auto [sig, err] = in_child([&] {
                    opaque(p)[at] = 0x5a;
                    check_heap_now();
                });
                INFO(err);
                REQUIRE(sig == SIGABRT);
                REQUIRE(err.find(text("heap overflow past the end of %p", p)) != std::string::npos);
            } else {
                REQUIRE(mapped(p + at));
                auto [sig, err] = in_child([&] { opaque(p)[at] = 0x5a; });
                REQUIRE(sig == SIGSEGV);
            }
        }
        a_free(p);
    }
}

TEST_CASE("checked mode: malloc(0) returns an address of its own with no access, which free accepts", "[.checked]") {
    REQUIRE(checked_mode());
    char *p = static_cast<char *>(a_malloc(0));
    char *q = static_cast<char *>(a_malloc(0));
    char *c = static_cast<char *>(a_calloc(0, 8));
    char *a = static_cast<char *>(a_aligned_alloc(64, 0));
    void *m = nullptr;
    REQUIRE(a_posix_memalign(&m, 4096, 0) == 0);
    REQUIRE(p != nullptr);
    REQUIRE(q != nullptr);
    REQUIRE(c != nullptr);
    REQUIRE(aligned_to(a, 64));
    REQUIRE(aligned_to(m, 4096));
    std::vector<void *> all = {p, q, c, a, m};
    std::sort(all.begin(), all.end());
    REQUIRE(std::adjacent_find(all.begin(), all.end()) == all.end());
    for (void *z : all) {
        REQUIRE(mapped(z));
        REQUIRE_FALSE(readable(z));
        REQUIRE(a_usable(z) == 0);
        if (!foreign_allowed()) REQUIRE(a_owns(z) == 1);
    }
    auto [sig, err] = in_child([&] { (void)*static_cast<volatile char *>(opaque(p)); });
    REQUIRE(sig == SIGSEGV);
    auto [sig2, err2] = in_child([&] { *static_cast<volatile char *>(opaque(c)) = 1; });
    REQUIRE(sig2 == SIGSEGV);
    REQUIRE(check_heap_now() == 1);

    // realloc from 0 bytes moves into an ordinary object; free takes each back once.
    char *r = static_cast<char *>(a_realloc(q, 10));
    REQUIRE(r != q);
    memset(r, 7, 10);
    a_free(r);
    a_free(p);
    a_free(c);
    a_free(a);
    a_free(m);
    if (!foreign_allowed()) REQUIRE(a_owns(p) == 0);
    auto [sig3, err3] = in_child([&] { a_free(p); });
    INFO(err3);
    REQUIRE(sig3 == SIGABRT);
    REQUIRE(err3.find(text("bobox: free(): double free %p", p)) != std::string::npos);
    char *live = static_cast<char *>(a_malloc(0));
    auto [sig4, err4] = in_child([&] { a_free(live + 1); });
    INFO(err4);
    REQUIRE(sig4 == SIGABRT);
    REQUIRE(err4.find(text("bobox: free(): invalid pointer %p", live + 1)) != std::string::npos);
    a_free_sized(live, 0);

    // Never handed out twice, also from several threads at once.
    std::vector<std::vector<void *>> got(4);
    std::vector<std::thread> ts;
    for (int t = 0; t < 4; t++)
        ts.emplace_back([&, t] {
            for (int i = 0; i < 5000; i++) {
                got[t].push_back(a_malloc(0));
                if (i % 2) a_free(got[t].back());
            }
        });
    for (auto &t : ts) t.join();
    std::vector<void *> seen;
    for (auto &v : got) seen.insert(seen.end(), v.begin(), v.end());
    std::sort(seen.begin(), seen.end());
    REQUIRE(std::adjacent_find(seen.begin(), seen.end()) == seen.end());
    for (auto &v : got)
        for (size_t i = 0; i < v.size(); i += 2) a_free(v[i]);
    REQUIRE(check_heap_now() == 1);
#ifndef API_PREFIXED
    if (foreign_allowed()) return;
    // The form is kept for a zero-size object too.
    void *n = opaque(::operator new(0));
    REQUIRE_FALSE(readable(n));
    auto [sig5, err5] = in_child([&] { ::operator delete[](n); });
    INFO(err5);
    REQUIRE(sig5 == SIGABRT);
    REQUIRE(err5.find(text("operator delete[](): %p was allocated by new, freed by operator delete[]()", n)) !=
            std::string::npos);
    ::operator delete(n);
    void *na = opaque(::operator new[](0));
    ::operator delete[](na);
#endif
}

TEST_CASE("checked mode: new memory holds 0xbe, freed memory 0xdf, and a write of zero after free is caught", "[.checked]") {
    REQUIRE(checked_mode());
    // The fills are patterns, not zeros (docs/hardening.md): a zero written after free (a
    // pointer or a count cleared in a freed object) changes the fill and is reported.
    for (size_t size : {size_t(24), size_t(4096), size_t(100000), size_t(3) << 20}) {
        INFO(size << " bytes");
        unsigned char *p = static_cast<unsigned char *>(a_malloc(size));
        size_t odd = 0;
        for (size_t i = 0; i < size; i++) odd += p[i] != 0xbe;
        REQUIRE(odd == 0);
        unsigned char *z = static_cast<unsigned char *>(a_calloc(1, size));
        REQUIRE(first_nonzero(z, size) == SIZE_MAX);
        a_free(z);
        memset(p, 0x11, size);
        a_free(p);
        if (size > kMediumMax) continue; // large: no access while parked (its own case)
        for (size_t i = 0; i < size; i++) odd += p[i] != 0xdf;
        REQUIRE(odd == 0);
        auto [sig, err] = in_child([&] {
            memset(opaque(p) + size / 2, 0, 8);
            check_heap_now();
        });
        INFO(err);
        REQUIRE(sig == SIGABRT);
        REQUIRE(err.find(text("bobox: write after free: object %p (", p)) != std::string::npos);
    }
}

TEST_CASE("checked mode: the quarantine gives its objects back before malloc runs out of memory", "[.checked]") {
    REQUIRE(checked_mode());
    // Under an address-space limit, fill memory with 1 MB objects, free 24 of them (they wait
    // in the quarantine, which holds up to 32 MB) and ask for 8 MB: it fits only once the
    // quarantine has let them go.
    auto [sig, err] = in_child([&] {
        // A finite limit first, then malloc_trim: the allocator gives back the address space it
        // reserved and does not use, and the size read below is what the process really uses.
        struct rlimit lim = {RLIM_INFINITY - 1, RLIM_INFINITY - 1};
        setrlimit(RLIMIT_AS, &lim);
        a_malloc_trim(0);
        long vm_kb = 0;
        if (FILE *f = fopen("/proc/self/status", "r")) {
            char line[256];
            while (fgets(line, sizeof line, f))
                if (sscanf(line, "VmSize: %ld kB", &vm_kb) == 1) break;
            fclose(f);
        }
        lim.rlim_cur = lim.rlim_max = (rlim_t(vm_kb) << 10) + (rlim_t(256) << 20);
        auto stop = [](const char *why) {
            fprintf(stderr, "%s\n", why);
            abort();
        };
        if (vm_kb == 0 || setrlimit(RLIMIT_AS, &lim) != 0) stop("no limit set");
        std::vector<void *> held;
        held.reserve(1000);
        for (void *p; held.size() < 1000 && (p = a_malloc(1 << 20)) != nullptr;) held.push_back(p);
        if (held.size() < 40 || held.size() == 1000) stop("the limit was not reached");
        for (int i = 0; i < 24; i++) {
            a_free(held.back());
            held.pop_back();
        }
        if (!a_malloc(8 << 20)) stop("8 MB: NULL with 24 MB in the quarantine");
    });
    INFO(err);
    REQUIRE(sig == 0);
}
