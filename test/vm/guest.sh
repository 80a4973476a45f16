#!/bin/sh
# The tests inside the VM. Each prints "VMTEST PASS|FAIL|SKIP name[: why]"; the host counts them.
# usage: guest.sh S,N,C,T quick|full   (the packages, nodes, cores, threads/core the host booted)
expect=$1 suite=$2
B=/bobox T=/t
ncpu=$(grep -c ^processor /proc/cpuinfo)
export LD_LIBRARY_PATH=

pass() { echo "VMTEST PASS $*"; }
fail() { echo "VMTEST FAIL $*"; }

# Runs a program that prints its own VMTEST lines; a crash or a non-zero exit without a FAIL
# line is a failure of NAME, with the end of its output.
run_checks() { # name command...
    name=$1; shift
    "$@" >/tmp/out 2>&1
    rc=$?
    grep '^VMTEST ' /tmp/out
    if [ $rc -ne 0 ] && ! grep -q '^VMTEST FAIL' /tmp/out; then
        fail "$name: exit $rc: $(grep -v '^VMTEST' /tmp/out | tail -5 | tr '\n' '|')"
    fi
}

# Runs a program whose exit status is the result.
run_status() { # name command...
    name=$1; shift
    start=$(date +%s)
    if "$@" >/tmp/out 2>&1; then pass "$name ($(($(date +%s) - start))s)"
    else fail "$name: exit $?: $(tail -5 /tmp/out | tr '\n' '|')"; fi
}

# bobox-run's reader against the kernel: the header of --plan names the counts.
$B/bobox-run --plan $((2 * ncpu)) >/tmp/plan-scatter 2>&1
IFS=, read -r s n c t <<EOT
$expect
EOT
want="$ncpu CPUs allowed (0-$((ncpu - 1))) of $ncpu online, $c cores, $s packages, $n NUMA nodes"
if head -1 /tmp/plan-scatter | grep -qF "$want"; then pass bobox-run-topology
else fail "bobox-run-topology: got '$(head -1 /tmp/plan-scatter)', want '$want'"; fi

# scatter through bobox-run (both libraries), threads = 2 x CPUs: affinity, plan, tree order
run_checks affinity-scatter $B/bobox-run -- $T/vm_affinity $((2 * ncpu)) /tmp/plan-scatter "$expect" scatter
$B/bobox-run --pin=compact --plan $((ncpu + 3)) >/tmp/plan-compact 2>&1
BOBOX_PIN=compact run_checks affinity-compact env LD_PRELOAD=$B/libbobox-pin.so \
    $T/vm_affinity $((ncpu + 3)) /tmp/plan-compact "$expect" compact

# OpenMP place names: numa_domains binds each thread to its whole node, as the kernel lists it
$B/bobox-run --pin=numa_domains --plan 4 | awk 'NR > 2 { print $NF }' >/tmp/places.want
$B/bobox-run --pin=numa_domains -- $T/pin_threads 3 >/tmp/places.out 2>&1
sed -nE 's/.* thread=([0-9]+) .* allowed=([^ ]*)$/\1 \2/p' /tmp/places.out | sort -n | cut -d' ' -f2 >/tmp/places.got
why=
cmp -s /tmp/places.want /tmp/places.got || why="threads bound to $(tr '\n' ' ' </tmp/places.got), plan $(tr '\n' ' ' </tmp/places.want)"
while read -r place; do
    grep -qx "$place" /sys/devices/system/node/node*/cpulist || why="${why:-$place is no node's cpulist}"
done </tmp/places.got
[ -s /tmp/places.got ] || why="no thread reported: $(tail -3 /tmp/places.out | tr '\n' '|')"
if [ -z "$why" ]; then pass "places-numa-domains"; else fail "places-numa-domains: $why"; fi

# node placement of the allocator's memory
run_checks numa $B/bobox-run -- $T/vm_numa
# the policy of large objects (BOBOX_MEM), page by page: 4 KB pages, so that interleave alternates
if [ -d /sys/devices/system/node/node1 ]; then
    for mem in interleave bind:1; do
        run_checks "mem-$mem" env BOBOX_THP=never $B/bobox-run --mem=$mem -- $T/vm_numa --mem=$mem
    done
else
    echo "VMTEST SKIP mem-policy: the guest has one NUMA node"
fi

[ "$suite" = full ] || [ "$suite" = real ] || exit 0

# the multi-thread stress tests, pinned over every vCPU, one test case at a time
# (prodcons, three threads, takes minutes under TCG and adds no thread to the others)
[ "$suite" = full ] && for tag in churn model fork; do
    run_status "stress-unit-$tag" $B/bobox-run --no-alloc -- $T/unit_stress "[$tag]"
done
[ "$suite" = full ] && for tag in churn fork oom; do
    run_status "stress-preload-$tag" $B/bobox-run -- $T/preload_stress "[$tag]"
done

# real programs: output equal to the same program without our libraries
awk 'BEGIN { srand(27); for (i = 0; i < 300000; i++) printf "%d %s\n", int(rand() * 1e9), i }' >/tmp/in
/usr/bin/sort -S 4M /tmp/in >/tmp/sorted.ref
if $B/bobox-run -- /usr/bin/sort --parallel=$ncpu -S 4M /tmp/in >/tmp/sorted 2>/tmp/err && cmp -s /tmp/sorted /tmp/sorted.ref
then pass "real-sort-parallel-$ncpu"; else fail "real-sort-parallel-$ncpu: $(head -3 /tmp/err | tr '\n' '|') output differs"; fi
if $B/bobox-run -- /usr/bin/xz -T$ncpu --block-size=128KiB -c /tmp/in >/tmp/in.xz 2>/tmp/err &&
   /usr/bin/xz -dc /tmp/in.xz | cmp -s - /tmp/in
then pass "real-xz-T$ncpu"; else fail "real-xz-T$ncpu: $(head -3 /tmp/err | tr '\n' '|') round trip differs"; fi
