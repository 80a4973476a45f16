// fuzz_ops.cpp - libFuzzer harness: input bytes -> a sequence of allocator operations on the
// static library's bobox_* functions, executed by four worker threads in lock-step.
//
// Each operation names the worker that runs it. The fuzzer thread hands each run of
// consecutive operations of one worker to that worker and waits for it to finish, so an input
// always executes the same way (reproducible crashes) while objects still move between
// threads: they live in a shared table of 64 slots, and any worker may free, resize or check
// any slot. A RESTART operation ends a worker and starts a new one (its heap is abandoned and
// adopted), TRIM calls malloc_trim.
//
// Checked for every object: the pattern written over it (whole object up to 64 KB; head,
// tail and 8 bytes per page above) before free/realloc and on CHECK; realloc keeps the prefix;
// calloc memory is zero; alignment; malloc_usable_size >= request and stable; bobox_owns is 1
// while live and 0 once freed; [p, p + usable) overlaps no other live object. Invalid
// alignments and impossible sizes must fail with the documented error. bobox_check_heap() runs
// in the acting worker every 16 operations and on CHECK_HEAP, and in every worker at the end,
// when all objects are freed (by workers other than the last one that touched them).
//
// Build and run: make fuzz FUZZ_SECONDS=60 (see docs/hardening-tests.md).
#include <fuzzer/FuzzedDataProvider.h>

#include <cerrno>
#include <condition_variable>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "bobox.h"

namespace {

constexpr int kWorkers = 4;
constexpr int kSlots = 64;
constexpr size_t KB = 1024, MB = 1024 * KB;
constexpr size_t kFullCheck = 64 * KB;

enum OpCode : uint8_t {
    MALLOC, CALLOC, REALLOC, REALLOCARRAY, FREE, FREE_SIZED, POSIX_MEMALIGN, ALIGNED_ALLOC,
    MEMALIGN, VALLOC, PVALLOC, CHECK, CHECK_HEAP, RESTART, TRIM, NUM_OPS
};
const char *const kOpName[] = {"malloc", "calloc", "realloc", "reallocarray", "free", "free_sized",
                               "posix_memalign", "aligned_alloc", "memalign", "valloc", "pvalloc",
                               "check", "check_heap", "restart", "trim"};

struct Op {
    OpCode code;
    uint8_t worker, slot;
    size_t size, size2, align;
};

struct Slot {
    unsigned char *p = nullptr;
    size_t n = 0;      // requested size: the bytes whose pattern is checked
    size_t usable = 0; // malloc_usable_size at allocation
    size_t align = 0;  // asked-for alignment (0: 16)
    uint64_t seed = 0;
};

Slot slots[kSlots];
std::map<uintptr_t, uintptr_t> live; // start -> end (start + usable) of every live object
size_t op_index;
const Op *cur_op;

[[noreturn]] __attribute__((format(printf, 1, 2))) void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "fuzz_ops: operation %zu (%s, worker %d, slot %d): ", op_index,
            cur_op ? kOpName[cur_op->code] : "-", cur_op ? cur_op->worker : -1, cur_op ? cur_op->slot : -1);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}

// ---- patterns --------------------------------------------------------------------------------
// Not coverage-instrumented (the byte loops would dominate the run time and add no signal).
#define NO_COVERAGE __attribute__((no_sanitize("coverage")))
NO_COVERAGE inline unsigned char pat(uint64_t seed, size_t i) {
    uint64_t x = (seed ^ (i >> 3)) * 0x9E3779B97F4A7C15ull;
    return static_cast<unsigned char>((x >> 56) ^ i);
}
// Calls f(offset, len) for the checked regions of an n-byte object: all of it up to 64 KB;
// above, the first and last 16 KB and 8 bytes of every page between.
template <class F> NO_COVERAGE void regions(size_t n, F f) {
    if (n <= kFullCheck) {
        f(0, n);
        return;
    }
    f(0, 16 * KB);
    for (size_t off = 16 * KB; off + 8 < n - 16 * KB; off += 4096) f(off, 8);
    f(n - 16 * KB, 16 * KB);
}
NO_COVERAGE void fill(unsigned char *p, size_t n, uint64_t seed) {
    regions(n, [&](size_t off, size_t len) {
        for (size_t i = off; i < off + len; i++) p[i] = pat(seed, i);
    });
}
// Checks the regions filled for an n-byte object, within its first `limit` bytes (a realloc's
// kept prefix).
NO_COVERAGE void verify(const unsigned char *p, size_t n, uint64_t seed, const char *what, size_t limit = SIZE_MAX) {
    regions(n, [&](size_t off, size_t len) {
        for (size_t i = off; i < off + len && i < limit; i++)
            if (p[i] != pat(seed, i))
                die("%s: object %p (%zu B) corrupt at byte %zu: %#x, expected %#x", what, (void *)p, n, i, p[i],
                    pat(seed, i));
    });
}
NO_COVERAGE void verify_zero(const unsigned char *p, size_t n) {
    regions(n, [&](size_t off, size_t len) {
        for (size_t i = off; i < off + len; i++)
            if (p[i]) die("calloc memory %p not zero at byte %zu of %zu", (void *)p, i, n);
    });
}

// ---- the live-object table --------------------------------------------------------------------
void add_live(Slot &s, unsigned char *p, size_t n, size_t align, uint64_t seed, bool zeroed) {
    if (!p) die("NULL for a valid request of %zu B (alignment %zu)", n, align);
    size_t eff = align < 16 ? 16 : align;
    if (reinterpret_cast<uintptr_t>(p) % eff) die("%p not aligned to %zu", (void *)p, eff);
    size_t u = bobox_malloc_usable_size(p);
    if (u < n) die("usable size %zu < requested %zu", u, n);
    if (bobox_owns(p) != 1) die("bobox_owns(%p) != 1 for a new object", (void *)p);
    auto a = reinterpret_cast<uintptr_t>(p);
    auto it = live.lower_bound(a);
    if (it != live.end() && it->first < a + u)
        die("new object %p+%zu overlaps live object %#lx..%#lx", (void *)p, u, it->first, it->second);
    if (it != live.begin() && std::prev(it)->second > a)
        die("new object %p+%zu overlaps live object %#lx..%#lx", (void *)p, u, std::prev(it)->first,
            std::prev(it)->second);
    live.emplace(a, a + u);
    if (zeroed) verify_zero(p, n);
    s = Slot{p, n, u, align, seed};
    fill(p, n, seed);
}

void check_slot(const Slot &s, const char *what) {
    verify(s.p, s.n, s.seed, what);
    size_t u = bobox_malloc_usable_size(s.p);
    if (u != s.usable) die("%s: usable size of %p changed from %zu to %zu", what, (void *)s.p, s.usable, u);
    if (bobox_owns(s.p) != 1) die("%s: bobox_owns(%p) != 1 for a live object", what, (void *)s.p);
}

void forget(Slot &s) {
    live.erase(reinterpret_cast<uintptr_t>(s.p));
    s = Slot{};
}

// After free: p is no longer an address the allocator handed out, unless it lies inside
// another live object (whose slot may start there).
void check_gone(const void *p) {
    auto a = reinterpret_cast<uintptr_t>(p);
    auto it = live.upper_bound(a);
    if (it != live.begin() && std::prev(it)->second > a) return;
    if (bobox_owns(p) != 0) die("bobox_owns(%p) != 0 after free", p);
}

void release(Slot &s, bool sized) {
    check_slot(s, "before free");
    unsigned char *p = s.p;
    size_t n = s.n;
    forget(s);
    int saved = errno = 1234;
    if (sized) bobox_free_sized(p, n); else bobox_free(p);
    if (errno != saved) die("free changed errno");
    check_gone(p);
}

bool pow2(size_t a) { return a && !(a & (a - 1)); }
// More than the whole user address space (47 bits): must fail with ENOMEM.
bool impossible(size_t n) { return n > (size_t{1} << 47); }

void expect_enomem(void *p, const char *what, size_t n) {
    if (p) die("%s(%zu) succeeded", what, n);
    if (errno != ENOMEM) die("%s(%zu): errno %d, not ENOMEM", what, n, errno);
}

// ---- one operation, run by its worker ------------------------------------------------------------
bool trace = getenv("FUZZ_TRACE") != nullptr; // prints every operation (reproducing a crash)

void run_op(const Op &op) {
    Slot &s = slots[op.slot];
    if (trace)
        fprintf(stderr, "op %zu: worker %d %s slot %d size %zu size2 %zu align %zu (slot holds %p, %zu B)\n", op_index,
                op.worker, kOpName[op.code], op.slot, op.size, op.size2, op.align, (void *)s.p, s.n);
    uint64_t seed = op_index * 0x100000001B3ull + op.slot;
    switch (op.code) {
    case MALLOC:
    case CALLOC:
    case POSIX_MEMALIGN:
    case ALIGNED_ALLOC:
    case MEMALIGN:
    case VALLOC:
    case PVALLOC: {
        if (s.p) release(s, false);
        size_t n = op.size, al = op.align;
        errno = 0;
        unsigned char *p = nullptr;
        switch (op.code) {
        case MALLOC:
            p = static_cast<unsigned char *>(bobox_malloc(n));
            if (impossible(n)) return expect_enomem(p, "malloc", n);
            return add_live(s, p, n, 0, seed, false);
        case CALLOC: {
            size_t count = op.size2 % 64 + 1, total;
            p = static_cast<unsigned char *>(bobox_calloc(count, n));
            if (__builtin_mul_overflow(count, n, &total) || impossible(total)) return expect_enomem(p, "calloc", n);
            return add_live(s, p, total, 0, seed, true);
        }
        case POSIX_MEMALIGN: {
            void *out = reinterpret_cast<void *>(uintptr_t{0x1});
            int rc = bobox_posix_memalign(&out, al, n);
            if (!pow2(al) || al % sizeof(void *)) {
                if (rc != EINVAL) die("posix_memalign(%zu, %zu) returned %d, not EINVAL", al, n, rc);
                if (out != reinterpret_cast<void *>(uintptr_t{0x1})) die("posix_memalign wrote *out on failure");
                return;
            }
            if (impossible(n)) {
                if (rc != ENOMEM) die("posix_memalign(%zu, %zu) returned %d, not ENOMEM", al, n, rc);
                return;
            }
            if (rc != 0) die("posix_memalign(%zu, %zu) returned %d", al, n, rc);
            return add_live(s, static_cast<unsigned char *>(out), n, al, seed, false);
        }
        case ALIGNED_ALLOC:
            p = static_cast<unsigned char *>(bobox_aligned_alloc(al, n));
            if (!pow2(al)) {
                if (p || errno != EINVAL) die("aligned_alloc(%zu, %zu): %p, errno %d; EINVAL expected", al, n,
                                              (void *)p, errno);
                return;
            }
            if (impossible(n)) return expect_enomem(p, "aligned_alloc", n);
            return add_live(s, p, n, al, seed, false);
        case MEMALIGN: { // glibc: any alignment, rounded up to a power of two
            p = static_cast<unsigned char *>(bobox_memalign(al, n));
            size_t eff = 16;
            while (eff < al) eff *= 2;
            if (impossible(n)) return expect_enomem(p, "memalign", n);
            return add_live(s, p, n, eff, seed, false);
        }
        case VALLOC:
            p = static_cast<unsigned char *>(bobox_valloc(n));
            if (impossible(n)) return expect_enomem(p, "valloc", n);
            return add_live(s, p, n, 4096, seed, false);
        default: { // PVALLOC: size rounded up to whole pages
            p = static_cast<unsigned char *>(bobox_pvalloc(n));
            if (impossible(n)) return expect_enomem(p, "pvalloc", n);
            size_t rounded = n ? (n + 4095) / 4096 * 4096 : 4096;
            return add_live(s, p, rounded, 4096, seed, false);
        }
        }
    }
    case REALLOC:
    case REALLOCARRAY: {
        size_t n = op.size, count = 1, total;
        if (op.code == REALLOCARRAY) count = op.size2 % 8 + 1;
        bool overflow = __builtin_mul_overflow(count, n, &total);
        if (s.p) check_slot(s, "before realloc");
        errno = 0;
        unsigned char *old = s.p;
        unsigned char *q = static_cast<unsigned char *>(op.code == REALLOC ? bobox_realloc(old, n)
                                                                            : bobox_reallocarray(old, count, n));
        if (overflow || impossible(total)) {
            expect_enomem(q, kOpName[op.code], total);
            if (old) check_slot(s, "after a failed realloc");
            return;
        }
        if (total == 0 && old) { // glibc: frees, returns NULL
            if (q) die("realloc(p, 0) returned %p, not NULL", (void *)q);
            forget(s);
            check_gone(old);
            return;
        }
        if (!q) die("%s(%p, %zu) failed", kOpName[op.code], (void *)old, total);
        if (!old) return add_live(s, q, total, 0, seed, false);
        size_t keep = total < s.n ? total : s.n, old_n = s.n;
        uint64_t old_seed = s.seed;
        forget(s);
        verify(q, old_n, old_seed, "realloc kept prefix", keep);
        if (q != old) check_gone(old);
        return add_live(s, q, total, 0, seed, false);
    }
    case FREE:
    case FREE_SIZED:
        if (s.p) release(s, op.code == FREE_SIZED);
        else bobox_free(nullptr);
        return;
    case CHECK:
        if (s.p) {
            check_slot(s, "check");
            if (op.size2 & 1) { // refill with a new pattern
                s.seed = seed;
                fill(s.p, s.n, s.seed);
            }
        }
        if (bobox_malloc_usable_size(nullptr) != 0) die("malloc_usable_size(NULL) != 0");
        return;
    case CHECK_HEAP:
        if (bobox_check_heap() != 1) die("bobox_check_heap() failed");
        return;
    case TRIM: {
        int r = bobox_malloc_trim(op.size2 % 2 ? 0 : MB);
        if (r != 0 && r != 1) die("malloc_trim returned %d", r);
        return;
    }
    default:
        return;
    }
}

// ---- workers in lock-step ----------------------------------------------------------------------
struct Worker {
    std::mutex mu;
    std::condition_variable cv;
    const Op *ops = nullptr;
    size_t count = 0, first_index = 0;
    bool busy = false, quit = false;
    std::thread th;

    void loop() {
        std::unique_lock<std::mutex> g(mu);
        for (;;) {
            cv.wait(g, [&] { return busy || quit; });
            if (quit) break;
            for (size_t i = 0; i < count; i++) {
                op_index = first_index + i;
                cur_op = &ops[i];
                run_op(ops[i]);
                if (op_index % 16 == 15 && bobox_check_heap() != 1) die("bobox_check_heap() failed");
            }
            busy = false;
            cv.notify_all();
        }
        if (bobox_check_heap() != 1) die("bobox_check_heap() failed at thread exit");
    }
    void start() {
        quit = false;
        th = std::thread([this] { loop(); });
    }
    void stop() {
        {
            std::lock_guard<std::mutex> g(mu);
            quit = true;
        }
        cv.notify_all();
        th.join();
    }
    void run(const Op *o, size_t n, size_t first) {
        std::unique_lock<std::mutex> g(mu);
        ops = o;
        count = n;
        first_index = first;
        busy = true;
        cv.notify_all();
        cv.wait(g, [&] { return !busy; });
    }
};

Worker *workers;

// ---- decoding --------------------------------------------------------------------------------------
size_t decode_size(FuzzedDataProvider &in) {
    static const size_t edges[] = {0, 1, 8, 15, 16, 17, 31, 32, 33, 1008, 1024, 1025, 4095, 4096, 4097,
                                   16320, 16321, 16368, 16384, 16385, 65536, 65537, 522239, 522240, 522241,
                                   1 * MB, 2 * MB, 2 * MB + 1, 10 * MB,
                                   // impossible sizes: NULL and ENOMEM
                                   SIZE_MAX, SIZE_MAX - 4096, size_t(PTRDIFF_MAX), size_t(PTRDIFF_MAX) + 1};
    uint8_t kind = in.ConsumeIntegral<uint8_t>();
    uint16_t v = in.ConsumeIntegral<uint16_t>();
    switch (kind % 16) {
    case 0: case 1: case 2: case 3: case 4: return v % 257;          // tiny
    case 5: case 6: case 7: return v % 4097;                           // small
    case 8: case 9: return v % 16400;                                  // up to the small limit
    case 10: case 11: return 16000 + size_t(v) * 8 % 510000;          // medium
    case 12: return 500000 + size_t(v) % 40000;                       // medium/large edge
    case 13: return 522240 + size_t(v) * 64;                          // large, up to 4.5 MB
    case 14: {                                                         // edges, rarely impossible
        size_t i = v % (sizeof edges / sizeof *edges);
        if (edges[i] > 10 * MB && (v >> 8) % 4) return edges[i % 29];
        return edges[i];
    }
    default: return v % 128;
    }
}

size_t decode_align(FuzzedDataProvider &in) {
    uint8_t a = in.ConsumeIntegral<uint8_t>();
    if (a >= 240) return size_t(a - 240) * 8 + 3; // not a power of two (or too small)
    return size_t{1} << (a % 23);                 // 1 B .. 4 MB
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
    // Never destroyed: the workers wait for work until the process exits.
    workers = new Worker[kWorkers];
    for (int i = 0; i < kWorkers; i++) workers[i].start();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    FuzzedDataProvider in(data, size);
    std::vector<Op> ops;
    int restarts = 0;
    while (in.remaining_bytes() > 0 && ops.size() < 2000) {
        Op op{};
        uint8_t b = in.ConsumeIntegral<uint8_t>();
        op.code = static_cast<OpCode>(b % NUM_OPS);
        op.worker = static_cast<uint8_t>((b >> 4) % kWorkers);
        op.slot = in.ConsumeIntegral<uint8_t>() % kSlots;
        op.size = decode_size(in);
        op.size2 = in.ConsumeIntegral<uint8_t>();
        if (op.code == POSIX_MEMALIGN || op.code == ALIGNED_ALLOC || op.code == MEMALIGN) op.align = decode_align(in);
        if (op.code == RESTART && ++restarts > 4) op.code = CHECK;
        ops.push_back(op);
    }
    // Runs of one worker's operations go to that worker; RESTART replaces the worker.
    for (size_t i = 0; i < ops.size();) {
        size_t j = i;
        while (j < ops.size() && ops[j].worker == ops[i].worker && ops[j].code != RESTART) j++;
        if (j > i) workers[ops[i].worker].run(&ops[i], j - i, i);
        if (j < ops.size() && ops[j].code == RESTART) {
            Worker &w = workers[ops[j].worker];
            w.stop();
            w.start();
            j++;
        }
        i = j;
    }
    // Free everything, each object by a worker chosen by its slot; then every heap is checked.
    static Op fin[kSlots];
    for (int k = 0; k < kSlots; k++) fin[k] = Op{FREE, uint8_t(k % kWorkers), uint8_t(k), 0, 0, 0};
    for (int w = 0; w < kWorkers; w++) {
        static Op only[kSlots];
        size_t n = 0;
        for (int k = 0; k < kSlots; k++)
            if (fin[k].worker == w) only[n++] = fin[k];
        workers[w].run(only, n, ops.size());
    }
    static const Op heap_check{CHECK_HEAP, 0, 0, 0, 0, 0};
    for (int w = 0; w < kWorkers; w++) workers[w].run(&heap_check, 1, ops.size());
    if (!live.empty()) die("%zu objects still in the table after freeing all", live.size());
    return 0;
}
