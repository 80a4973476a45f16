#!/usr/bin/env bash
# Guards against: a system call we make that docs/syscalls.md does not list, or an unusual one at start-up.
# test: serial
# (serial: under load pthread_join may wait in futex in one of the two runs only)
source "$(dirname "$0")/../lib/field.sh" || exit 1
need_lib; need_cmd strace cc
DOC=$BOBOX_ROOT/docs/syscalls.md
[ -f "$DOC" ] || fail "$DOC is missing"
build_c "$TMP/phases" "$FIELD_SRC/syscall_phases.c"
# names of the system calls in an strace -f log; start-up: those before main's first marker
names() { sed -E 's/^[0-9]+ +//; /^(<\.\.\.|\+\+\+|---)/d; s/\(.*//' "$1" | sort -u; }
startup() { sed -n '/write(-1, "PHASE /q; p' "$1" > "$1.start"; names "$1.start"; }
timeout 120 strace -f -o "$TMP/plain.log" "$TMP/phases" || fail "strace of the plain program failed"
BOBOX_DECAY_MS=100 LD_PRELOAD=$SO timeout 120 strace -f -o "$TMP/bobox.log" "$TMP/phases" || fail "strace under the preload failed"
BOBOX_THP=always BOBOX_STATS=1 BOBOX_VERBOSE=1 LD_PRELOAD=$SO timeout 120 strace -f -o "$TMP/settings.log" "$TMP/phases" 2>/dev/null ||
    fail "strace under the preload with settings failed"
extra=$(comm -13 <(names "$TMP/plain.log") <(cat <(names "$TMP/bobox.log") <(names "$TMP/settings.log") | sort -u))
echo "system calls made only with the preload: $(echo $extra)"
for s in $extra; do grep -qE "\`$s(\`|\()" "$DOC" || fail "$s is made by the allocator but not in docs/syscalls.md"; done
# The preload's start-up: reading files and settings, drawing its secrets; nothing else.
start_extra=$(comm -13 <(startup "$TMP/plain.log") <(startup "$TMP/bobox.log"))
echo "at start-up only with the preload: $(echo $start_extra)"
for s in $start_extra; do
    case $s in
        openat|read|close|newfstatat|mmap|mprotect|munmap|pread64|sysinfo|getrandom|prlimit64|brk) ;;
        *) fail "unexpected system call at start-up under the preload: $s" ;;
    esac
done
echo PASS
