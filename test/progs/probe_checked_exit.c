/* probe_checked_exit: one bad heap operation that the program never follows with a free of
 * the object, then a normal exit (return from main), as the public allocator test suites
 * write their probes. test/system/hardening_checked_exit.sh runs each kind under
 * BOBOX_CHECK=1 and expects the process to die: at the bad operation (a fault: memory with
 * no access) or at exit (the checks of the objects left live and of the quarantine).
 *
 * Kinds (sizes: small 24 B, medium 100 KB, large 2 MB, bobox's three size ranges):
 *   over1.SIZE, over8.SIZE  write 1 (8) bytes past the end, exit
 *   under1.SIZE             write the byte before the start, exit
 *   under32.SIZE            write the 32 bytes before the start (a small object's slot
 *                           record too), exit
 *   uaf.SIZE                free, write into the middle, exit
 *   uaf_zero.SIZE           free, write a zero into the middle, exit
 *   uaf_atexit.small        an atexit handler frees an object and writes into it
 *   check_heap_over1.SIZE   write past the end, then bobox_check_heap(), then _exit(0)
 *   check_heap_uaf.SIZE     free, write, then bobox_check_heap(), then _exit(0)
 *   over1m.large            write 1 MB past the end of a 2 MB object (memory of the program's
 *                           own mapped there first, unless the allocator holds the address)
 *   zero_read, zero_write   read or write the byte at malloc(0)
 *   zero_calloc_write       write the byte at calloc(0, 1)
 *   clean                   no bug: many objects left live, freed, in threads; exit 0
 *   zero_ok                 no bug: malloc(0) twice (different pointers), realloc, free; exit 0
 * Exit status: 0 when nothing stopped the program, 2 on a usage error, 5 when a check that
 * should have stopped it did not (check_heap_*: bobox_check_heap returned). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* The bad operations are the point of this program. */
#pragma GCC diagnostic ignored "-Wuse-after-free"

/* Hides where a pointer came from: the compiler neither drops nor warns about the bad store. */
static void *launder(void *p) {
    __asm__ volatile("" : "+r"(p)::"memory");
    return p;
}

static size_t size_of(const char *name) {
    if (!strcmp(name, "small")) return 24;
    if (!strcmp(name, "medium")) return 100 << 10;
    if (!strcmp(name, "large")) return 2 << 20;
    return 0;
}

static int check_heap(void) {
    int (*fn)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "bobox_check_heap");
    if (!fn) {
        fprintf(stderr, "probe_checked_exit: bobox_check_heap not found (no preload?)\n");
        _exit(2);
    }
    return fn();
}

static char *late;
static void free_and_write(void) {
    free(late);
    ((volatile char *)launder(late))[3] = 0x5a;
}

static void *clean_thread(void *arg) {
    size_t seed = (size_t)(uintptr_t)arg;
    void *keep[64];
    for (int i = 0; i < 64; i++) {
        size_t n = (seed * 7919 + (size_t)i * 104729) % 5000;
        keep[i] = malloc(n);
        memset(keep[i], i, n);
    }
    for (int i = 0; i < 64; i += 2) free(keep[i]);
    return keep[1]; /* the odd ones stay live to the end */
}

static int clean(void) {
    /* Objects of every range, some freed, some kept, some written to their last byte. */
    static void *kept[4096];
    for (int i = 0; i < 4096; i++) {
        size_t n = i % 97 == 0 ? (size_t)(600 << 10) + (size_t)i : i % 13 == 0 ? (size_t)(20 << 10) + (size_t)i : (size_t)i;
        char *p = i % 5 == 0 ? aligned_alloc(64, n) : malloc(n);
        if (!p && n) return 1;
        if (n) memset(p, 0x77, n);
        kept[i] = p;
        if (i % 3 == 0) free(p), kept[i] = NULL;
    }
    pthread_t t[4];
    for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, clean_thread, (void *)(uintptr_t)(i + 1));
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    for (int i = 0; i < 4096; i += 7) free(kept[i]), kept[i] = NULL;
    if (check_heap() != 1) return 1;
    printf("clean\n");
    return 0;
}

static int zero_ok(void) {
    char *a = launder(malloc(0)), *b = launder(malloc(0));
    if (!a || !b || a == b) return 1;
    char *c = launder(calloc(0, 8));
    if (!c || c == a || c == b) return 1;
    free(a);
    b = realloc(b, 10);
    if (!b) return 1;
    memset(b, 1, 10);
    free(b);
    free(c);
    printf("zero_ok\n");
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: probe_checked_exit KIND (see the source)\n");
        return 2;
    }
    char kind[64];
    snprintf(kind, sizeof kind, "%s", argv[1]);
    char *dot = strchr(kind, '.');
    size_t n = 0;
    if (dot) {
        *dot = 0;
        if (!(n = size_of(dot + 1))) return 2;
    }
    if (!strcmp(kind, "clean")) return clean();
    if (!strcmp(kind, "zero_ok")) return zero_ok();
    if (!strcmp(kind, "zero_read")) {
        volatile char *p = launder(malloc(0));
        return p[0] == 0x5a ? 0 : 0;
    }
    if (!strcmp(kind, "zero_write")) {
        ((volatile char *)launder(malloc(0)))[0] = 0x5a;
        return 0;
    }
    if (!strcmp(kind, "zero_calloc_write")) {
        ((volatile char *)launder(calloc(0, 1)))[0] = 0x5a;
        return 0;
    }
    if (!strcmp(kind, "uaf_atexit")) {
        late = launder(malloc(n));
        atexit(free_and_write);
        return 0;
    }
    if (!n) return 2;
    char *p = launder(malloc(n));
    if (!p) return 1;
    memset(p, 0x11, n);
    if (!strcmp(kind, "over1")) {
        p[n] = 0x5a;
    } else if (!strcmp(kind, "over8")) {
        memset(launder(p + n), 0x5a, 8);
    } else if (!strcmp(kind, "under1")) {
        ((char *)launder(p))[-1] = 0x5a;
    } else if (!strcmp(kind, "under32")) {
        memset((char *)launder(p) - 32, 0x5a, 32);
    } else if (!strcmp(kind, "uaf")) {
        free(p);
        ((volatile char *)launder(p))[n / 2] = 0x5a;
    } else if (!strcmp(kind, "uaf_zero")) {
        free(p);
        /* A zero where the freed object holds a byte that is not one: at n / 2, or past it
         * when that byte is zero already (of a small object, the free mark's random key, zero
         * there one run in 256: the write changed nothing and nothing could catch it). */
        volatile char *q = launder(p);
        size_t at = n / 2;
        while (at + 1 < n && q[at] == 0) at++;
        q[at] = 0;
    } else if (!strcmp(kind, "over1m")) {
        /* Memory of the program's own there, unless the allocator keeps the address: a fault
         * then comes from the allocator's gap, not from a hole that happened to follow. */
        uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), at = (uintptr_t)p + n + (1 << 20);
        mmap((void *)(at & ~(page - 1)), page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
             -1, 0);
        ((volatile char *)launder(p))[n + (1 << 20)] = 0x5a;
    } else if (!strcmp(kind, "check_heap_over1")) {
        p[n] = 0x5a;
        check_heap();
        _exit(5);
    } else if (!strcmp(kind, "check_heap_uaf")) {
        free(p);
        ((volatile char *)launder(p))[n / 2] = 0x5a;
        check_heap();
        _exit(5);
    } else {
        return 2;
    }
    return 0;
}
