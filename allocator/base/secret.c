/* secret.c - drawing the per-process secrets. */
#define _GNU_SOURCE
#include "base/secret.h"

#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

uintptr_t bx_free_key = 0x5bd1e9955bd1e995u;
uintptr_t bx_link_secret = 0xc2b2ae3d27d4eb40u; /* as drawn: top bit set, low 4 bits clear */

static uintptr_t random_word(void) {
    uintptr_t word = 0;
    if (syscall(SYS_getrandom, &word, sizeof word, 1 /* GRND_NONBLOCK */) == sizeof word) return word;
    /* No entropy yet (early boot): the address-space layout and the clock still differ
     * from run to run. */
    struct timespec ts;
    /* The system call itself: an interposed clock_gettime (libfaketime) may allocate, and
     * this runs while start-up is under way. */
    syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
    return ((uintptr_t)&word * 0x9e3779b97f4a7c15u) ^ (uintptr_t)ts.tv_nsec ^ ((uintptr_t)ts.tv_sec << 32) ^
           ((uintptr_t)getpid() << 17);
}

void bx_secrets_init(void) {
    /* Odd and above any user-space address: never a valid pointer or a small integer. */
    bx_free_key = random_word() | 0x8000000000000001u;
    /* Top bit set: a pointer or small integer written over a link decodes to a
     * non-canonical address, which faults on first use. Low bits clear: an aligned forged
     * link stays aligned, so the fault is the first thing that goes wrong. */
    bx_link_secret = ((random_word() * 0x9e3779b97f4a7c15u) | 0x8000000000000000u) & ~(uintptr_t)15;
}

uintptr_t bx_format_key(const void *base, uint32_t size) {
    /* base | size is distinct for each pair; the product by an odd constant is a bijection;
     * the OR's bit 0 is clear in every product (sizes are multiples of 16) and its bit 63
     * would merge only products 2^63 apart, whose inputs would be too. */
    return (bx_free_key ^ (((uintptr_t)base | size) * 0x9e3779b97f4a7c15u)) | 0x8000000000000001u;
}
