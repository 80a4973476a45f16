/* field_foreign_free MODE: hands free() or realloc() a pointer from glibc's own malloc, looked
 * up in libc.so.6 itself (as a library that links glibc's allocator directly would get it).
 *   free      free(p)                  realloc   realloc(p, 4096)
 *   glibc     the pointer goes back to glibc's own free: always fine
 *   libc      __libc_malloc + free: glibc's internal name, which the preload also defines */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern void *__libc_malloc(size_t);

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    /* Not RTLD_NEXT: from the program, the next object is the preloaded allocator. */
    void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    void *(*glibc_malloc)(size_t) = libc ? (void *(*)(size_t))dlsym(libc, "malloc") : NULL;
    void (*glibc_free)(void *) = libc ? (void (*)(void *))dlsym(libc, "free") : NULL;
    if (!glibc_malloc || !glibc_free) {
        fprintf(stderr, "dlsym: %s\n", dlerror());
        return 2;
    }
    char *p = strcmp(mode, "libc") ? glibc_malloc(100) : __libc_malloc(100);
    if (!p) return 2;
    strcpy(p, "from glibc");
    printf("allocated: %s\n", p);
    fflush(stdout);
    if (!strcmp(mode, "free") || !strcmp(mode, "libc")) {
        free(p);
    } else if (!strcmp(mode, "realloc")) {
        p = realloc(p, 4096);
        if (!p) return 3;
        printf("reallocated: %s\n", p);
        glibc_free(p);
    } else if (!strcmp(mode, "glibc")) {
        glibc_free(p);
    } else {
        fprintf(stderr, "usage: field_foreign_free free|realloc|glibc|libc\n");
        return 2;
    }
    printf("done\n");
    return 0;
}
