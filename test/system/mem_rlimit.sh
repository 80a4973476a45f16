#!/usr/bin/env bash
# Out of memory under RLIMIT_AS=512 MB: NULL and ENOMEM every time, and only at the limit (each
# failure leaves less address space than the request plus 32 MB); there posix_memalign,
# aligned_alloc, calloc and realloc fail with ENOMEM too; after freeing, 400 MB and every size
# work again.
source "$(dirname "$0")/../lib/common.sh" || exit 1
need_lib
need_prog mem_rlimit
LD_PRELOAD=$SO "$PROGS/mem_rlimit" || fail "mem_rlimit exited with $?"
