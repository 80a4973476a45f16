#!/usr/bin/env bash
# Robustness: a library constructor that creates a thread before the shim's constructor runs
# (lazy init inside the pthread_create wrapper), and a foreign malloc that starts a thread
# from its first call. Builds two small libraries from test/pin/src with the C compiler.
source "$(dirname "$0")/../lib/pin.sh" || exit 1
need "$PROGS/pin_threads"
CC=${CC:-cc}
command -v "$CC" >/dev/null || skip "no C compiler ($CC) to build the helper libraries"
SRC=$BOBOX_ROOT/test/pin/src
"$CC" -shared -fPIC -pthread -O1 -o "$TMP/libctor_threads.so" "$SRC/ctor_threads.c" || fail "building ctor_threads"
"$CC" -shared -fPIC -pthread -O1 -o "$TMP/libbump_malloc.so" "$SRC/bump_malloc.c" || fail "building bump_malloc"
printf 'int main(void) { return 0; }\n' >"$TMP/main.c"
"$CC" -pthread -o "$TMP/needs_ctor" "$TMP/main.c" -Wl,--no-as-needed -L"$TMP" -lctor_threads -Wl,-rpath,"$TMP" \
    || fail "building needs_ctor"

# libctor_threads.so is a dependency of the program, so its constructor runs before ours
plan=($(plan_cpus 2))
out=$(BOBOX_PIN_VERBOSE=1 LD_PRELOAD=$PIN "$TMP/needs_ctor" 2>"$TMP/err") || fail "needs_ctor failed"
echo "$out"; cat "$TMP/err"
grep -qx "ctor_thread cpus=1 cpu=${plan[1]}" <<<"$out" || fail "the constructor's thread was not pinned as thread 1"
grep -qE "^bobox-pin: thread=1 .* cpu=${plan[1]} " "$TMP/err" || fail "no report for the constructor's thread"

# somebody else's malloc, which starts a thread itself: the program runs, its threads are pinned
wide=$(plan_masks $((2 * NCPU)) | cut -d' ' -f$((NCPU + 1))-)
for preload in "$TMP/libbump_malloc.so:$PIN" "$PIN:$TMP/libbump_malloc.so"; do
    out=$(LD_PRELOAD=$preload timeout 20 "$PROGS/pin_threads" $((NCPU + 1)) --malloc) || fail "under $preload: rc=$?"
    echo "$out"
    [ "$(grep -c thread= <<<"$out")" -eq $((NCPU + 2)) ] || fail "under $preload: incomplete output"
    # NCPU + 2 threads and the malloc's own: every place gets one, the extra threads the wider
    # set of oversubscription (docs/pinning-oversubscription.md)
    ones=0
    while IFS= read -r line; do
        a=$(value allowed "$line")
        if [[ $a =~ ^[0-9]+$ ]]; then ones=$((ones + 1))
        else [[ " $wide " == *" $a "* ]] || fail "under $preload: a thread neither on one CPU nor oversubscribed: $line"; fi
    done < <(grep thread= <<<"$out")
    [ $ones -ge $((NCPU - 1)) ] || fail "under $preload: only $ones threads pinned to one CPU"
done
echo "ok"
