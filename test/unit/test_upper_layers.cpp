// The layers above the superblock (heap, retention, thread, core), through the C probes of
// upper_layers.c.
#include <catch2/catch.hpp>
#include "child.h"
#include <csignal>
#include <cstdint>
#include <string>

extern "C" {
const char *probe_heap_small(size_t size, int n);
const char *probe_heap_medium(void);
const char *probe_front(size_t size);
const char *probe_remote_free(void);
const char *probe_remote_runs_overflow(void);
const char *probe_remote_after_fork_hole(void);
const char *probe_keep_bound(void);
const char *probe_lend(void);
const char *probe_tick(void);
const char *probe_core(void);
void probe_core_free_inside(void);
int64_t probe_countdown_in_new_thread(void);
const char *probe_mixed(void);
const char *probe_purge_spares_sparse(void);
const char *probe_mixed_runs(void);
void probe_mixed_write_after_free(void);
}

static std::string ok(const char *failure) { return failure ? failure : ""; }

TEST_CASE("a heap hands out distinct objects of its own blocks and gives every block back", "[heap]") {
    for (size_t size : {16, 48, 256, 1008, 4096, 16352}) {
        INFO(size << " B");
        REQUIRE(ok(probe_heap_small(size, 3000)) == "");
    }
}

TEST_CASE("a bin's front cache carves fresh slots, hands back the objects freed last, sends frees past its capacity "
          "to their blocks, turns off after a batch, and empties when idle or released",
          "[heap][front]") {
    for (size_t size : {16, 256, 1008, 4096, 16352}) {
        INFO(size << " B");
        REQUIRE(ok(probe_front(size)) == "");
    }
}

TEST_CASE("a heap's medium object is one block of its own superblock, freed once", "[heap]") {
    REQUIRE(ok(probe_heap_medium()) == "");
}

TEST_CASE("another heap's free reaches the owner through its remote list and the drain", "[heap][remote]") {
    REQUIRE(ok(probe_remote_free()) == "");
}

TEST_CASE("runs of remote frees past the owner's inbox take its list and all come back", "[heap][remote]") {
    REQUIRE(ok(probe_remote_runs_overflow()) == "");
}

TEST_CASE("after fork, a run whose first word its sender never stored is skipped, not written through",
          "[heap][remote][fork]") {
    // In a child: the build before this test wrote through the run's second word and died.
    auto [sig, err] = in_child([] {
        if (const char *failure = probe_remote_after_fork_hole()) {
            fputs(failure, stderr);
            _exit(1);
        }
    });
    INFO(err);
    REQUIRE(sig == 0);
}

TEST_CASE("a heap's keeps together hold at most their bound of other heaps' objects, and reopen only below a quarter of it",
          "[heap][remote]") {
    REQUIRE(ok(probe_keep_bound()) == "");
}

TEST_CASE("a heap with no cached block takes another's surplus instead of fresh memory, and gives it back home",
          "[heap][lend]") {
    REQUIRE(ok(probe_lend()) == "");
}

TEST_CASE("start-up registers retention's decay tick with the heap, and a due tick runs it", "[heap][retention]") {
    REQUIRE(ok(probe_tick()) == "");
}

TEST_CASE("core allocates as the bin would, frees, aligns, and calls the large-free hook", "[core]") {
    REQUIRE(ok(probe_core()) == "");
}

TEST_CASE("core's free of an address inside an object aborts naming the operation", "[core]") {
    auto [sig, err] = in_child(probe_core_free_inside);
    INFO(err);
    REQUIRE(sig == SIGABRT);
    REQUIRE(err.find("probe_free(): invalid pointer") != std::string::npos);
}

TEST_CASE("a new thread's countdown starts where the registered function says", "[thread]") {
    REQUIRE(probe_countdown_in_new_thread() == 1000000 - 16);
}

TEST_CASE("a mixed block keeps its survivors, cuts any size from its gaps, tells objects from their insides, and "
          "goes back once empty",
          "[heap][mixed]") {
    REQUIRE(ok(probe_mixed()) == "");
}

TEST_CASE("an idle size's pass spares its sparse blocks' pages when asked, gives them back at the next pass not "
          "asked to, and a mix after it takes them whole",
          "[heap][mixed]") {
    REQUIRE(ok(probe_purge_spares_sparse()) == "");
}

TEST_CASE("a mixed block's index of long runs: every gap is cut, those it left out too; a freed gap is cut again; "
          "neighbours freed are cut as one run",
          "[heap][mixed]") {
    REQUIRE(ok(probe_mixed_runs()) == "");
}

TEST_CASE("a write after free over a mixed block's freed object aborts the malloc that cuts an object over it",
          "[heap][mixed]") {
    auto [sig, err] = in_child([] { probe_mixed_write_after_free(); });
    INFO(err);
    REQUIRE(sig == SIGABRT);
    size_t at = err.find("object 0x");
    REQUIRE(at != std::string::npos);
    std::string obj = err.substr(at + 7, err.find('\n', at) - at - 7);
    REQUIRE(err.find("malloc(): corrupted free list at " + obj) != std::string::npos);
}
