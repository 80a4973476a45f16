// child.h - runs a function in a forked child with its stderr captured, for tests whose
// expected outcome is an abort or a fault.
#pragma once
#include <catch2/catch.hpp>
#include <csignal>
#include <fcntl.h>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <utility>

// Returns (terminating signal, or 256 + the exit code of a child that exited with one, or 0;
// stderr text). The child leaves through _exit, so that only what fn does can report; a
// check in it that exits with a code fails a test that expects 0.
template <class F> std::pair<int, std::string> in_child(F fn) {
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        // The abort or fault is the expected outcome: keep Catch2's fatal-signal handler (and
        // its report on our shared stdout) out of the child.
        signal(SIGABRT, SIG_DFL);
        signal(SIGSEGV, SIG_DFL);
        signal(SIGBUS, SIG_DFL);
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
    if (WIFSIGNALED(status)) return {WTERMSIG(status), err};
    return {WEXITSTATUS(status) ? 256 + WEXITSTATUS(status) : 0, err};
}
