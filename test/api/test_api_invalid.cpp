// Pointers that were never handed out: free() aborts with glibc's kind of message before
// writing anything, and bobox_owns() says 0. Each abort is checked in a forked child.
#include <catch2/catch.hpp>
#include <algorithm>
#include <vector>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <new>

#include "api.h"
#include "child.h"

using namespace api;

namespace {
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
    a_free(p);
    // The same for a medium object aligned past its 512-byte grain. A padded one has less
    // room than its unpadded neighbours of the same bin, by exactly its offset in the slot
    // (checked mode reports the requested size instead, and has its own layout).
    if (checked_mode()) return;
    // Slots of a bin whose size is a multiple of 2048 B are all aligned: try a few sizes.
    std::vector<char *> objs;
    char *padded = nullptr, *slot = nullptr;
    size_t size = 0;
    for (size_t n : {size_t(20000), size_t(28000), size_t(44000)}) {
        size_t before = objs.size(), room = 0;
        for (int i = 0; i < 16; i++) objs.push_back(static_cast<char *>(a_aligned_alloc(2048, n)));
        for (size_t i = before; i < objs.size(); i++) room = std::max(room, a_usable(objs[i]));
        for (size_t i = before; i < objs.size(); i++)
            if (a_usable(objs[i]) < room) padded = objs[i], slot = objs[i] - (room - a_usable(objs[i])), size = n;
        if (padded) break;
    }
    REQUIRE(padded != nullptr);
    auto [sig2, err2] = in_child([&] { a_free(slot); });
    INFO("free(" << (void *)slot << "), the slot of aligned_alloc(2048, " << size << ") = " << (void *)padded << ": " << err2);
    REQUIRE(sig2 == SIGABRT);
    REQUIRE(err2.find("free(): invalid pointer") != std::string::npos);
    for (char *o : objs) a_free(o);
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

TEST_CASE("a free-list link overwritten after free is never handed out (safe-linking)", "[api][invalid]") {
    if (foreign_allowed()) return;
    // A write after free (or an overflow from the neighbour) puts an address of the
    // attacker's choice where the free list keeps its links. Unmangled, the second malloc
    // would return `target`; mangled, the forged link decodes to no slot's offset, and malloc
    // aborts before it follows it.
    static char target[2048];
    auto [sig, err] = in_child([&] {
        const size_t size = 1008; // a size class nothing else in the child uses
        void *objs[8];
        for (void *&p : objs) p = a_malloc(size);
        for (void *p : objs) a_free(p);
        const void *forged = target;
        for (void *p : objs) memcpy(p, &forged, sizeof forged);
        // Checked mode parks freed objects in its quarantine: they are verified when they
        // leave it, after 1024 later frees.
        const bool checked = checked_mode();
        for (int i = 0; i < (checked ? 2048 : 16); i++) {
            void *q = a_malloc(size);
            if (q == static_cast<void *>(target)) {
                fprintf(stderr, "forged address handed out\n");
                _exit(3);
            }
            if (checked) a_free(q);
        }
        fprintf(stderr, "forged links went unnoticed\n");
        _exit(0);
    });
    INFO(err);
    REQUIRE(err.find("forged") == std::string::npos);
    if (checked_mode()) {
        REQUIRE(sig == SIGABRT);
        REQUIRE(err.find("write after free: object 0x") != std::string::npos);
    } else {
        REQUIRE(sig == SIGABRT);
        REQUIRE(err.find("malloc(): corrupted free list at 0x") != std::string::npos);
    }
}

namespace {
// The message names the object whose link was overwritten.
void require_corrupted_at(const std::pair<int, std::string> &child, const void *obj) {
    INFO(child.second);
    REQUIRE(child.first == SIGABRT);
    char expected[64];
    snprintf(expected, sizeof expected, "bobox: malloc(): corrupted free list at %p", obj);
    REQUIRE(child.second.find(expected) != std::string::npos);
}
// One byte of a freed object's first word changed, as a stale pointer's store does: flipped
// with `bits`, so that it always changes (a plain store of a byte the mangled link already
// held, 1 in 256 runs, changed nothing and the test failed).
void write_after_free(void *p, size_t at, unsigned char bits) { static_cast<volatile unsigned char *>(p)[at] ^= bits; }
} // namespace

// Checked mode finds these through its quarantine's fill instead (the checked-mode tests).
TEST_CASE("a write after free over a small object's link aborts the malloc that would follow it",
          "[api][invalid][corrupted]") {
    if (foreign_allowed() || checked_mode()) return;
    struct Case { const char *what; size_t size, at; unsigned char byte; bool alternate; };
    // Writes over the low, a middle and the top byte of the link (byte 1 alone moves it
    // within the block: not caught, docs/hardening.md), an end-of-list link and one inside;
    // `alternate`: malloc and free the same object in turn, so the bad link is never popped
    // itself, only decoded (as a program that reuses one buffer does).
    for (Case c : {Case{"low byte, end of list", 4000, 0, 0x5a, false}, Case{"low byte, alternating", 4000, 0, 0x5a, true},
                   Case{"byte 4", 720, 4, 0x5a, false},
                   Case{"top byte", 720, 7, 0x5a, true}, Case{"odd low nibble", 720, 0, 0x03, true}}) {
        INFO(c.what);
        auto child = in_child([&] {
            void *objs[4];
            for (void *&p : objs) p = a_malloc(c.size);
            for (int i = 3; i >= 0; i--) a_free(objs[i]); // objs[0] is the head, its link objs[1]
            void *p = objs[c.alternate ? 0 : 3];         // objs[3]: the end of the list
            write_after_free(p, c.at, c.byte);
            for (int i = 0; i < 8; i++) {
                void *q = a_malloc(c.size);
                if (c.alternate) a_free(q);
            }
            _exit(0);
        });
        INFO(child.second);
        REQUIRE(child.first == SIGABRT);
        REQUIRE(child.second.find("bobox: malloc(): corrupted free list at 0x") != std::string::npos);
    }
}

TEST_CASE("the corrupted-link message names the object written after free", "[api][invalid][corrupted]") {
    if (foreign_allowed() || checked_mode()) return;
    // The address is known before the fork: the child's heap is a copy of ours. A heap of
    // our own: on its CPU's shared heap the child, run on another CPU, would use another.
    a_own_heap();
    const size_t size = 2992;
    void *p = a_malloc(size);
    a_free(p);
    require_corrupted_at(in_child([&] {
                             write_after_free(p, 0, 0x5a);
                             for (int i = 0; i < 4; i++) a_free(a_malloc(size));
                             _exit(0);
                         }),
                         p);
}

TEST_CASE("a write after free of an object another thread freed aborts the owner's malloc", "[api][invalid][corrupted]") {
    if (foreign_allowed() || checked_mode()) return;
    a_own_heap(); // the child's mallocs must find p's heap whatever CPU it runs on
    // p in a block of its size: a mixed block (BOBOX_MIXED) reuses its memory in address
    // order, not next, and finds the write only when it cuts an object over it.
    bool mixed = true, off = false;
    size_t len = sizeof mixed;
    REQUIRE(bobox_ctl_ptr()("bobox.mixed", &mixed, &len, &off, sizeof off) == 0);
    const size_t size = 3504;
    void *p = a_malloc(size);
    void *neighbour = a_malloc(size); // keeps the block from going back to the cache when p is freed
    require_corrupted_at(in_child([&] {
                             // A new thread keeps only sizes it allocates, so p goes home when it
                             // exits; the trim drains it into its block's list.
                             std::thread([p] { a_free(p); }).join();
                             a_malloc_trim(0);
                             std::thread([p] { write_after_free(p, 0, 0x5a); }).join(); // a stale pointer elsewhere
                             for (int i = 0; i < 2000; i++) a_malloc(size);
                             _exit(0);
                         }),
                         p);
    a_free(neighbour);
    a_free(p);
    REQUIRE(bobox_ctl_ptr()("bobox.mixed", nullptr, nullptr, &mixed, sizeof mixed) == 0);
}

TEST_CASE("a write after free over a medium object's cache link aborts the malloc that would follow it",
          "[api][invalid][corrupted]") {
    if (foreign_allowed() || checked_mode()) return;
    // The head (freed last), and the block after it, which the next malloc takes instead.
    for (bool head : {true, false})
    for (size_t at : {size_t(0), size_t(8)}) { // the link, and the word naming the superblock
        INFO((head ? "head" : "second") << ", byte " << at);
        auto child = in_child([&] {
            const size_t size = 200 << 10;
            void *a = a_malloc(size), *b = a_malloc(size);
            a_free(b);
            a_free(a); // cached on top of b: its link names b
            write_after_free(head ? a : b, at, 0x5a);
            for (int i = 0; i < 4; i++) a_malloc(size);
            _exit(0);
        });
        INFO(child.second);
        REQUIRE(child.first == SIGABRT);
        REQUIRE(child.second.find("bobox: malloc(): corrupted free list at 0x") != std::string::npos);
    }
}

TEST_CASE("a write after free of an object on its way back from another thread aborts before it is reused", "[api][invalid][corrupted]") {
    if (foreign_allowed() || checked_mode()) return;
    // More runs of frees than the owner's inbox holds (16,384 words, two a run of 32 objects of
    // 16 B): the last runs wait on a list linked through the objects themselves, and a stale
    // pointer writes over the links. Those already listed are caught by the owner's drain; the
    // last four runs are still open in an outbox and caught when they are listed.
    for (bool open_runs : {false, true}) {
        INFO((open_runs ? "open runs" : "listed runs"));
        auto child = in_child([&] {
            std::vector<void *> objs(300000);
            for (void *&p : objs) p = a_malloc(16);
            std::thread([&objs, open_runs] {
                for (void *p : objs) a_free(p);
                size_t from = objs.size() - (open_runs ? 64 : 6000), to = objs.size() - (open_runs ? 0 : 256);
                for (size_t i = from; i < to; i++) write_after_free(objs[i], 0, 0x5a);
            }).join();
            for (int i = 0; i < 400000; i++) a_malloc(16); // the owner drains on its way
            _exit(0);
        });
        INFO(child.second);
        REQUIRE(child.first == SIGABRT);
        // Caught by whoever lists or drains them first: the freeing thread's exit, the owner's
        // malloc, or a free on the shared heap the freeing thread may have used.
        // An open run that finds room in the inbox is spliced whole, and its bad link is met
        // when malloc takes the object before it.
        REQUIRE(child.second.find("(): corrupted free list at 0x") != std::string::npos);
        if (!open_runs) REQUIRE(child.second.find("(objects other threads freed)") != std::string::npos);
    }
}

TEST_CASE("a write after free of an object in a run of another thread's frees aborts the malloc that reaches it", "[api][invalid][corrupted]") {
    if (foreign_allowed() || checked_mode()) return;
    auto child = in_child([&] {
        // Runs (small/remote.h) are linked in the block's own list format and spliced whole:
        // a link a stale pointer changed is caught when malloc takes the object before it.
        std::vector<void *> objs(24000);
        for (void *&p : objs) p = a_malloc(48);
        std::thread([&objs] {
            for (void *p : objs) a_free(p);
            for (size_t i = 18000; i < objs.size(); i++) write_after_free(objs[i], 0, 0x5a);
        }).join();
        for (int i = 0; i < 100000; i++) a_malloc(48); // the owner drains on its way
        _exit(0);
    });
    INFO(child.second);
    REQUIRE(child.first == SIGABRT);
    REQUIRE(child.second.find("bobox: malloc(): corrupted free list at 0x") != std::string::npos);
}

TEST_CASE("objects another thread keeps are not listed through their memory: a write after free is never followed",
          "[api][invalid][corrupted]") {
    if (foreign_allowed() || checked_mode()) return;
    const size_t size = 4080; // 15 to a block
    auto child = in_child([&] {
        void *p = a_malloc(size); // the owner's
        std::thread([=] {
            a_own_heap();
            // This thread allocates the size (so it keeps other threads' objects of it) until its
            // chain runs out; p, freed then, is kept, and its next mallocs take the kept ones.
            std::vector<void *> mine;
            for (int i = 0; i < 16; i++) mine.push_back(a_malloc(size));
            a_free(p);
            memset(p, 0x33, 16); // over the words a free list would link through
            bool again = false;
            for (int i = 0; i < 2000 && !again; i++) again = a_malloc(size) == p;
            fprintf(stderr, again ? "handed out again\n" : "never handed out again\n");
            _exit(0);
        }).join();
        _exit(0);
    });
    INFO(child.second);
    REQUIRE(child.first == 0);
    REQUIRE(child.second == "handed out again\n");
}

// ---- checked mode: run with BOBOX_CHECK=1 by test/system/hardening_checked.sh ------------

TEST_CASE("checked mode: a write past the requested size is reported at free with address and size", "[.checked]") {
    REQUIRE(checked_mode());
    struct Case { const char *what; size_t size, alignment; };
    // (A zero-size object has no byte to write: test_api_checked_exit.cpp.)
    for (Case c : {Case{"small", 100, 0}, Case{"small, exact class", 48, 0}, Case{"medium", 30000, 0},
                   Case{"large", size_t(3) << 20, 0}, Case{"aligned", 200, 256}, Case{"aligned large", 5000, 65536}}) {
        char *p = static_cast<char *>(c.alignment ? a_aligned_alloc(c.alignment, c.size) : a_malloc(c.size));
        REQUIRE(p != nullptr);
        // Every requested byte may be written; usable size is exactly what was asked for.
        memset(p, 0x5a, c.size);
        REQUIRE(a_usable(p) == c.size);
        auto [sig, err] = in_child([&] { p[c.size] = 0; a_free(p); });
        INFO(c.what << " object of " << c.size << " bytes: " << err);
        REQUIRE(sig == SIGABRT);
        char expected[160];
        snprintf(expected, sizeof expected, "bobox: free(): heap overflow past the end of %p (size %zu): byte %zu overwritten",
                 (void *)p, c.size, c.size);
        REQUIRE(err.find(expected) != std::string::npos);
        // A long overrun that reaches the size record is still caught, at realloc too. Its 64
        // bytes may run into the next slot: when that slot heads the free list, realloc finds
        // its broken link first (which slot heads it depends on what the process allocated).
        auto [sig2, err2] = in_child([&] { memset(p + c.size, 0, 64); a_realloc(p, c.size + 1); });
        INFO(err2);
        REQUIRE(sig2 == SIGABRT);
        char addr[32];
        snprintf(addr, sizeof addr, "%p", (void *)p);
        bool overflow = err2.find(std::string("bobox: realloc(): heap overflow past the end of ") + addr) != std::string::npos;
        bool next_link = err2.find("bobox: realloc(): corrupted free list in block") != std::string::npos &&
                         err2.find(std::string("(object ") + addr + ")") != std::string::npos;
        REQUIRE((overflow || next_link));
        a_free(p); // intact in the parent
    }
}

TEST_CASE("checked mode: free_sized with the wrong size and a trashed block header abort", "[.checked]") {
    REQUIRE(checked_mode());
    if (!free_sized_ptr()) return; // the static build always has it; glibc 2.36 does not
    char *p = static_cast<char *>(a_malloc(40));
    auto [sig, err] = in_child([&] { a_free_sized(p, 48); });
    INFO(err);
    REQUIRE(sig == SIGABRT);
    REQUIRE(err.find("free_sized(): size 48 does not match the 40 bytes allocated at") != std::string::npos);
    auto [sig2, err2] = in_child([&] {
        // A small object's block descriptor: 128 bytes in the first 64 KB of its superblock
        // (16 MB aligned), at 1 KB + 128 x the block's index (allocator/mem/block.h).
        uintptr_t at = reinterpret_cast<uintptr_t>(p);
        uintptr_t desc = (at & ~uintptr_t(0xffffff)) + 1024 + ((at >> 16) & 0xff) * 128;
        memset(reinterpret_cast<void *>(desc), 0x41, 128);
        a_free(p);
    });
    INFO(err2);
    REQUIRE(sig2 == SIGABRT);
    REQUIRE(err2.find("free(): corrupted block header") != std::string::npos);
    a_free_sized(p, 40);
}

TEST_CASE("checked mode: free_aligned_sized and C++ sized delete with the wrong size abort", "[.checked]") {
    REQUIRE(checked_mode());
    if (free_aligned_sized_ptr()) {
        void *q = a_aligned_alloc(256, 1000);
        auto [sig, err] = in_child([&] { a_free_aligned_sized(q, 256, 1024); });
        INFO(err);
        REQUIRE(sig == SIGABRT);
        REQUIRE(err.find("free_aligned_sized(): size 1024 does not match the 1000 bytes allocated at") !=
                std::string::npos);
        a_free_aligned_sized(q, 256, 1000);
    }
#ifndef API_PREFIXED
    if (foreign_allowed()) return; // libstdc++'s operators do not check
    // Deleting a derived object through a base without a virtual destructor passes the wrong size.
    void *p = opaque(::operator new(40));
    auto [sig, err] = in_child([&] { ::operator delete(p, size_t(48)); });
    INFO(err);
    REQUIRE(sig == SIGABRT);
    REQUIRE(err.find("operator delete(): size 48 does not match the 40 bytes allocated at") != std::string::npos);
    auto [sig2, err2] = in_child([&] { ::operator delete[](p, size_t(24), std::align_val_t(64)); });
    INFO(err2);
    REQUIRE(sig2 == SIGABRT);
    REQUIRE(err2.find("operator delete(): size 24 does not match the 40 bytes allocated at") != std::string::npos);
    ::operator delete(p, size_t(40)); // the right size is accepted
    void *a = opaque(::operator new[](3000, std::align_val_t(4096)));
    REQUIRE(aligned_to(a, 4096));
    ::operator delete[](a, size_t(3000), std::align_val_t(4096));
#endif
}

TEST_CASE("checked mode: realloc keeps the contents and always moves", "[.checked]") {
    REQUIRE(checked_mode());
    char *p = static_cast<char *>(a_malloc(100));
    fill(p, 100, 7);
    char *q = static_cast<char *>(a_realloc(p, 60));
    REQUIRE(q != p);
    REQUIRE(check(q, 60, 7) == SIZE_MAX);
    REQUIRE(a_usable(q) == 60);
    char *r = static_cast<char *>(a_realloc(q, 200000));
    REQUIRE(check(r, 60, 7) == SIZE_MAX);
    REQUIRE(a_usable(r) == 200000);
    a_free(r);
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
