// cxx_oom: whose operator new answers, and what it does out of memory. Prints the object
// that defines _Znwm, then the new-handler loop and std::bad_alloc of a throwing new, and
// NULL from a nothrow new[]. Built against libc++ by test/system/alloc_libcxx.sh (the same
// behaviour with libstdc++ is in the API suite).
#include <cstdio>
#include <cstring>
#include <dlfcn.h>
#include <new>

static int handler_calls;
static void handler() {
    if (++handler_calls == 2) std::set_new_handler(nullptr);
}

int main() {
    Dl_info info{};
    void *f = dlsym(RTLD_DEFAULT, "_Znwm");
    const char *from = f && dladdr(f, &info) && info.dli_fname ? std::strrchr(info.dli_fname, '/') : nullptr;
    std::fprintf(stderr, "_Znwm from %s\n", from ? from + 1 : "?");
    std::set_new_handler(handler);
    try {
        void *p = ::operator new(size_t(1) << 62);
        std::printf("got %p\n", p);
    } catch (const std::bad_alloc &) {
        std::printf("bad_alloc after %d new-handler calls\n", handler_calls);
    }
    void *q = ::operator new[](size_t(1) << 62, std::nothrow);
    std::printf("nothrow new[]: %s\n", q ? "memory" : "NULL");
    int *r = new int[1000];
    r[999] = 7;
    std::printf("new[] afterwards: %d\n", r[999]);
    delete[] r;
    return 0;
}
