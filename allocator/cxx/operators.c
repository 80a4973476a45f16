/* operators.c - libbobox.so's C++ operator new and delete (cxx.h). Only in the shared
 * library.
 *
 * The same fast paths as malloc's and free's: libstdc++'s would call them one level deeper,
 * 84 instructions per new + sized delete pair against 66 (scripts/bench/fastpath.sh). Out of
 * memory, new hands the request to the C++ runtime's own definition of the form, which
 * retries, runs the program's new-handler and throws std::bad_alloc: C cannot throw. */
#define _GNU_SOURCE
#include <string.h>

#include "bobox.h"
#include "tools/checked.h"
#include "cxx/cxx.h"
#include "front/fastpath.h"
#include "os/options.h"

static BX_NOINLINE void *cxx_new_slow(size_t size) {
    /* Checked mode records the form, which delete[] and sized delete check. */
    void *p = BX_UNLIKELY(bx_options.check) ? bx_checked_alloc(BX_ALIGNMENT, size, BX_FORM_NEW) : bx_malloc_slow(size);
    return BX_LIKELY(p != NULL) ? p : bx_cxx_new_failed(BX_CXX__Znwm, size, 0, NULL);
}

static BX_HOT void *cxx_new(size_t size) {
    void *p = bx_alloc_fast(size);
    return BX_LIKELY(p != NULL) ? p : cxx_new_slow(size);
}

static void *cxx_new_nothrow(size_t size, const void *tag) {
    void *p = bobox_malloc(size);
    return BX_LIKELY(p != NULL) ? p : bx_cxx_new_failed(BX_CXX__ZnwmRKSt9nothrow_t, size, 0, tag);
}

/* An alignment that is not a power of two gets the runtime's answer (bad_alloc). */
static void *cxx_new_aligned(size_t size, size_t align) {
    void *p = bx_is_pow2(align) ? bx_alloc_aligned(align, size) : NULL;
    return BX_LIKELY(p != NULL) ? p : bx_cxx_new_failed(BX_CXX__ZnwmSt11align_val_t, size, align, NULL);
}

static void *cxx_new_aligned_nothrow(size_t size, size_t align, const void *tag) {
    void *p = bx_is_pow2(align) ? bx_alloc_aligned(align, size) : NULL;
    return BX_LIKELY(p != NULL) ? p : bx_cxx_new_failed(BX_CXX__ZnwmSt11align_val_tRKSt9nothrow_t, size, align, tag);
}

/* The derived forms: one indirect jump each. Until the allocator is initialised, the jump
 * lands on a stub that initialises it (cxx_setup then sets the real target) and jumps again. */
#define CXX_DERIVED_(name, ret, ret_kw, params, args) \
    BX_API ret name params { ret_kw((ret(*) params)bx_cxx_target[BX_CXX_##name]) args; } \
    BX_CXX_OWN_ALIAS(name, name) \
    static ret cxx_first_##name params { \
        bx_ensure_init(); \
        ret_kw((ret(*) params)bx_cxx_target[BX_CXX_##name]) args; \
    }
#define CXX_DERIVED(name, sig) BX_CXX_WITH_SIG(CXX_DERIVED_, name, sig)
BX_CXX_DERIVED_FORMS(CXX_DERIVED)
#undef CXX_DERIVED

#define CXX_FIRST(name, sig) [BX_CXX_##name] = (void *)cxx_first_##name,
void *bx_cxx_target[BX_CXX_DERIVED] = {BX_CXX_DERIVED_FORMS(CXX_FIRST)};
#undef CXX_FIRST

/* The base forms of new: aliases, no jump at all (delete's are in free.c). */
BX_OVERRIDE(_Znwm, cxx_new)
BX_OVERRIDE(_ZnwmSt11align_val_t, cxx_new_aligned)
BX_CXX_OWN_ALIAS(_Znwm, cxx_new)
BX_CXX_OWN_ALIAS(_ZnwmSt11align_val_t, cxx_new_aligned)
extern void cxx_own__ZdlPv(void) __attribute__((visibility("hidden")));
extern void cxx_own__ZdlPvSt11align_val_t(void) __attribute__((visibility("hidden")));

/* Checked mode's sized delete (aligned or not: the alignment follows in a register). */
static void cxx_delete_sized_checked(void *p, size_t size) {
    if (p) bx_free_form_checked(p, size, BX_FORM_NEW, "operator delete()");
}

/* Checked mode's new[] and delete[]: the array form is recorded and checked. */
static void *cxx_new_array_checked(size_t size) {
    void *p = bx_checked_alloc(BX_ALIGNMENT, size, BX_FORM_NEW_ARRAY);
    return BX_LIKELY(p != NULL) ? p : bx_cxx_new_failed(BX_CXX__Znam, size, 0, NULL);
}
static void *cxx_new_array_nothrow_checked(size_t size, const void *tag) {
    void *p = bx_checked_alloc(BX_ALIGNMENT, size, BX_FORM_NEW_ARRAY);
    return BX_LIKELY(p != NULL) ? p : bx_cxx_new_failed(BX_CXX__ZnamRKSt9nothrow_t, size, 0, tag);
}
static void cxx_delete_array_checked(void *p) {
    if (p) bx_free_form_checked(p, 0, BX_FORM_NEW_ARRAY, "operator delete[]()");
}
static void cxx_delete_array_sized_checked(void *p, size_t size) {
    if (p) bx_free_form_checked(p, size, BX_FORM_NEW_ARRAY, "operator delete[]()");
}

/* What each derived form does in a program that defines no operator of its own: new[] is
 * new, every delete is free (free finds the size and alignment from the address), but in
 * checked mode a sized delete checks the size. */
#define CXX_OWN_NEW cxx_new
#define CXX_OWN_NEW_NT cxx_new_nothrow
#define CXX_OWN_NEW_AL cxx_new_aligned
#define CXX_OWN_NEW_AL_NT cxx_new_aligned_nothrow
#define CXX_OWN_DEL bobox_free
#define CXX_OWN_DEL_SZ (bx_options.check ? (void *)cxx_delete_sized_checked : (void *)bobox_free)
#define CXX_OWN_DEL_NT bobox_free
#define CXX_OWN_DEL_AL bobox_free
#define CXX_OWN_DEL_SZ_AL CXX_OWN_DEL_SZ
#define CXX_OWN_DEL_AL_NT bobox_free

static void cxx_setup(void) {
#define CXX_OWN_TARGET(name, sig) [BX_CXX_##name] = (void *)CXX_OWN_##sig,
#define CXX_OWN_ADDRESS(name, sig) [BX_CXX_##name] = (void *)cxx_own_##name,
    void *const own_target[BX_CXX_DERIVED] = {BX_CXX_DERIVED_FORMS(CXX_OWN_TARGET)};
    void *const own[BX_CXX_FORMS] = {BX_CXX_DERIVED_FORMS(CXX_OWN_ADDRESS) BX_CXX_BASE_FORMS(CXX_OWN_ADDRESS)};
#undef CXX_OWN_TARGET
#undef CXX_OWN_ADDRESS
    void *checked_target[BX_CXX_DERIVED];
    memcpy(checked_target, own_target, sizeof checked_target);
    if (bx_options.check) {
        checked_target[BX_CXX__Znam] = (void *)cxx_new_array_checked;
        checked_target[BX_CXX__ZnamRKSt9nothrow_t] = (void *)cxx_new_array_nothrow_checked;
        checked_target[BX_CXX__ZdaPv] = (void *)cxx_delete_array_checked;
        checked_target[BX_CXX__ZdaPvRKSt9nothrow_t] = (void *)cxx_delete_array_checked;
        checked_target[BX_CXX__ZdaPvm] = (void *)cxx_delete_array_sized_checked;
    }
    bx_cxx_choose(own, checked_target);
}

BX_INIT_STEP(cxx_setup)
