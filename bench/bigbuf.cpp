// Random large buffers: 20 live buffers of random sizes from 5 to 25 MB; each step replaces
// a random one with a new buffer made by std::make_unique<char[]>(n), which value-initialises
// (zero-fills) all n bytes, then writes a few bytes of it. Sizes never repeat exactly, so a
// cache of large mappings only helps if it reuses them across sizes; otherwise every byte is
// faulted in again. Each buffer's zero fill is checked at a few places before it is written.
// Usage: bigbuf [threads(ignored, 1)] [scale]   (scale 1 = 2,000 replacements)
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>

namespace {

constexpr int kLive = 20;
constexpr size_t kMin = size_t(5) << 20, kSpan = size_t(20) << 20;

uint64_t next(uint64_t &s)
{
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return s * 0x2545F4914F6CDD1DULL;
}

struct Buffer {
    std::unique_ptr<char[]> data;
    size_t size = 0;
};

// A fresh buffer must read as zero; then mark it as a program would start writing it.
bool make(Buffer &b, uint64_t &rs)
{
    size_t n = kMin + next(rs) % (kSpan + 1);
    b.data = std::make_unique<char[]>(n);
    b.size = n;
    char *p = b.data.get();
    bool ok = p[0] == 0 && p[n / 2] == 0 && p[n - 1] == 0;
    p[0] = p[n / 2] = p[n - 1] = 1;
    return ok;
}

}  // namespace

int main(int argc, char **argv)
{
    double scale = argc > 2 ? std::atof(argv[2]) : 1.0;
    if (!(scale > 0)) {
        std::fprintf(stderr, "usage: %s [threads] [scale>0]\n", argv[0]);
        return 2;
    }
    long steps = long(2000 * scale);
    if (steps < 40)
        steps = 40;
    uint64_t rs = 0x9E3779B97F4A7C15ULL * 77 | 1;
    long bad = 0;
    auto t0 = std::chrono::steady_clock::now();
    Buffer live[kLive];
    for (auto &b : live)
        bad += !make(b, rs);
    for (long i = 0; i < steps; i++) {
        Buffer &b = live[next(rs) % kLive];
        bad += b.data[0] != 1 || b.data[b.size - 1] != 1;
        bad += !make(b, rs);
    }
    for (auto &b : live)
        b.data.reset();
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (bad) {
        std::fprintf(stderr, "bigbuf: %ld buffers were not zero-filled or lost their contents\n", bad);
        return 1;
    }
    std::printf("RESULT workload=bigbuf threads=1 scale=%g secs=%.6f throughput=%.6g unit=buffers/s ops=%ld\n",
                scale, secs, secs > 0 ? double(steps) / secs : 0.0, steps);
    return 0;
}
