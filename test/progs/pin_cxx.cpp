// Test program for the pinning shim: N std::threads; prints, per thread, the CPU it started on
// and its affinity from /proc/self/task/TID/status, as pin_threads does.
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

static std::string allowed(long tid)
{
    std::ifstream f("/proc/self/task/" + std::to_string(tid) + "/status");
    std::string line;
    while (std::getline(f, line))
        if (line.rfind("Cpus_allowed_list:", 0) == 0)
            return line.substr(line.find_first_not_of(" \t", 18));
    return "?";
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? std::atoi(argv[1]) : 4;
    struct info { long tid = 0; int cpu = -1; };
    std::vector<info> v((size_t)n + 1);
    v[0] = { (long)getpid(), sched_getcpu() };
    std::atomic<int> started{ 0 };
    std::atomic<bool> finish{ false };
    std::vector<std::thread> threads;
    for (int k = 1; k <= n; k++)
        threads.emplace_back([&, k] {
            v[(size_t)k].cpu = sched_getcpu();
            v[(size_t)k].tid = syscall(SYS_gettid);
            std::vector<int> work(1000, k); // a first allocation on the new thread
            started++;
            while (!finish) // stay alive until main has read every thread's status
                std::this_thread::yield();
        });
    while (started < n)
        std::this_thread::yield();
    for (int k = 0; k <= n; k++)
        std::printf("pid=%d thread=%d tid=%ld start_cpu=%d allowed=%s\n", (int)getpid(), k, v[(size_t)k].tid,
                    v[(size_t)k].cpu, allowed(v[(size_t)k].tid).c_str());
    std::fflush(stdout);
    finish = true;
    for (auto &t : threads)
        t.join();
}
