/* exitcheck.c - the checks at a normal exit. Checked mode verifies every live object and the
 * quarantine (checked.h). The default mode checks the free objects the exiting thread's next
 * allocations would take first (of the shared heaps, for a thread without a heap), and their links: a write after free into an object freed
 * last, which no later malloc of its size followed, would otherwise end cleanly. */
#include "os/options.h"
#include "thread/thread.h"
#include "tools/checked.h"

/* As late as the library can: a destructor runs after the program's atexit handlers and
 * C++ static destructors, and the lowest priority runs last of the library's own (after the
 * statistics and the heap profile are written). _exit and a fatal signal skip it. */
__attribute__((destructor(101))) static void check_at_exit(void) {
    if (bx_options.check) bx_checked_check_all("exit()");
    else if (bx_tls_heap) bx_heap_check_heads(bx_tls_heap, "exit()");
    else bx_thread_check_heads_shared("exit()"); /* a thread that never proved busy */
}
