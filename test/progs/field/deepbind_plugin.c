/* deepbind_plugin.so: loaded by deepbind_host with RTLD_DEEPBIND (as PHP loads its extensions),
 * so its own calls look in itself and its dependencies (libc) before the global scope. */
#include <stdlib.h>
#include <string.h>

/* Frees what the host allocated. */
void plugin_free(void *p) { free(p); }

/* Allocates what the host will free: a copy of s. */
char *plugin_strdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p) memcpy(p, s, n);
    return p;
}

/* Grows what the host allocated, appending s. */
char *plugin_append(char *p, const char *s) {
    size_t have = strlen(p), add = strlen(s);
    char *q = realloc(p, have + add + 1);
    if (q) memcpy(q + have, s, add + 1);
    return q;
}
