// Out of memory with several threads: in a child process under RLIMIT_AS (its current size +
// 640 MB), four threads allocate every size range until each has seen many failures. Every
// failure must be NULL with errno ENOMEM (posix_memalign: ENOMEM returned) - never a crash or a
// hang - and live objects keep their contents. Then each thread frees another thread's
// objects, and all of them must be able to allocate again (small, medium and 64 MB).
// Sanitizers reserve terabytes of shadow memory and cannot run under RLIMIT_AS: skipped there.
#include <catch2/catch.hpp>

#include <fstream>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <vector>

#include "stress.h"

using namespace stress;

namespace {

constexpr int kThreads = 4;
constexpr size_t kMaxObjs = 60000;

struct Shared {
    pthread_barrier_t barrier;
    void **objs[kThreads];
    size_t *sizes[kThreads];
    size_t count[kThreads];
    size_t failures[kThreads];
    std::atomic<int> errors{0};
    char msg[256];
};

void fail(Shared *s, const char *fmt, size_t a, size_t b = 0) {
    if (s->errors.fetch_add(1) == 0) snprintf(s->msg, sizeof s->msg, fmt, a, b);
}

size_t vm_size() {
    std::ifstream f("/proc/self/statm");
    size_t pages = 0;
    f >> pages;
    return pages * page_size();
}

struct Arg {
    Shared *s;
    int id;
};

void *oom_thread(void *argp) {
    Arg *arg = static_cast<Arg *>(argp);
    Shared *s = arg->s;
    int id = arg->id;
    Rng r(id + 5);
    void **objs = s->objs[id];
    size_t *sizes = s->sizes[id];
    size_t n = 0, failures = 0;
    const size_t big[] = {3000, 15000, 100000, 400000, 2 * MB, 9 * MB, 40 * MB};
    pthread_barrier_wait(&s->barrier); // the limit is set
    while (n < kMaxObjs && failures < 150) {
        size_t size = r.below(3) ? 16 + r.below(512) : big[r.below(7)];
        errno = 0;
        void *p;
        int kind = static_cast<int>(r.below(8));
        if (kind == 0) {
            p = a_calloc(1, size);
        } else if (kind == 1) {
            p = nullptr;
            int rc = a_posix_memalign(&p, size_t{64} << r.below(12), size);
            if (rc != 0 && rc != ENOMEM) fail(s, "posix_memalign returned %zu", size_t(rc));
            if (rc != 0) p = nullptr;
            errno = rc ? ENOMEM : 0;
        } else {
            p = a_malloc(size);
        }
        if (!p) {
            if (errno != ENOMEM) fail(s, "NULL for %zu B with errno %zu, not ENOMEM", size, size_t(errno));
            failures++;
            continue;
        }
        auto *b = static_cast<unsigned char *>(p);
        b[0] = static_cast<unsigned char>(id);
        b[size - 1] = static_cast<unsigned char>(n);
        objs[n] = p;
        sizes[n++] = size;
    }
    s->count[id] = n;
    s->failures[id] = failures;
    // A failed realloc keeps the object.
    if (n) {
        errno = 0;
        void *q = a_realloc(objs[0], 400 * MB);
        if (q) {
            objs[0] = q; // possible if another thread freed in time: still valid
            sizes[0] = 400 * MB;
            static_cast<unsigned char *>(q)[400 * MB - 1] = 0;
        } else if (errno != ENOMEM) {
            fail(s, "failed realloc: errno %zu", size_t(errno));
        }
        if (static_cast<unsigned char *>(objs[0])[0] != id) fail(s, "realloc lost the object of thread %zu", id);
    }
    pthread_barrier_wait(&s->barrier);
    // Check every object, then free the next thread's (objects of another heap).
    for (size_t i = 0; i < n; i++) {
        auto *b = static_cast<unsigned char *>(objs[i]);
        if (b[0] != id || (i > 0 && b[sizes[i] - 1] != static_cast<unsigned char>(i)))
            fail(s, "object %zu of thread %zu corrupt", i, size_t(id));
    }
    pthread_barrier_wait(&s->barrier);
    int other = (id + 1) % kThreads;
    for (size_t i = 0; i < s->count[other]; i++) a_free(s->objs[other][i]);
    pthread_barrier_wait(&s->barrier);
    // Recovery, in every range.
    for (int round = 0; round < 3; round++) {
        auto *p = static_cast<unsigned char *>(a_malloc(64 * MB));
        if (!p) { fail(s, "64 MB after freeing everything (round %zu)", size_t(round)); break; }
        memset(p, 3, 64 * MB);
        for (size_t i = 0; i < 2000; i++) {
            size_t size = i % 10 == 0 ? big[i % 4] : 16 + i % 1000;
            objs[i] = a_malloc(size);
            if (!objs[i]) { fail(s, "malloc(%zu) after freeing everything", size); break; }
            sfill(objs[i], size, i);
            sizes[i] = size;
        }
        for (size_t i = 0; i < 2000 && objs[i]; i++) {
            if (scheck(objs[i], sizes[i], i) != SIZE_MAX) fail(s, "recovered object %zu corrupt", i);
            a_free(objs[i]);
        }
        a_free(p);
    }
    if (check_heap() != 1) fail(s, "bobox_check_heap() failed in thread %zu", size_t(id));
    return nullptr;
}

int oom_child() {
    static Shared s; // everything the child needs is made before the limit
    pthread_barrier_init(&s.barrier, nullptr, kThreads + 1);
    for (int i = 0; i < kThreads; i++) {
        s.objs[i] = static_cast<void **>(mmap(nullptr, kMaxObjs * sizeof(void *), PROT_READ | PROT_WRITE,
                                             MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0));
        s.sizes[i] = static_cast<size_t *>(mmap(nullptr, kMaxObjs * sizeof(size_t), PROT_READ | PROT_WRITE,
                                               MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0));
    }
    pthread_t t[kThreads];
    Arg args[kThreads];
    for (int i = 0; i < kThreads; i++) {
        args[i] = {&s, i};
        if (pthread_create(&t[i], nullptr, oom_thread, &args[i]) != 0) return 10;
    }
    usleep(20000); // the threads are up: their stacks count in the size below
    // A finite limit first, then malloc_trim: the allocator gives back the address space it
    // reserved and does not use, and the size read below is what the process really uses.
    struct rlimit lim = {RLIM_INFINITY - 1, RLIM_INFINITY - 1};
    setrlimit(RLIMIT_AS, &lim);
    a_malloc_trim(0);
    size_t limit = vm_size() + 640 * MB;
    lim = {limit, limit};
    if (setrlimit(RLIMIT_AS, &lim) != 0) return 11;
    for (int phase = 0; phase < 4; phase++) pthread_barrier_wait(&s.barrier);
    for (int i = 0; i < kThreads; i++) pthread_join(t[i], nullptr);
    size_t total_failures = 0, total_objs = 0;
    for (int i = 0; i < kThreads; i++) {
        total_failures += s.failures[i];
        total_objs += s.count[i];
    }
    fprintf(stderr, "oom child: %zu objects, %zu failures\n", total_objs, total_failures);
    if (s.errors) {
        fprintf(stderr, "oom child: %d error(s); first: %s\n", s.errors.load(), s.msg);
        return 12;
    }
    for (int i = 0; i < kThreads; i++)
        if (s.failures[i] < 150) {
            fprintf(stderr, "thread %d never ran out of memory\n", i);
            return 13;
        }
    return 0;
}

} // namespace

TEST_CASE("out of memory under RLIMIT_AS with four threads, then recovery", "[stress][oom]") {
    if (STRESS_SANITIZED) {
        WARN("skipped: sanitizers cannot run under RLIMIT_AS");
        return;
    }
    auto t0 = std::chrono::steady_clock::now();
    fflush(nullptr);
    pid_t pid = fork();
    if (pid == 0) _exit(oom_child());
    REQUIRE(pid > 0);
    int status = 0;
    bool done = false;
    for (int ms = 0; ms < 60000 && !done; ms += 5) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        REQUIRE(w >= 0);
        if (w == pid) done = true; else usleep(5000);
    }
    if (!done) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
    }
    INFO("child exit: " << (WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status))
                        << " (10-11 setup, 12 a check failed, 13 no OOM reached; see stderr)");
    REQUIRE(done);
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);
    WARN("oom: " << seconds_since(t0) << " s");
}
