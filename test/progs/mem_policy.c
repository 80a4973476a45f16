/* Test program for BOBOX_MEM: prints the NUMA policy the kernel holds (get_mempolicy with
 * MPOL_F_ADDR) for a small, a medium and a large object, a large object taken again from the
 * cache, and one grown by realloc. The mode is the kernel's (0 default, 1 preferred, 2 bind,
 * 3 interleave), the nodes its node mask.
 * usage: mem_policy          (run under LD_PRELOAD=libbobox.so) */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static void show(const char *what, void *p)
{
    int mode = -1;
    unsigned long mask[16] = { 0 };
    if (syscall(SYS_get_mempolicy, &mode, mask, 1025UL, p, 2UL /* MPOL_F_ADDR */) != 0) {
        printf("%s error\n", what);
        return;
    }
    printf("%s mode=%d nodes=", what, mode);
    int first = 1;
    for (int n = 0; n < 1024; n++)
        if (mask[n / 64] >> (n % 64) & 1) {
            printf("%s%d", first ? "" : ",", n);
            first = 0;
        }
    printf("%s\n", first ? "-" : "");
}

int main(void)
{
    char *small = malloc(64), *medium = malloc(100 << 10), *large = malloc(4 << 20);
    if (!small || !medium || !large)
        return 1;
    memset(large, 1, 4 << 20);
    show("small", small);
    show("medium", medium);
    show("large", large);
    free(large);
    char *again = malloc(4 << 20); /* from the large-object cache */
    show(again == large ? "large-reused" : "large-fresh", again);
    char *grown = realloc(again, 64 << 20);
    if (!grown)
        return 1;
    memset(grown, 2, 64 << 20);
    show("large-grown", grown);
    free(grown);
    free(medium);
    free(small);
    return 0;
}
