// The allocator under test is really the one answering: bobox_owns on fresh pointers, the
// __libc_* aliases, and (preload build) every form of C++ new/delete.
#include <catch2/catch.hpp>

#include <memory>
#include <new>
#include <string>
#include <vector>

#include "api.h"

using namespace api;

TEST_CASE("the allocator under test is active (bobox_owns on fresh pointers)", "[api][preload]") {
#ifdef API_PREFIXED
    void *p = bobox_malloc(100);
    REQUIRE(bobox_owns(p) == 1);
    bobox_free(p);
#else
    owns_fn owns = owns_ptr();
#ifdef API_ALLOW_FOREIGN
    if (!owns) { WARN("scratch glibc build: bobox_owns not found, preload checks skipped"); return; }
#endif
    // Without LD_PRELOAD=build/libbobox.so this fails: the test would only exercise glibc.
    REQUIRE(owns != nullptr);
    void *p = malloc(100);
    REQUIRE(owns(p) == 1);
    void *c = calloc(10, 10);
    REQUIRE(owns(c) == 1);
    void *r = realloc(nullptr, 50000);
    REQUIRE(owns(r) == 1);
    void *a = aligned_alloc(4096, 100);
    REQUIRE(owns(a) == 1);
    void *v = valloc(100);
    REQUIRE(owns(v) == 1);
    void *l = malloc(2 * MB);
    REQUIRE(owns(l) == 1);
    a_free(p); a_free(c); a_free(r); a_free(a); a_free(v); a_free(l);
    REQUIRE(owns(p) == 0);
    // libc-internal allocations (strdup) come from us too
    char *d = strdup("hello, bobox");
    REQUIRE(owns(d) == 1);
    a_free(d);
#endif
}

#ifndef API_PREFIXED
TEST_CASE("__libc_* aliases are ours in the preload", "[api][preload]") {
    owns_fn owns = owns_ptr();
#ifdef API_ALLOW_FOREIGN
    if (!owns) { WARN("scratch glibc build: preload checks skipped"); return; }
#endif
    REQUIRE(owns != nullptr);
    // dlopen with RTLD_NOLOAD finds the preloaded library itself, so the aliases are looked up
    // in it and not in libc.
    void *h = dlopen("libbobox.so", RTLD_NOW | RTLD_NOLOAD);
    REQUIRE(h != nullptr);
    auto lm = reinterpret_cast<void *(*)(size_t)>(dlsym(h, "__libc_malloc"));
    auto lf = reinterpret_cast<void (*)(void *)>(dlsym(h, "__libc_free"));
    auto lc = reinterpret_cast<void *(*)(size_t, size_t)>(dlsym(h, "__libc_calloc"));
    auto lr = reinterpret_cast<void *(*)(void *, size_t)>(dlsym(h, "__libc_realloc"));
    auto lma = reinterpret_cast<void *(*)(size_t, size_t)>(dlsym(h, "__libc_memalign"));
    REQUIRE(lm != nullptr);
    REQUIRE(lf != nullptr);
    REQUIRE(lc != nullptr);
    REQUIRE(lr != nullptr);
    REQUIRE(lma != nullptr);
    void *p = lm(300);
    REQUIRE(owns(p) == 1);
    fill(p, 300, 1);
    p = lr(p, 100000);
    REQUIRE(owns(p) == 1);
    REQUIRE(check(p, 300, 1) == SIZE_MAX);
    void *c = lc(100, 100);
    REQUIRE(owns(c) == 1);
    REQUIRE(first_nonzero(c, 10000) == SIZE_MAX);
    void *m = lma(8192, 1000);
    REQUIRE(owns(m) == 1);
    REQUIRE(aligned_to(m, 8192));
    lf(p);
    lf(c);
    a_free(m);   // the standard free takes them as well
    REQUIRE(owns(p) == 0);
    REQUIRE(owns(m) == 0);
    dlclose(h);
}

namespace {
struct alignas(256) Over256 {
    char data[300];
};
struct alignas(4096) OverPage {
    char data[5000];
};
struct Plain {
    long a, b, c;
};
} // namespace

TEST_CASE("C++ new/delete in every form end up in our allocator", "[api][preload][cxx]") {
    owns_fn owns = owns_ptr();
#ifdef API_ALLOW_FOREIGN
    if (!owns) { WARN("scratch glibc build: preload checks skipped"); return; }
#endif
    REQUIRE(owns != nullptr);
    auto is_ours = [&](const void *p) { return owns(opaque(p)); };

    // new / delete
    Plain *a = new Plain{1, 2, 3};
    REQUIRE(is_ours(a) == 1);
    delete a;
    // new[] / delete[] (also with a non-trivial destructor: the cookie shifts the pointer,
    // so check the allocation start through the operator directly)
    int *arr = new int[1000];
    REQUIRE(is_ours(arr) == 1);
    delete[] arr;
    std::string *strs = new std::string[4];
    strs[0] = std::string(100, 'x');
    REQUIRE(is_ours(strs[0].data()) == 1);
    delete[] strs;
    void *raw = ::operator new[](12345);
    REQUIRE(is_ours(raw) == 1);
    ::operator delete[](raw);
    // sized delete
    void *s1 = ::operator new(777);
    REQUIRE(is_ours(s1) == 1);
    ::operator delete(opaque(s1), size_t(777));
    REQUIRE(is_ours(s1) == 0);
    void *s2 = ::operator new[](100000);
    REQUIRE(is_ours(s2) == 1);
    ::operator delete[](s2, size_t(100000));
    // aligned new: alignas types and std::align_val_t
    Over256 *o = new Over256;
    REQUIRE(aligned_to(o, 256));
    REQUIRE(is_ours(o) == 1);
    delete o;
    Over256 *oa = new Over256[7];
    REQUIRE(aligned_to(oa, 256));
    delete[] oa;
    OverPage *op = new OverPage;
    REQUIRE(aligned_to(op, 4096));
    REQUIRE(is_ours(op) == 1);
    delete op;
    for (size_t al : {size_t(32), size_t(256), size_t(4096), size_t(65536), size_t(1) << 21}) {
        INFO("align_val_t " << al);
        void *p = ::operator new(1000, std::align_val_t(al));
        REQUIRE(aligned_to(p, al));
        REQUIRE(is_ours(p) == 1);
        ::operator delete(p, std::align_val_t(al));
        void *q = ::operator new[](300000, std::align_val_t(al));
        REQUIRE(aligned_to(q, al));
        REQUIRE(is_ours(q) == 1);
        ::operator delete[](q, size_t(300000), std::align_val_t(al));   // sized + aligned
        void *r = ::operator new(50, std::align_val_t(al), std::nothrow);
        REQUIRE(r != nullptr);
        REQUIRE(aligned_to(r, al));
        REQUIRE(is_ours(r) == 1);
        ::operator delete(r, std::align_val_t(al), std::nothrow);
    }
    // nothrow
    Plain *n1 = new (std::nothrow) Plain{};
    REQUIRE(n1 != nullptr);
    REQUIRE(is_ours(n1) == 1);
    delete n1;
    int *n2 = new (std::nothrow) int[5000];
    REQUIRE(is_ours(n2) == 1);
    delete[] n2;
    void *n3 = ::operator new(100, std::nothrow);
    REQUIRE(is_ours(n3) == 1);
    ::operator delete(n3, std::nothrow);
    // nothrow new of an impossible size returns NULL, throwing new throws bad_alloc
    const size_t huge = opaque(size_t(PTRDIFF_MAX));
    void *big = ::operator new(huge, std::nothrow);
    REQUIRE(big == nullptr);
    REQUIRE_THROWS_AS(::operator new(huge), std::bad_alloc);
    REQUIRE_THROWS_AS(::operator new(huge, std::align_val_t(64)), std::bad_alloc);
    // standard containers and smart pointers
    std::vector<long> vec(100000, 7);
    REQUIRE(is_ours(vec.data()) == 1);
    auto sp = std::make_shared<std::string>(1000, 'y');
    REQUIRE(is_ours(sp->data()) == 1);
    auto up = std::make_unique<Over256>();
    REQUIRE(is_ours(up.get()) == 1);
    REQUIRE(aligned_to(up.get(), 256));
}

// libstdc++'s operators would only wrap malloc and free (20 more instructions a pair): every
// form must be bobox's own definition, found before libstdc++'s.
TEST_CASE("C++ operators new and delete are the allocator's own", "[api][preload][cxx]") {
    if (foreign_allowed()) { WARN("scratch glibc build: preload checks skipped"); return; }
    const char *names[] = {
        "_Znwm", "_Znam", "_ZnwmRKSt9nothrow_t", "_ZnamRKSt9nothrow_t", "_ZnwmSt11align_val_t",
        "_ZnamSt11align_val_t", "_ZnwmSt11align_val_tRKSt9nothrow_t", "_ZnamSt11align_val_tRKSt9nothrow_t",
        "_ZdlPv", "_ZdaPv", "_ZdlPvm", "_ZdaPvm", "_ZdlPvRKSt9nothrow_t", "_ZdaPvRKSt9nothrow_t",
        "_ZdlPvSt11align_val_t", "_ZdaPvSt11align_val_t", "_ZdlPvmSt11align_val_t", "_ZdaPvmSt11align_val_t",
        "_ZdlPvSt11align_val_tRKSt9nothrow_t", "_ZdaPvSt11align_val_tRKSt9nothrow_t"};
    for (const char *name : names) {
        INFO(name);
        void *f = dlsym(RTLD_DEFAULT, name);
        REQUIRE(f != nullptr);
        Dl_info info{};
        REQUIRE(dladdr(f, &info) != 0);
        REQUIRE(info.dli_fname != nullptr);
        REQUIRE(std::string(info.dli_fname).find("libbobox.so") != std::string::npos);
    }
    // The allocating forms hand out the allocator's memory, usable at once.
    void *p = ::operator new(opaque(size_t(24)));
    REQUIRE(owns_ptr()(p) == 1);
    fill(p, 24, 5);
    REQUIRE(check(p, 24, 5) == SIZE_MAX);
    ::operator delete(opaque(p), size_t(24));
    REQUIRE(owns_ptr()(opaque(p)) == 0);
}

namespace {
std::atomic<int> handler_calls{0};
// Gives up on its third call, as a handler with nothing left to release does.
void counting_handler() {
    if (++handler_calls == 3) std::set_new_handler(nullptr);
}
} // namespace

// Out of memory, new must call the program's new-handler until it gives up, then throw
// std::bad_alloc (nothrow forms: return NULL), as the C++ runtime's own operators do.
TEST_CASE("C++ new out of memory: new-handler loop, then bad_alloc or NULL", "[api][preload][cxx]") {
    const size_t huge = opaque(size_t(PTRDIFF_MAX));
    struct Form {
        const char *name;
        bool nothrow;
        void *(*call)(size_t);
        void (*release)(void *);
    };
    const Form forms[] = {
        {"new", false, [](size_t n) { return ::operator new(n); },
         [](void *p) { ::operator delete(p); }},
        {"new[]", false, [](size_t n) { return ::operator new[](n); },
         [](void *p) { ::operator delete[](p); }},
        {"new aligned", false, [](size_t n) { return ::operator new(n, std::align_val_t(64)); },
         [](void *p) { ::operator delete(p, std::align_val_t(64)); }},
        {"new[] aligned", false, [](size_t n) { return ::operator new[](n, std::align_val_t(4096)); },
         [](void *p) { ::operator delete[](p, std::align_val_t(4096)); }},
        {"new nothrow", true, [](size_t n) { return ::operator new(n, std::nothrow); },
         [](void *p) { ::operator delete(p, std::nothrow); }},
        {"new[] nothrow", true, [](size_t n) { return ::operator new[](n, std::nothrow); },
         [](void *p) { ::operator delete[](p, std::nothrow); }},
        {"new aligned nothrow", true, [](size_t n) { return ::operator new(n, std::align_val_t(64), std::nothrow); },
         [](void *p) { ::operator delete(p, std::align_val_t(64), std::nothrow); }},
        {"new[] aligned nothrow", true,
         [](size_t n) { return ::operator new[](n, std::align_val_t(256), std::nothrow); },
         [](void *p) { ::operator delete[](p, std::align_val_t(256), std::nothrow); }},
    };
    for (const Form &f : forms) {
        INFO(f.name);
        handler_calls = 0;
        std::set_new_handler(counting_handler);
        if (f.nothrow) {
            REQUIRE(f.call(huge) == nullptr);
        } else {
            REQUIRE_THROWS_AS(f.call(huge), std::bad_alloc);
        }
        REQUIRE(handler_calls == 3);
        REQUIRE(std::get_new_handler() == nullptr);
        // Without a handler: straight to bad_alloc or NULL.
        if (f.nothrow) {
            REQUIRE(f.call(huge) == nullptr);
        } else {
            REQUIRE_THROWS_AS(f.call(huge), std::bad_alloc);
        }
        REQUIRE(handler_calls == 3);
        // And the allocator still works afterwards.
        void *p = f.call(100);
        REQUIRE(p != nullptr);
        fill(p, 100, 9);
        REQUIRE(check(p, 100, 9) == SIZE_MAX);
        f.release(p);
    }
}
#endif
