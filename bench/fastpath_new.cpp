// Hot-path probe for scripts/bench/fastpath.sh, C++ form: the same as fastpath.c with
// `::operator new(size)` and the sized `::operator delete(p, size)` that compilers emit for
// `delete obj` since C++14. Usage: fastpath_new SIZE PAIRS.
#include <cstdio>
#include <cstdlib>
#include <new>

__attribute__((noinline)) void pair(size_t sz)
{
    unsigned char *p = static_cast<unsigned char *>(::operator new(sz));
    *(volatile unsigned char *)p = 1;
    ::operator delete(p, sz);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        std::fprintf(stderr, "usage: %s SIZE PAIRS\n", argv[0]);
        return 2;
    }
    size_t sz = static_cast<size_t>(std::atol(argv[1]));
    long pairs = std::atol(argv[2]);
    enum { LIVE = 64 }; // as in fastpath.c: the page never empties
    static void *live[LIVE];
    for (int i = 0; i < LIVE; i++)
        live[i] = ::operator new(sz);
    for (long i = 0; i < pairs; i++)
        pair(sz);
    for (int i = 0; i < LIVE; i++)
        ::operator delete(live[i], sz);
    std::printf("RESULT workload=fastpath_new size=%zu pairs=%ld\n", sz, pairs);
    return 0;
}
