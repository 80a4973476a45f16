// Pointers that were never handed out: free() aborts with glibc's kind of message before
// writing anything, and bobox_owns() says 0. Each abort is checked in a forked child.
#include <catch2/catch.hpp>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include "api.h"

using namespace api;

namespace {
// Runs fn in a child with stderr captured; returns (terminating signal, stderr text).
template <class F> std::pair<int, std::string> in_child(F fn) {
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        // The abort is the expected outcome: keep Catch2's fatal-signal handler (and its
        // report on our shared stdout) out of the child.
        signal(SIGABRT, SIG_DFL);
        dup2(fds[1], 2);
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0) dup2(devnull, 1);
        close(fds[0]);
        fn();
        _exit(0);
    }
    close(fds[1]);
    std::string err;
    char buf[512];
    for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) err.append(buf, size_t(n));
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    return {WIFSIGNALED(status) ? WTERMSIG(status) : 0, err};
}
} // namespace

TEST_CASE("the slot start of an over-allocated aligned object is not ours to free", "[api][invalid]") {
    if (foreign_allowed()) return;
    for (size_t size : {size_t(100), size_t(3000), size_t(40000)}) {
        char *p = static_cast<char *>(a_aligned_alloc(256, size));
        REQUIRE(p != nullptr);
        REQUIRE(a_owns(p) == 1);
        // Find the slot start if the object was padded inside its slot.
        for (char *base = p - 16; base > p - 256; base -= 16) {
            INFO("aligned_alloc(256, " << size << ") = " << (void *)p << ", probing " << (void *)base);
            REQUIRE(a_owns(base) == 0);
        }
        a_free(p);
    }
    // And free() of an address in the padding (the slot start or past it) aborts instead of
    // freeing the aligned object.
    char *p = static_cast<char *>(a_aligned_alloc(256, 100));
    auto [sig, err] = in_child([&] { a_free(p - 16); });
    INFO(err);
    REQUIRE(sig == SIGABRT);
    REQUIRE(err.find("free(): invalid pointer") != std::string::npos);
}

TEST_CASE("free of stack, interior and double-freed pointers aborts with a message", "[api][invalid]") {
    if (foreign_allowed()) return;
    int on_stack = 0;
    auto [sig1, err1] = in_child([&] { a_free(&on_stack); });
    REQUIRE(sig1 == SIGABRT);
    REQUIRE(err1.find("bobox: free(): invalid pointer") != std::string::npos);
    for (size_t size : {size_t(48), size_t(30000), size_t(2) << 20}) {
        char *p = static_cast<char *>(a_malloc(size));
        auto [sig2, err2] = in_child([&] { a_free(p + 16); });
        INFO("interior pointer of a " << size << "-byte object: " << err2);
        REQUIRE(sig2 == SIGABRT);
        REQUIRE(err2.find("free(): invalid pointer") != std::string::npos);
        auto [sig3, err3] = in_child([&] { a_free(p); a_free(p); });
        INFO("double free of a " << size << "-byte object: " << err3);
        REQUIRE(sig3 == SIGABRT);
        REQUIRE((err3.find("free(): double free") != std::string::npos ||
                 (size > (1u << 20) && err3.find("free(): invalid pointer") != std::string::npos)));
        a_free(p); // the parent's copy is untouched
    }
}

TEST_CASE("a double free of an object kept by the thread that freed it aborts", "[api][invalid][remote]") {
    auto [sig, err] = in_child([] {
        a_free(a_malloc(100)); // this thread allocates objects of the size: it keeps them
        void *p = nullptr;
        std::thread([&] { p = a_malloc(100); }).join();
        a_free(p);
        a_free(p);
    });
    INFO("stderr: " << err);
    REQUIRE(sig == SIGABRT);
    REQUIRE(err.find("free(): double free") != std::string::npos);
}
