// alloc_cxx_replace: a program that replaces only `operator new(size_t)` and
// `operator delete(void *)`, as code written before C++14 does, with memory of its own.
//
// The standard's rule: every other form (new[], nothrow, sized and array delete) calls these
// two, so each of this program's objects must come back to its own delete. A preloaded
// allocator that answered those other forms itself would hand this delete memory it never
// gave out, or take the arena's memory into free(): either aborts here or in the allocator.
// stdout (the counts) must be identical with and without LD_PRELOAD=libbobox.so.
// stderr reports whether bobox is the allocator answering malloc ("bobox: active"/"absent").
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <new>
#include <string>
#include <vector>

namespace {
// A bump arena with a header before each object: no other allocator's memory looks like it.
constexpr size_t kArena = 8 << 20;
constexpr uint64_t kMagic = 0x6f776e6172656e61ull;
alignas(16) unsigned char arena[kArena];
size_t arena_used;
size_t news, deletes;

bool in_arena(const void *p) {
    auto a = reinterpret_cast<uintptr_t>(p), base = reinterpret_cast<uintptr_t>(arena);
    return a >= base + 16 && a < base + kArena;
}
[[noreturn]] void die(const char *what, const void *p) {
    std::fprintf(stderr, "alloc_cxx_replace: %s %p\n", what, p);
    std::abort();
}
} // namespace

#pragma GCC diagnostic ignored "-Wsized-deallocation" // the very point: no sized delete here
void *operator new(size_t size) {
    size_t room = (size + 15) / 16 * 16 + 16;
    if (arena_used + room > kArena) throw std::bad_alloc();
    unsigned char *h = arena + arena_used;
    arena_used += room;
    std::memcpy(h, &kMagic, 8);
    news++;
    return h + 16;
}

void operator delete(void *p) noexcept {
    if (!p) return;
    uint64_t magic;
    if (!in_arena(p) || (std::memcpy(&magic, static_cast<unsigned char *>(p) - 16, 8), magic != kMagic))
        die("operator delete: not from this program's operator new:", p);
    std::memset(static_cast<unsigned char *>(p) - 16, 0, 8); // a second delete is caught too
    deletes++;
}

namespace {
struct Plain {
    long a, b, c;
};
struct WithDtor { // new[] of it stores a count: sized array delete
    std::string s = "x";
    ~WithDtor() { s.clear(); }
};
struct alignas(256) Over256 { // aligned forms: not replaced, so not counted
    char data[300];
};

template <class T> T *check_ours(T *p, const char *form) {
    if (!in_arena(p)) die(form, p);
    return p;
}
} // namespace

int main() {
    size_t news0 = news, deletes0 = deletes; // the C++ runtime's own start-up objects stay
    for (int round = 0; round < 100; round++) { // 9 objects from the program's new a round
        delete check_ours(new Plain{1, 2, 3}, "new:");                       // sized delete
        delete[] check_ours(new int[100], "new[]:");                         // array delete
        WithDtor *w = new WithDtor[5];                                        // new[] + count
        delete[] w;                                                           // sized array delete
        delete check_ours(new (std::nothrow) Plain{}, "new nothrow:");        // nothrow new
        delete[] check_ours(new (std::nothrow) int[7], "new[] nothrow:");
        ::operator delete(check_ours(::operator new(40), "operator new:"), std::nothrow);
        ::operator delete[](check_ours(::operator new[](40), "operator new[]:"), std::nothrow);
        std::vector<long> v(1000 + round, 7);                                 // std::allocator
        check_ours(v.data(), "std::vector:");
        std::string s(200, 'y');
        check_ours(s.data(), "std::string:");
        Over256 *o = new Over256;
        if (reinterpret_cast<uintptr_t>(o) % 256) die("aligned new: misaligned", o);
        delete o;
    }
    news -= news0;
    deletes -= deletes0;
    std::printf("news %zu deletes %zu\n", news, deletes);
    std::fflush(stdout);
    if (news != deletes || news < 900) die("unbalanced counts", nullptr);

    void *m = std::malloc(100); // malloc itself is not replaced: bobox answers under the preload
    using owns_fn = int (*)(const void *);
    auto owns = reinterpret_cast<owns_fn>(dlsym(RTLD_DEFAULT, "bobox_owns"));
    std::fprintf(stderr, "bobox: %s\n", owns && owns(m) ? "active" : "absent");
    std::free(m);
    return 0;
}
