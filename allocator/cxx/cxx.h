/* cxx.h - C++ operator new and delete, defined by libbobox.so (operators.c, and free.c built
 * with BOBOX_OVERRIDE for the base forms of delete; operators.c and cxx.c go only into the
 * shared library).
 *
 * libstdc++'s operators would call malloc and free one call deeper. The four base forms
 * (new, aligned new, delete, aligned delete) are aliases of malloc's and free's own fast paths.
 * The sixteen derived forms (array, sized, nothrow) jump through bx_cxx_target: to the same
 * code, or, in a program that defines any of the operators itself, to the C++ runtime's own
 * derived forms, which call the program's (the standard's rule: a derived form calls the
 * replaceable form it is derived from). Objects then go back to the code they came from. */
#ifndef BX_CXX_H
#define BX_CXX_H

#include "front/fastpath.h"

/* Signatures: return type, `return` or nothing, parameter list, argument list (Itanium ABI,
 * 64-bit size_t; a nothrow_t reference travels as a pointer, an align_val_t as a size_t). */
#define BX_CXX_SIG_NEW void *, return, (size_t size), (size)
#define BX_CXX_SIG_NEW_NT void *, return, (size_t size, const void *tag), (size, tag)
#define BX_CXX_SIG_NEW_AL void *, return, (size_t size, size_t align), (size, align)
#define BX_CXX_SIG_NEW_AL_NT void *, return, (size_t size, size_t align, const void *tag), (size, align, tag)
#define BX_CXX_SIG_DEL void, , (void *p), (p)
#define BX_CXX_SIG_DEL_SZ void, , (void *p, size_t size), (p, size)
#define BX_CXX_SIG_DEL_NT void, , (void *p, const void *tag), (p, tag)
#define BX_CXX_SIG_DEL_AL void, , (void *p, size_t align), (p, align)
#define BX_CXX_SIG_DEL_SZ_AL void, , (void *p, size_t size, size_t align), (p, size, align)
#define BX_CXX_SIG_DEL_AL_NT void, , (void *p, size_t align, const void *tag), (p, align, tag)
/* BX_CXX_WITH_SIG(M, name, sig) is M(name, ret, return-or-nothing, params, args). */
#define BX_CXX_APPLY(m, ...) m(__VA_ARGS__)
#define BX_CXX_WITH_SIG(m, name, sig) BX_CXX_APPLY(m, name, BX_CXX_SIG_##sig)

/* X(symbol, signature): the derived forms. */
#define BX_CXX_DERIVED_FORMS(X) \
    X(_Znam, NEW) \
    X(_ZnwmRKSt9nothrow_t, NEW_NT) \
    X(_ZnamRKSt9nothrow_t, NEW_NT) X(_ZnamSt11align_val_t, NEW_AL) X(_ZnwmSt11align_val_tRKSt9nothrow_t, NEW_AL_NT) \
        X(_ZnamSt11align_val_tRKSt9nothrow_t, NEW_AL_NT) X(_ZdaPv, DEL) X(_ZdlPvm, DEL_SZ) X(_ZdaPvm, DEL_SZ) \
            X(_ZdlPvRKSt9nothrow_t, DEL_NT) X(_ZdaPvRKSt9nothrow_t, DEL_NT) X(_ZdaPvSt11align_val_t, DEL_AL) \
                X(_ZdlPvmSt11align_val_t, DEL_SZ_AL) X(_ZdaPvmSt11align_val_t, DEL_SZ_AL) \
                    X(_ZdlPvSt11align_val_tRKSt9nothrow_t, DEL_AL_NT) \
                        X(_ZdaPvSt11align_val_tRKSt9nothrow_t, DEL_AL_NT)
/* X(symbol, signature): the base forms; every derived form comes down to one of them. */
#define BX_CXX_BASE_FORMS(X) \
    X(_Znwm, NEW) X(_ZnwmSt11align_val_t, NEW_AL) X(_ZdlPv, DEL) X(_ZdlPvSt11align_val_t, DEL_AL)

#define BX_CXX_ENUM(name, sig) BX_CXX_##name,
enum bx_cxx_form { BX_CXX_DERIVED_FORMS(BX_CXX_ENUM) BX_CXX_DERIVED, BX_CXX_BASE_FORMS(BX_CXX_ENUM) BX_CXX_FORMS };
#undef BX_CXX_ENUM

/* cxx_own_NAME: our definition of NAME under a hidden name, whose address is ours even
 * where the program defines NAME (the address of NAME itself comes through the GOT). */
#define BX_CXX_OWN_ALIAS(name, target) BX_HIDDEN_ALIAS(cxx_own_##name, target)

/* At start-up (a step of front/init.h): decides where each derived form goes. If the program's symbol
 * lookup finds another definition of any form than libbobox.so's own, the derived forms go
 * to the C++ runtime's. Reads addresses the dynamic linker has resolved already: no malloc,
 * no lock. */

/* Where each derived form goes (operators.c: first to a stub that initialises the allocator). */
extern void *bx_cxx_target[BX_CXX_DERIVED];
/* For the start-up step (operators.c): with the addresses of our own 20 definitions and what the derived
 * forms do in a program that defines none of them, sets bx_cxx_target. */
void bx_cxx_choose(void *const own[BX_CXX_FORMS], void *const own_target[BX_CXX_DERIVED]);
/* `new` in the given form (BX_CXX__Znwm and the other allocating forms) could not get memory:
 * the runtime's definition of that form retries, calls the program's new-handler and throws
 * std::bad_alloc; nothrow forms without a runtime return NULL, the others abort. */
void *bx_cxx_new_failed(enum bx_cxx_form form, size_t size, size_t align, const void *tag);

#endif
