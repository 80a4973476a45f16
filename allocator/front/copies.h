/* copies.h - the interposed copies (copies.c): where their jumps go. */
#ifndef BX_COPIES_H
#define BX_COPIES_H

#include "base/common.h"

/* Once the allocator works (dlsym may allocate): each copy jumps to glibc's function, or, when
 * `check`, to its checked twin. */
void bx_copies_start(bool check);

#endif
