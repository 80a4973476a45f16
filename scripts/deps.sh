#!/usr/bin/env bash
# Installs the Debian packages the build and tests need, only those missing (idempotent).
# Usage: scripts/deps.sh [extra-package...]
set -euo pipefail
# The real-program tests (test/system/alloc_real_*.sh) also run git, perl and Debian's python3
# on a slice of its own regression tests: libpython3.X-testsuite, X.Y of /usr/bin/python3
# (3.11 on Debian 12; when python3 is not installed yet, the version python3 depends on).
# libc++: the C++ operators are also tested against LLVM's C++ runtime (alloc_libcxx.sh).
# strace: pin_tree counts which processes read the CPU topology.
# man-db, pkg-config: the install tests read the installed man pages and build with bobox.pc.
# The field suite (test/system/field_*.sh) runs tools and runtimes stacked with the preload:
# sotruss (libc-devtools), libseccomp-dev, faketime, fakeroot, heaptrack, valgrind, man-db,
# openjdk-17-jdk-headless, python3-numpy, ruby, nodejs (Debian's /usr/bin/node).
# qemu-system-x86, busybox-static, cpio, xz-utils: the VM tests (scripts/test/test-vm.sh) boot a
# busybox initramfs; xz is one of the real programs run in the guest.
# google-perftools (google-pprof) reads the heap profiles; python3-jsonschema checks the JSON
# statistics against docs/stats.schema.json (test/system/prof_*.sh, stats_json.sh).
# postgresql (a database server under the preload, alloc_real_postgres.sh) and redis-server
# (linked with jemalloc: mallctl answered by bobox, alloc_real_redis.sh) are optional: their
# packages start a server when installed, which some containers refuse; the tests then skip.
py=
if [ -x /usr/bin/python3 ]; then
  py=$(/usr/bin/python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null || true)
fi
[ -n "$py" ] || py=$(apt-cache depends python3 2>/dev/null | sed -nE 's/^ *Depends: python(3\.[0-9]+)$/\1/p' | head -1)
pkgs=(build-essential catch2 python3 clang libclang-rt-14-dev git perl strace libc++-dev libc++abi-dev "libpython${py:-3.11}-testsuite"
      libc-devtools libseccomp-dev faketime fakeroot heaptrack valgrind man-db pkg-config
      openjdk-17-jdk-headless python3-numpy ruby nodejs
      qemu-system-x86 busybox-static cpio xz-utils
      google-perftools python3-jsonschema "$@")
optional=(postgresql redis-server)
absent() {  # the packages of "$@" not installed
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || echo "$p"
  done
}
mapfile -t missing < <(absent "${pkgs[@]}")
mapfile -t missing_optional < <(absent "${optional[@]}")
[ ${#missing[@]} -eq 0 ] && [ ${#missing_optional[@]} -eq 0 ] && exit 0
echo "deps.sh: installing ${missing[*]} ${missing_optional[*]}" >&2
SUDO=; [ "$(id -u)" -ne 0 ] && SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
[ ${#missing[@]} -eq 0 ] || $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
if [ ${#missing_optional[@]} -gt 0 ]; then
  $SUDO apt-get install -y -qq --no-install-recommends "${missing_optional[@]}" >/dev/null ||
    echo "deps.sh: warning: could not install ${missing_optional[*]}; the tests that need them skip" >&2
fi
