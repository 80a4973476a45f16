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
# mimalloc3 and snmalloc are built from source (bench_build_rivals): Debian 12 packages neither.
# bobox-pin-* are the pinning comparison (multi-threaded workloads only).
BENCH_ALL_ALLOCS="glibc jemalloc mimalloc mimalloc3 snmalloc tcmalloc bobox bobox-pin bobox-pin-compact bobox-pin-none"

# The rivals built from source: name, archive stem (also the unpacked folder), git tag, repository.
BENCH_RIVALS_DIR=$ROOT/build/rivals
BENCH_RIVALS="mimalloc3 mimalloc-3.4.3 v3.4.3 https://github.com/microsoft/mimalloc
snmalloc snmalloc-0.7.5 0.7.5 https://github.com/microsoft/snmalloc"

# The library kept for a rival: build/rivals/lib<stem>.so (the version in the name, so a new
# version builds anew; snmalloc's is its shim, libsnmallocshim.so).
bench_rival_lib() {  # name
  local stem
  stem=$(awk -v n="$1" '$1 == n {print $2}' <<<"$BENCH_RIVALS")
  [ -n "$stem" ] && echo "$BENCH_RIVALS_DIR/lib$stem.so"
}

# Why a rival's library is missing, for bench_alloc_setup's message (set by bench_build_rival).
declare -gA BENCH_RIVAL_WHY=()

# Unpacks (or clones) and builds one rival into build/rivals/, unless its library is already
# there. Never fatal: on failure it returns 1 with BENCH_RIVAL_WHY[name] set, and the suite
# skips that allocator. The build log stays in build/rivals/NAME.log.
bench_build_rival() {  # name stem tag url
  local name=$1 stem=$2 tag=$3 url=$4 lib archive= d src log
  lib=$(bench_rival_lib "$name")
  [ -f "$lib" ] && return 0
  for d in "${BOBOX_RIVALS_DIR:-}" "$ROOT/../shared/rivals"; do
    [ -n "$d" ] && [ -f "$d/$stem.tar.gz" ] && { archive=$d/$stem.tar.gz; break; }
  done
  command -v cmake >/dev/null && command -v g++ >/dev/null || bench_ensure_pkgs cmake g++
  if ! command -v cmake >/dev/null || ! command -v g++ >/dev/null; then
    BENCH_RIVAL_WHY[$name]="not built: cmake or g++ missing"; return 1
  fi
  mkdir -p "$BENCH_RIVALS_DIR/src"
  log=$BENCH_RIVALS_DIR/$name.log
  src=$(mktemp -d "$BENCH_RIVALS_DIR/src/$stem.XXXXXX")  # private: two runs may build at once
  if [ -n "$archive" ]; then
    tar -xzf "$archive" -C "$src" >"$log" 2>&1
  else
    GIT_TERMINAL_PROMPT=0 timeout 300 git clone -q --depth 1 --branch "$tag" "$url" "$src/$stem" >"$log" 2>&1
  fi
  if [ ! -d "$src/$stem" ]; then
    rm -rf "$src"
    BENCH_RIVAL_WHY[$name]="not built: no $stem.tar.gz in \$BOBOX_RIVALS_DIR or ../shared/rivals, and git clone of $url failed"
    return 1
  fi
  echo "bench: building $name from ${archive:-$url} (about a minute; log: ${log#$ROOT/})" >&2
  local jobs; jobs=$(nproc 2>/dev/null || echo 2)
  (
    cd "$src/$stem" || exit 1
    case "$name" in
      mimalloc3) cmake -B out -DCMAKE_BUILD_TYPE=Release -DMI_BUILD_TESTS=OFF &&
                 make -C out -j"$jobs" mimalloc &&
                 cp -L out/libmimalloc.so "$lib.tmp" ;;
      snmalloc)  cmake -B out -DCMAKE_BUILD_TYPE=Release -DSNMALLOC_BUILD_TESTING=OFF &&
                 make -C out -j"$jobs" &&
                 cp -L out/libsnmallocshim-checks.so "${lib%.so}-checks.so" &&
                 cp -L out/libsnmallocshim.so "$lib.tmp" ;;
    esac
  ) >>"$log" 2>&1 && mv -f "$lib.tmp" "$lib"
  rm -rf "$src" "$lib.tmp"  # only the library is kept
  rmdir "$BENCH_RIVALS_DIR/src" 2>/dev/null
  [ -f "$lib" ] && return 0
  BENCH_RIVAL_WHY[$name]="build failed (${log#$ROOT/})"
  return 1
}

# Builds the rivals among the given allocators (all of them with no argument) that are not
# built yet.
bench_build_rivals() {  # [allocator..]
  local want=" ${*:-$BENCH_ALL_ALLOCS} " name stem tag url
  while read -r name stem tag url; do
    case "$want" in *" $name "*) bench_build_rival "$name" "$stem" "$tag" "$url" </dev/null ;; esac
  done <<<"$BENCH_RIVALS"
  return 0
}

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
    mimalloc3|snmalloc)
              lib=$(bench_rival_lib "$1")
              [ -f "$lib" ] || { ALLOC_WHY=${BENCH_RIVAL_WHY[$1]:-"${lib#$ROOT/} not built (bench.sh builds it)"}; return 1; }
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
  local name stem tag url
  while read -r name stem tag url; do
    [ -f "$(bench_rival_lib "$name")" ] && echo "rival_$name=${stem#*-}"
  done <<<"$BENCH_RIVALS"
}
