/* dlopen.c - plugins loaded with RTLD_DEEPBIND. Only in the shared library.
 *
 * A library loaded with RTLD_DEEPBIND looks up its symbols in itself and its dependencies
 * before the global scope, so it finds libc's malloc family before ours (libc is one of its
 * dependencies) while the program has ours: objects crossing the boundary are freed by the
 * wrong allocator and glibc aborts (PHP loads its extensions so). The flag is dropped for
 * every load: the plugin then binds the preloaded allocator as every other library does.
 * The call to the real dlopen is a tail call, so glibc still sees the caller's return
 * address and searches the caller's RUNPATH and $ORIGIN, as it would without us. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>

#include "base/common.h"
#include "os/options.h"

typedef void *(*dlopen_fn)(const char *, int);

static dlopen_fn real_dlopen(void) {
    static _Atomic(dlopen_fn) real;
    dlopen_fn f = atomic_load_explicit(&real, memory_order_acquire);
    if (!f) {
        f = (dlopen_fn)dlsym(RTLD_NEXT, "dlopen");
        atomic_store_explicit(&real, f, memory_order_release);
    }
    return f;
}

static BX_NOINLINE void note_deepbind(const char *file) {
    static atomic_bool said;
    if (bx_options.verbose && !atomic_exchange(&said, true))
        bx_message("bobox: dlopen(%s, RTLD_DEEPBIND): loaded without RTLD_DEEPBIND, so that it uses bobox's malloc\n",
                   file ? file : "NULL");
}

BX_API void *dlopen(const char *file, int flags) {
    if (BX_UNLIKELY(flags & RTLD_DEEPBIND)) {
        note_deepbind(file);
        flags &= ~RTLD_DEEPBIND;
    }
    return real_dlopen()(file, flags);
}
