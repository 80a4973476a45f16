/* cxx.c - libbobox.so's C++ operators beside the program's and the C++ runtime's (cxx.h):
 * which definition each form reaches. Only in the shared library: it refers to the
 * operators' symbols, as the program's symbol lookup resolved them. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>

#include "cxx/cxx.h"
#include "os/options.h"

/* Declared with a type of their own: only their addresses are used, and those come through
 * the GOT, as the program's symbol lookup resolved them (the executable's come first). */
#define BX_CXX_EXTERN(name, sig) extern void name(void);
BX_CXX_DERIVED_FORMS(BX_CXX_EXTERN)
BX_CXX_BASE_FORMS(BX_CXX_EXTERN)
#undef BX_CXX_EXTERN

#define BX_CXX_NAME(name, sig) [BX_CXX_##name] = #name,
static const char *const form_names[BX_CXX_FORMS] = {BX_CXX_DERIVED_FORMS(BX_CXX_NAME) BX_CXX_BASE_FORMS(BX_CXX_NAME)};
#undef BX_CXX_NAME

static void *own_targets[BX_CXX_DERIVED];
static void *_Atomic runtime_defs[BX_CXX_FORMS];

/* The next definition of a form after ours: the C++ runtime's, or NULL. Looked up on first
 * use, outside the allocator's locks (dlsym allocates only to report a failure). */
static void *runtime_form(enum bx_cxx_form form) {
    void *f = atomic_load_explicit(&runtime_defs[form], memory_order_acquire);
    if (!f && (f = dlsym(RTLD_NEXT, form_names[form])) != NULL)
        atomic_store_explicit(&runtime_defs[form], f, memory_order_release);
    return f;
}

/* A derived form in a program with operators of its own: the runtime's, which calls the
 * program's; ours where there is no runtime to ask. */
#define BX_CXX_FORWARD_(name, ret, ret_kw, params, args) \
    static ret forward_##name params { \
        void *f = runtime_form(BX_CXX_##name); \
        ret_kw((ret(*) params)(f ? f : own_targets[BX_CXX_##name])) args; \
    }
#define BX_CXX_FORWARD(name, sig) BX_CXX_WITH_SIG(BX_CXX_FORWARD_, name, sig)
BX_CXX_DERIVED_FORMS(BX_CXX_FORWARD)
#undef BX_CXX_FORWARD

void bx_cxx_choose(void *const own[BX_CXX_FORMS], void *const own_target[BX_CXX_DERIVED]) {
#define BX_CXX_FOUND(name, sig) [BX_CXX_##name] = (void *)name,
    void *const found[BX_CXX_FORMS] = {BX_CXX_DERIVED_FORMS(BX_CXX_FOUND) BX_CXX_BASE_FORMS(BX_CXX_FOUND)};
#undef BX_CXX_FOUND
    bool program_defines = false;
    for (int i = 0; i < BX_CXX_FORMS; i++)
        if (i != BX_CXX_DERIVED && found[i] != own[i]) program_defines = true;
    for (int i = 0; i < BX_CXX_DERIVED; i++) own_targets[i] = own_target[i];
#define BX_CXX_TARGET(name, sig) [BX_CXX_##name] = (void *)forward_##name,
    void *const forwards[BX_CXX_DERIVED] = {BX_CXX_DERIVED_FORMS(BX_CXX_TARGET)};
#undef BX_CXX_TARGET
    for (int i = 0; i < BX_CXX_DERIVED; i++) bx_cxx_target[i] = program_defines ? forwards[i] : own_target[i];
    if (program_defines && bx_options.verbose)
        bx_message("bobox: the program defines C++ operators new/delete: the other forms go through the C++ runtime\n");
}

void *bx_cxx_new_failed(enum bx_cxx_form form, size_t size, size_t align, const void *tag) {
    void *f = runtime_form(form);
    if (f) switch (form) {
        case BX_CXX__ZnwmRKSt9nothrow_t: return ((void *(*)(size_t, const void *))f)(size, tag);
        case BX_CXX__ZnwmSt11align_val_t: return ((void *(*)(size_t, size_t))f)(size, align);
        case BX_CXX__ZnwmSt11align_val_tRKSt9nothrow_t:
            return ((void *(*)(size_t, size_t, const void *))f)(size, align, tag);
        default: return ((void *(*)(size_t))f)(size);
        }
    if (form == BX_CXX__ZnwmRKSt9nothrow_t || form == BX_CXX__ZnwmSt11align_val_tRKSt9nothrow_t) return NULL;
    bx_fatalf("operator new: out of memory for %zu bytes, and no C++ runtime found to throw std::bad_alloc", size);
}
