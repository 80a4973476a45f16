/* deepbind_host PLUGIN: frees across the boundary to a plugin loaded with RTLD_DEEPBIND, both
 * ways, and reallocs across it; prints what it built. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: deepbind_host PLUGIN.so\n");
        return 2;
    }
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    if (!h) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 2;
    }
    void (*plugin_free)(void *) = (void (*)(void *))dlsym(h, "plugin_free");
    char *(*plugin_strdup)(const char *) = (char *(*)(const char *))dlsym(h, "plugin_strdup");
    char *(*plugin_append)(char *, const char *) = (char *(*)(char *, const char *))dlsym(h, "plugin_append");
    if (!plugin_free || !plugin_strdup || !plugin_append) {
        fprintf(stderr, "dlsym: %s\n", dlerror());
        return 2;
    }
    unsigned long total = 0;
    for (int i = 0; i < 2000; i++) {
        size_t n = 16 + (size_t)(i * 37) % 5000 + (i % 500 == 0 ? (size_t)1 << 20 : 0);
        char *host = malloc(n); /* host allocates, plugin frees */
        memset(host, 'a' + i % 26, n - 1);
        host[n - 1] = 0;
        total += strlen(host);
        plugin_free(host);

        char *copy = plugin_strdup("plugin-made"); /* plugin allocates, host reallocs and frees */
        copy = realloc(copy, 4096 + (size_t)i);
        strcat(copy, "+host");
        total += strlen(copy);
        free(copy);

        char *grown = malloc(8); /* host allocates, plugin reallocs, host frees */
        strcpy(grown, "host");
        grown = plugin_append(grown, "+plugin-grown-beyond-the-first-size");
        total += strlen(grown);
        free(grown);
    }
    printf("crossed 2000 x 3 times, %lu bytes of strings\n", total);
    dlclose(h);
    return 0;
}
