# Shared by scripts/bench/bench.sh and scripts/bench/fastpath.sh (sourced): allocator discovery and
# dependency installation. Expects ROOT to be set.

# Installs the given Debian packages, only those missing (idempotent). Never fatal: a
# missing baseline allocator is skipped later with a message.
bench_ensure_pkgs() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "bench: installing ${missing[*]}" >&2
  local sudo=; [ "$(id -u)" -ne 0 ] && sudo=sudo
  if ! DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1; then
    DEBIAN_FRONTEND=noninteractive $sudo apt-get update -qq >/dev/null 2>&1
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
      || echo "bench: WARNING: could not install ${missing[*]}" >&2
  fi
}

# Path of a shared library by soname: the dynamic linker's cache first, then the package list.
bench_find_lib() {  # soname package
  local p
  p=$(ldconfig -p 2>/dev/null | awk -v s="$1" '$1 == s && /x86-64|64bit/ {print $NF; exit}')
  [ -z "$p" ] && p=$(ldconfig -p 2>/dev/null | awk -v s="$1" '$1 == s {print $NF; exit}')
  [ -z "$p" ] && p=$(dpkg -L "$2" 2>/dev/null | grep -E "/$1\$" | head -1)
  [ -n "$p" ] && [ -e "$p" ] && echo "$p"
}

# Where libbobox.so and libbobox-pin.so are taken from: bench.sh points this at a snapshot
# so that a rebuild during a long run cannot change the library under test.
: "${BENCH_BOBOX_DIR:=$ROOT/build}"

# Every allocator configuration the suite knows, in run order.
# bobox-pin-* are the pinning comparison (multi-threaded workloads only).
BENCH_ALL_ALLOCS="glibc jemalloc mimalloc tcmalloc bobox bobox-pin bobox-pin-compact bobox-pin-none"

# Sets ALLOC_PRELOAD and ALLOC_ENV (extra VAR=VALUE) for a configuration; returns 1 with
# ALLOC_WHY set when its library is missing.
bench_alloc_setup() {
  ALLOC_PRELOAD= ALLOC_ENV= ALLOC_WHY=
  local lib
  case "$1" in
    glibc) ;;
    jemalloc) lib=$(bench_find_lib libjemalloc.so.2 libjemalloc2) || true
              [ -n "$lib" ] || { ALLOC_WHY="libjemalloc.so.2 not found (package libjemalloc2)"; return 1; }
              ALLOC_PRELOAD=$lib ;;
    mimalloc) lib=$(bench_find_lib libmimalloc.so.2 libmimalloc2.0) || true
              [ -n "$lib" ] || { ALLOC_WHY="libmimalloc.so.2 not found (package libmimalloc2.0)"; return 1; }
              ALLOC_PRELOAD=$lib ;;
    tcmalloc) lib=$(bench_find_lib libtcmalloc_minimal.so.4 libtcmalloc-minimal4) || true
              [ -n "$lib" ] || { ALLOC_WHY="libtcmalloc_minimal.so.4 not found (package libtcmalloc-minimal4)"; return 1; }
              ALLOC_PRELOAD=$lib ;;
    bobox)    [ -f "$BENCH_BOBOX_DIR/libbobox.so" ] || { ALLOC_WHY="build/libbobox.so not built (make all)"; return 1; }
              ALLOC_PRELOAD=$BENCH_BOBOX_DIR/libbobox.so ;;
    bobox-prof) # the heap profiler on at its default rate: its cost (docs/profiling.md)
              [ -f "$BENCH_BOBOX_DIR/libbobox.so" ] || { ALLOC_WHY="build/libbobox.so not built (make all)"; return 1; }
              ALLOC_PRELOAD=$BENCH_BOBOX_DIR/libbobox.so
              ALLOC_ENV=BOBOX_PROF=${TMPDIR:-/tmp}/bobox-bench-prof ;;
    bobox-copies) # the program's copies checked against object bounds (BOBOX_CHECK=copies, docs/hardening.md)
              [ -f "$BENCH_BOBOX_DIR/libbobox.so" ] || { ALLOC_WHY="build/libbobox.so not built (make all)"; return 1; }
              ALLOC_PRELOAD=$BENCH_BOBOX_DIR/libbobox.so
              ALLOC_ENV=BOBOX_CHECK=copies ;;
    bobox-pin*)
              [ -f "$BENCH_BOBOX_DIR/libbobox.so" ] || { ALLOC_WHY="build/libbobox.so not built (make all)"; return 1; }
              [ -f "$BENCH_BOBOX_DIR/libbobox-pin.so" ] || { ALLOC_WHY="build/libbobox-pin.so not built"; return 1; }
              ALLOC_PRELOAD=$BENCH_BOBOX_DIR/libbobox.so:$BENCH_BOBOX_DIR/libbobox-pin.so
              case "$1" in
                bobox-pin) ALLOC_ENV=BOBOX_PIN=scatter ;;
                bobox-pin-compact) ALLOC_ENV=BOBOX_PIN=compact ;;
                bobox-pin-none) ALLOC_ENV=BOBOX_PIN=none ;;
                *) ALLOC_WHY="unknown allocator $1"; return 1 ;;
              esac ;;
    /*.so*)   [ -f "$1" ] || { ALLOC_WHY="$1 not found"; return 1; }  # another build, for A/B runs
              ALLOC_PRELOAD=$1 ;;
    *) ALLOC_WHY="unknown allocator $1 (known: $BENCH_ALL_ALLOCS, or a library's absolute path)"; return 1 ;;
  esac
  return 0
}

# Machine description, key=value lines, for results/README.md.
bench_machine_info() {
  local cpu nodes
  cpu=$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1)
  nodes=$(ls -d /sys/devices/system/node/node[0-9]* 2>/dev/null | wc -l)
  echo "cpu=${cpu:-unknown}"
  echo "cpus=$(nproc)"
  echo "cores_per_socket=$(lscpu 2>/dev/null | sed -n 's/^Core(s) per socket: *//p' | head -1)"
  echo "sockets=$(lscpu 2>/dev/null | sed -n 's/^Socket(s): *//p' | head -1)"
  echo "threads_per_core=$(lscpu 2>/dev/null | sed -n 's/^Thread(s) per core: *//p' | head -1)"
  echo "numa_nodes=${nodes:-1}"
  echo "hypervisor=$(lscpu 2>/dev/null | sed -n 's/^Hypervisor vendor: *//p' | head -1)"
  echo "memory=$(awk '/MemTotal/ {printf "%.1f GB", $2/1048576}' /proc/meminfo)"
  echo "kernel=$(uname -r)"
  echo "os=$(. /etc/os-release 2>/dev/null; echo "${PRETTY_NAME:-unknown}")"
  echo "glibc=$(ldd --version 2>/dev/null | head -1 | awk '{print $NF}')"
  echo "gcc=$(gcc -dumpfullversion 2>/dev/null)"
  echo "thp=$(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null)"
  local p
  for p in libjemalloc2 libmimalloc2.0 libtcmalloc-minimal4; do
    echo "pkg_$p=$(dpkg-query -W -f='${Version}' "$p" 2>/dev/null)"
  done
}
