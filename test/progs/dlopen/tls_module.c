/* A module with 4 KB of thread-local storage: 24 copies loaded at once make glibc grow every
 * thread's DTV past the slack it had at start-up. */
#include <string.h>
static __thread char buf[4096];
static __thread int calls;
int tls_touch(int v) { memset(buf, v, sizeof buf); calls++; return buf[100] + (calls > 0); }
