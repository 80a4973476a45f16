// hard_messages KIND: one bad heap operation (or, for "fills", a look at checked mode's fill
// patterns), for test/system/hardening_messages.sh, which matches the allocator's message on
// stderr against the README's text. Before the bad operation it prints the object's address
// and size on stdout, so that the script can expect the exact line.
//   double-free          free twice (default mode's message)
//   quarantine-double-free  free twice while the object waits in the quarantine (checked mode)
//   underflow K          write the byte K before an object, then free it (checked mode)
//   delete-array-of-new  delete[] of memory from new (checked mode)
//   fills                new memory holds 0xbe, calloc's zero, freed memory 0xdf (checked mode)
#include <csetjmp>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

// The bad operations are the point of this program.
#pragma GCC diagnostic ignored "-Wuse-after-free"
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#pragma GCC diagnostic ignored "-Warray-bounds"

namespace {

// Hides where a pointer came from, so that the compiler neither warns about nor removes the
// operation under test.
template <class T> T *launder(T *p) {
    asm volatile("" : "+r"(p)::"memory");
    return p;
}

void announce(const void *p, size_t size) {
    std::printf("object %p size %zu\n", p, size);
    std::fflush(stdout);
}

// Every byte of n at p is `byte`: the first that is not, or -1.
long first_not(const unsigned char *p, size_t n, unsigned char byte) {
    for (size_t i = 0; i < n; i++)
        if (launder(p)[i] != byte) return (long)i;
    return -1;
}

sigjmp_buf fault_jump;
void on_fault(int) { siglongjmp(fault_jump, 1); }
// Whether reading the byte at p faults.
bool read_faults(const unsigned char *p) {
    struct sigaction sa = {}, old_segv, old_bus;
    sa.sa_handler = on_fault;
    sigaction(SIGSEGV, &sa, &old_segv);
    sigaction(SIGBUS, &sa, &old_bus);
    bool faulted = sigsetjmp(fault_jump, 1) != 0;
    if (!faulted) (void)*static_cast<const volatile unsigned char *>(launder(p));
    sigaction(SIGSEGV, &old_segv, nullptr);
    sigaction(SIGBUS, &old_bus, nullptr);
    return faulted;
}

int fills() {
    const size_t sizes[] = {24, 4096, 300000, 1 << 20};
    for (size_t n : sizes) {
        auto *p = launder(static_cast<unsigned char *>(malloc(n)));
        auto *z = launder(static_cast<unsigned char *>(calloc(1, n)));
        if (!p || !z) return 2;
        long fresh = first_not(p, n, 0xbe), zero = first_not(z, n, 0);
        memset(p, 0x11, n);
        free(p);
        free(z);
        // Freed memory waits in the quarantine: a large object with no access, the others
        // mapped, their fill readable.
        bool no_access = read_faults(p);
        long freed = no_access ? -1 : first_not(p, n, 0xdf);
        std::printf("size %zu: new %s, calloc %s, freed %s\n", n, fresh < 0 ? "0xbe" : "not 0xbe",
                    zero < 0 ? "zero" : "not zero", no_access ? "no access" : freed < 0 ? "0xdf" : "not 0xdf");
        if (fresh >= 0) std::printf("  new memory differs at byte %ld\n", fresh);
        if (freed >= 0) std::printf("  freed memory differs at byte %ld\n", freed);
    }
    return 0;
}

} // namespace

int main(int argc, char **argv) {
    std::string kind = argc > 1 ? argv[1] : "";
    if (kind == "double-free" || kind == "quarantine-double-free") {
        char *p = launder(static_cast<char *>(malloc(24)));
        announce(p, 24);
        free(p);
        free(launder(p));
    } else if (kind == "underflow" && argc > 2) {
        long k = atol(argv[2]);
        char *p = launder(static_cast<char *>(malloc(24)));
        announce(p, 24);
        launder(p)[-k] = 0x5a;
        free(p);
    } else if (kind == "delete-array-of-new") {
        int *q = launder(new int(7));
        announce(q, sizeof(int));
        delete[] launder(q);
    } else if (kind == "fills") {
        return fills();
    } else {
        std::fprintf(stderr, "usage: hard_messages double-free|quarantine-double-free|underflow K|delete-array-of-new|fills\n");
        return 2;
    }
    return 0; // the bad operation went unnoticed
}
