#!/bin/bash
# deps.sh: installs the Debian/Fedora packages xalloc needs to build, test,
# benchmark and package, when run as root; otherwise prints the exact
# command and fails. Usage: tools/deps.sh [build|check|bench|deb|rpm|all]
# (deb, rpm: what `make deb` / `make rpm` need to build the packages)
set -euo pipefail

what=${1:-check}
deb_build="gcc make pkg-config libc6-dev libunwind-dev"
deb_check="check clang libclang-rt-14-dev groff-base jq util-linux binutils shellcheck systemd
  valgrind strace gnuplot-nox libjemalloc2 libmimalloc2.0 libtcmalloc-minimal4
  redis-server redis-tools sqlite3 git python3 perl gcc
  debhelper devscripts dpkg-dev lintian rpm rpmlint dnf createrepo-c
  systemd-container debootstrap prometheus prometheus-node-exporter
  google-perftools libjemalloc-dev
  libnuma1 libnuma-dev numactl qemu-system-x86 linux-image-amd64 busybox-static cpio"
deb_bench="valgrind gnuplot-nox libjemalloc2 libmimalloc2.0 libtcmalloc-minimal4
  redis-server redis-tools hyperfine
  qemu-system-x86 linux-image-amd64 busybox-static numactl cpio"
rpm_build="gcc make pkgconf-pkg-config glibc-devel libunwind-devel"
# Build-Depends of debian/control plus the tools make deb runs.
deb_deb="debhelper dpkg-dev lintian check pkgconf"
# make rpm on Debian: rpmbuild --nodeps and rpmlint from Debian's packages.
deb_rpm="rpm rpmlint check pkgconf"
rpm_rpm="rpm-build rpmlint check-devel systemd-rpm-macros"
rpm_check="check-devel clang groff-base jq util-linux binutils redis sqlite git
  python3 perl rpm-build gperftools jemalloc-devel numactl-libs numactl"

case "$what" in
build) deb="$deb_build"; rpm="$rpm_build" ;;
check) deb="$deb_build $deb_check"; rpm="$rpm_build $rpm_check" ;;
bench) deb="$deb_build $deb_bench"; rpm="$rpm_build valgrind gnuplot jemalloc" ;;
deb) deb="$deb_build $deb_deb"; rpm="$rpm_build rpm-build dpkg-dev debhelper" ;;
rpm) deb="$deb_build $deb_rpm"; rpm="$rpm_build $rpm_rpm" ;;
all) deb="$deb_build $deb_check $deb_bench"; rpm="$rpm_build $rpm_check" ;;
*) echo "usage: $0 [build|check|bench|deb|rpm|all]" >&2; exit 2 ;;
esac
# shellcheck disable=SC2086
deb=$(echo $deb)
# shellcheck disable=SC2086
rpm=$(echo $rpm)

if command -v dpkg-query >/dev/null 2>&1; then
    missing=()
    for p in $deb; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
            missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && exit 0
    if [ "$(id -u)" -ne 0 ]; then
        echo "xalloc: missing packages; run as root:" >&2
        echo "  apt-get install -y ${missing[*]}" >&2
        exit 1
    fi
    echo "xalloc: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq || true
    apt-get install -y -qq "${missing[@]}" >/dev/null
elif command -v dnf >/dev/null 2>&1; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "xalloc: run as root: dnf install -y $rpm" >&2
        exit 1
    fi
    # shellcheck disable=SC2086
    dnf install -y $rpm
else
    echo "xalloc: unknown package manager; install the equivalents of: $deb" >&2
    exit 1
fi
