/* A preloaded C library whose constructor calls C++ operator forms derived from new and
 * delete before libbobox.so has initialised (listed after it in LD_PRELOAD, its
 * constructor runs first). Until then the allocator cannot know whether the program defines
 * its own operators, so these calls must wait for that answer: in alloc_cxx_replace, new[]
 * must reach the program's new, or the program's delete aborts on our pointer. */
#include <string.h>
#include <unistd.h>

extern void *_Znam(unsigned long size);
extern void _ZdaPv(void *p);
extern void *_ZnwmRKSt9nothrow_t(unsigned long size, const void *tag);
extern void _ZdlPvm(void *p, unsigned long size);

static void say(const char *s) {
    if (write(2, s, strlen(s)) < 0) _exit(3);
}

__attribute__((constructor)) static void early(void) {
    say("early: calling operator new[] and nothrow new\n");
    char *a = _Znam(24);
    memset(a, 1, 24);
    _ZdaPv(a);
    char tag = 0; /* a std::nothrow_t is empty: any address will do */
    char *b = _ZnwmRKSt9nothrow_t(40, &tag);
    if (!b) _exit(4);
    memset(b, 2, 40);
    _ZdlPvm(b, 40);
    say("early: done\n");
}
