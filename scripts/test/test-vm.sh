#!/usr/bin/env bash
# Boots multi-socket, multi-node, Hyper-Threaded machines in QEMU (TCG) and runs test/vm/guest.sh
# in each: pinning against the guest kernel's topology, node placement of allocated memory,
# stress tests and real programs. Ends with "N passed, M failed". See docs/vm-tests.md.
#
# usage: scripts/test/test-vm.sh [--quick] [TOPOLOGY...]
#   TOPOLOGY  SxNxCxT: S packages, N nodes per package, C cores per node, T threads per core;
#             default: 2x2x2x2 4x1x2x1 1x1x4x2
#   --quick   placement and pinning tests only; without it the real programs also run in
#             each guest of at most 8 vCPUs, and the stress tests in the first of them
#             (TCG makes larger guests and repeated stress runs slow)
# environment:
#   BUILD=dir     the build to test (default build/): bobox-run, the libraries, test programs
#   VM_LIBS=dir   take bobox-run, libbobox.so and libbobox-pin.so from dir instead
#   VM_KERNEL=f   boot this vmlinuz instead of Debian's cloud kernel (cached in build/vm)
#   VM_TIMEOUT=s  seconds one boot may take (default 900, --quick 300)
#   VM_START=s    seconds until the guest must have begun its tests (default 120), else it is
#                 booted once more: under TCG a boot now and then hangs before its first line
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
BUILD=${BUILD:-$ROOT/build}
LIBS=${VM_LIBS:-$BUILD}
VMDIR=$BUILD/vm
suite=full topos=()
for a in "$@"; do
    case $a in
        --quick) suite=quick ;;
        -h|--help) sed -n '2,/^set /p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; exit 0 ;;
        [0-9]*x[0-9]*x[0-9]*x[0-9]*) topos+=("$a") ;;
        *) echo "test-vm.sh: unknown argument '$a' (try --help)" >&2; exit 2 ;;
    esac
done
[ ${#topos[@]} -gt 0 ] || topos=(2x2x2x2 4x1x2x1 1x1x4x2)
timeout_s=${VM_TIMEOUT:-$([ $suite = quick ] && echo 300 || echo 900)}
start_s=${VM_START:-120}
passed=0 failed=0 skipped=0 stress_done=0
failures=() skips=()
mkdir -p "$VMDIR"

fail_all() { # reason: nothing could boot
    echo "FAIL vm: $1"
    echo "0 passed, 1 failed"
    exit 1
}

# ---- what the VM needs from the host -------------------------------------------------------
QEMU=$(command -v qemu-system-x86_64) || fail_all "qemu-system-x86_64 not found (scripts/deps.sh installs qemu-system-x86)"
BUSYBOX=$(command -v busybox) || fail_all "busybox not found (scripts/deps.sh installs busybox-static)"
readelf -l "$BUSYBOX" 2>/dev/null | grep -q 'program interpreter' &&
    fail_all "$BUSYBOX is dynamically linked; the initramfs needs busybox-static"
command -v cpio >/dev/null || fail_all "cpio not found (scripts/deps.sh installs cpio)"

# Debian's cloud kernel (NUMA, virtio, serial console built in), unpacked, never installed.
kernel=${VM_KERNEL:-}
if [ -z "$kernel" ]; then
    kernel=$(ls "$VMDIR"/kernel/boot/vmlinuz-* 2>/dev/null | head -1)
    if [ -z "$kernel" ]; then
        kernel_pkg() {
            apt-cache depends linux-image-cloud-amd64 2>/dev/null |
                sed -nE 's/^ *Depends: (linux-image-[0-9].*-cloud-amd64)$/\1/p' | head -1
        }
        pkg=$(kernel_pkg)
        if [ -z "$pkg" ] && [ "$(id -u)" -eq 0 ]; then # no package lists yet (a fresh machine)
            apt-get update -qq >/dev/null 2>&1
            pkg=$(kernel_pkg)
        fi
        [ -n "$pkg" ] || fail_all "apt-cache knows no linux-image-cloud-amd64 (run apt-get update)"
        rm -rf "$VMDIR/deb" && mkdir -p "$VMDIR/deb"
        (cd "$VMDIR/deb" && apt-get download "$pkg" >/dev/null 2>"$VMDIR/deb/download.log") ||
            fail_all "apt-get download $pkg failed: $(tail -1 "$VMDIR/deb/download.log")"
        dpkg-deb -x "$VMDIR"/deb/"$pkg"_*.deb "$VMDIR/kernel" || fail_all "dpkg-deb -x of $pkg failed"
        kernel=$(ls "$VMDIR"/kernel/boot/vmlinuz-* 2>/dev/null | head -1)
        [ -n "$kernel" ] || fail_all "$pkg holds no boot/vmlinuz-*"
    fi
fi
[ -r "$kernel" ] || fail_all "cannot read the kernel $kernel"

# ---- the initramfs ---------------------------------------------------------------------------
guest_bins=("$LIBS/bobox-run" "$LIBS/libbobox.so" "$LIBS/libbobox-pin.so"
            "$BUILD/test/vm/vm_affinity" "$BUILD/test/vm/vm_numa" "$BUILD/test/progs/pin_threads")
[ $suite = full ] && guest_bins+=("$BUILD/test/unit_stress" "$BUILD/test/preload_stress")
for f in "${guest_bins[@]}"; do
    [ -f "$f" ] || fail_all "$f is missing (make test-vm builds it)"
done
real_progs=(/usr/bin/sort /usr/bin/xz)
if [ $suite = full ]; then
    for f in "${real_progs[@]}"; do [ -x "$f" ] || fail_all "$f is missing (coreutils, xz-utils)"; done
else
    real_progs=()
fi

stage=$VMDIR/root
rm -rf "$stage" && mkdir -p "$stage"/{bin,usr/bin,bobox,t,proc,sys,dev,tmp}
cp "$BUSYBOX" "$stage/bin/busybox"
install -m 755 test/vm/init.sh "$stage/init"
install -m 644 test/vm/guest.sh "$stage/t/guest.sh"
cp "$LIBS/bobox-run" "$LIBS/libbobox.so" "$LIBS/libbobox-pin.so" "$stage/bobox/"
for f in "${guest_bins[@]:3}"; do cp "$f" "$stage/t/"; done
for f in "${real_progs[@]}"; do cp "$f" "$stage/usr/bin/"; done
# the shared libraries every program and library needs, at the paths the loader looks in
for f in "${guest_bins[@]}" "${real_progs[@]}"; do
    ldd "$f" 2>/dev/null | sed -nE 's/.*=> (\/[^ ]+) .*/\1/p; s/^[[:space:]]*(\/[^ ]+) .*/\1/p'
done | sort -u | while read -r lib; do
    mkdir -p "$stage$(dirname "$lib")" && cp -L "$lib" "$stage$lib"
done
[ -e "$stage/lib64/ld-linux-x86-64.so.2" ] || fail_all "ldd found no dynamic loader for the guest programs"
initrd=$VMDIR/initrd.gz
(cd "$stage" && find . | cpio -o -H newc --quiet | gzip -1 >"$initrd") || fail_all "cpio of the initramfs failed"

# ---- boot each topology ------------------------------------------------------------------------
# One guest, its console to `log`; exit status 3 when it has not begun its tests (VMTEST BEGIN,
# the first line of init.sh) within start_s: seen about once in 30 loaded boots, an empty
# console, the guest stuck before init (TCG, 16 vCPUs) until the timeout.
run_guest() { # log qemu-log qemu-args...
    local log=$1 qlog=$2; shift 2
    rm -f "$log" # not the last boot's BEGIN
    timeout --kill-after=10 "$timeout_s" "$QEMU" "$@" >"$qlog" 2>&1 &
    local pid=$! waited=0 begun=0
    while kill -0 $pid 2>/dev/null; do
        if [ $begun = 0 ]; then
            if grep -aq '^VMTEST BEGIN' "$log" 2>/dev/null; then begun=1
            elif [ $waited -ge "$start_s" ]; then kill $pid; wait $pid; return 3; fi
        fi
        sleep 1
        waited=$((waited + 1))
    done
    wait $pid
}

boot() { # SxNxCxT
    local topo=$1 s n c t
    IFS=x read -r s n c t <<<"$topo"
    local nodes=$((s * n)) cores=$((s * n * c)) cpus=$((s * n * c * t))
    local node_mb=$(((2048 + nodes - 1) / nodes)) # 2 GB in all: the stress tests need it
    [ $node_mb -ge 384 ] || node_mb=384
    local args=(-accel tcg -cpu qemu64,vendor=GenuineIntel -m $((nodes * node_mb))M
                -smp "$cpus,sockets=$s,cores=$((n * c)),threads=$t")
    for ((i = 0; i < nodes; i++)); do
        args+=(-object "memory-backend-ram,id=m$i,size=${node_mb}M" -numa "node,nodeid=$i,memdev=m$i")
    done
    for ((p = 0; p < s; p++)); do
        for ((k = 0; k < n * c; k++)); do
            args+=(-numa "cpu,node-id=$((p * n + k / c)),socket-id=$p,core-id=$k")
        done
    done
    local log=$VMDIR/$topo.log start=$SECONDS guest_suite=$suite
    # the heavy tests at 8 vCPUs or fewer (TCG): the stress tests in the first such guest,
    # the real programs in each
    if [ $suite = full ]; then
        if [ $cpus -gt 8 ]; then guest_suite=quick
        elif [ $stress_done = 1 ]; then guest_suite=real
        else stress_done=1; fi
    fi
    local rc attempt
    for attempt in 1 2; do
        run_guest "$log" "$VMDIR/$topo.qemu.log" "${args[@]}" -nodefaults -display none -no-reboot \
            -serial "file:$log" -kernel "$kernel" -initrd "$initrd" \
            -append "console=ttyS0 quiet panic=-1 bobox.expect=$s,$nodes,$cores,$t bobox.suite=$guest_suite"
        rc=$?
        [ $rc = 3 ] && [ $attempt = 1 ] || break
        echo "  NOTE boot-$topo: no test begun within ${start_s}s (console: $(cat "$log" 2>/dev/null | wc -c) bytes); booting again"
    done
    local p=0 f=0 k=0
    echo "== $topo: $s packages x $n nodes x $c cores x $t threads ($cpus vCPUs), $((SECONDS - start))s, log $log"
    while IFS= read -r line; do
        case $line in
            "VMTEST PASS "*) p=$((p + 1)); echo "  PASS ${line#VMTEST PASS }" ;;
            "VMTEST SKIP "*) k=$((k + 1)); echo "  SKIP ${line#VMTEST SKIP }"; skips+=("$topo: ${line#VMTEST SKIP }") ;;
            "VMTEST FAIL "*) f=$((f + 1)); echo "  FAIL ${line#VMTEST FAIL }"; failures+=("$topo: ${line#VMTEST FAIL }") ;;
        esac
    done < <(tr -d '\r' <"$log" 2>/dev/null | grep -a '^VMTEST ')
    if ! grep -aq '^VMTEST END' "$log" 2>/dev/null; then
        local why="qemu exit $rc"
        [ $rc -eq 124 ] && why="no end within ${timeout_s}s"
        [ $rc -eq 3 ] && why="no test begun within ${start_s}s, twice"
        grep -aq '^VMTEST BEGIN' "$log" 2>/dev/null || why="$why, the guest never started its tests"
        f=$((f + 1))
        echo "  FAIL boot-$topo: $why; $({ tail -n 3 "$VMDIR/$topo.qemu.log"; tail -n 3 "$log"; } 2>/dev/null | tr -d '\r' | tr '\n' '|')"
        failures+=("$topo: boot: $why")
    elif [ $((p + f)) -eq 0 ]; then
        f=$((f + 1)); failures+=("$topo: the guest ran no test")
    fi
    passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + k))
}

for topo in "${topos[@]}"; do boot "$topo"; done
source "$ROOT/scripts/test/summary.sh" || exit 2
print_summary
