#!/bin/bash
# run-guest.sh: boots a qemu (TCG) guest with NODES NUMA nodes from a Debian
# kernel and a busybox initramfs holding the freshly built library, the
# test programs and the anchors' .so files, runs tests/numa/guest-init.sh
# in it and leaves the serial console in OUT/console-NODES-MODE.log.
# Usage: tests/numa/run-guest.sh check|bench NODES OUT BUILD
# Environment: XA_GUEST_KERNEL (a vmlinuz; default: the newest readable
# /boot/vmlinuz-*, else linux-image-amd64 fetched with apt-get download),
# XA_GUEST_TIMEOUT (seconds, default 600), XA_BENCH_ROUNDS (default 20),
# XA_NUMA_LIB (the library to test instead of BUILD/libxalloc.so.1, e.g.
# another branch's build, for a side-by-side table).
# Exit status: qemu's (124 when the time limit killed it).
set -euo pipefail

mode=$1 nodes=$2 out=$3 build=$4
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
build=$(cd "$build" && pwd)

# ---- kernel ----
kernel=${XA_GUEST_KERNEL:-}
if [ -z "$kernel" ]; then
    for k in $(find /boot -maxdepth 1 -name 'vmlinuz-*-amd64' 2>/dev/null | sort -V -r); do
        if [ -r "$k" ]; then kernel=$k; break; fi
    done
fi
if [ -z "$kernel" ]; then
    kdir=$build/numa/kernel
    kernel=$(find "$kdir/boot" -maxdepth 1 -name 'vmlinuz-*' 2>/dev/null | head -1 || true)
    if [ -z "$kernel" ]; then
        ver=$(apt-cache depends linux-image-amd64 | sed -n 's/.*Depends: \(linux-image-[^ ]*\)/\1/p' | head -1)
        echo "numa: fetching $ver (apt-get download) into $kdir" >&2
        mkdir -p "$kdir"
        (cd "$kdir" && apt-get download -q "$ver" >/dev/null && dpkg-deb -x ./*.deb .)
        kernel=$(find "$kdir/boot" -maxdepth 1 -name 'vmlinuz-*' | head -1)
    fi
fi

# ---- initramfs ----
root=$(mktemp -d "$out/root.XXXXXX")
trap 'rm -rf "$root"' EXIT
mkdir -p "$root"/{bin,usr/bin,x,proc,sys,dev,tmp,run}
cp /bin/busybox "$root/bin/busybox"
cp "$here/guest-init.sh" "$root/init"
chmod 755 "$root/init"

# Copies an ELF file and the shared libraries it needs, at their paths.
copy_with_deps() {
    local f=$1 dest=$2
    mkdir -p "$root$(dirname "$dest")"
    cp -L "$f" "$root$dest"
    ldd "$f" 2>/dev/null | grep -o '/[^ ]*' | while read -r lib; do
        [ -e "$root$lib" ] && continue
        mkdir -p "$root$(dirname "$lib")"
        cp -L "$lib" "$root$lib"
    done
}
copy_with_deps "${XA_NUMA_LIB:-$build/libxalloc.so.1}" /x/libxalloc.so.1
copy_with_deps "$build/numa/numa_probe" /x/numa_probe
copy_with_deps "$build/numa/bench_numa" /x/bench_numa
copy_with_deps "$(command -v numactl)" /usr/bin/numactl
if [ -x "$build/xalloc-stat" ]; then
    copy_with_deps "$build/xalloc-stat" /x/xalloc-stat
fi
if [ "$mode" = bench ]; then
    for lib in libjemalloc.so.2 libmimalloc.so.2 libtcmalloc_minimal.so.4; do
        p=/usr/lib/x86_64-linux-gnu/$lib
        if [ -e "$p" ]; then
            copy_with_deps "$p" "$p"
        else
            echo "numa: $p missing (tools/deps.sh bench installs it)" >&2
        fi
    done
fi
initrd=$out/initrd-$nodes-$mode.cpio.gz
(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) >"$initrd"

# ---- qemu ----
# 4 nodes: one CPU each; 2 nodes: two CPUs each. 512 MiB per node.
if [ "$nodes" -ge 4 ]; then per=1; else per=2; fi
cpus=$((nodes * per))
args=(-accel tcg -cpu max -smp "$cpus" -m "$((nodes * 512))M")
for ((n = 0; n < nodes; n++)); do
    first=$((n * per)) lastc=$((n * per + per - 1))
    args+=(-object "memory-backend-ram,id=m$n,size=512M"
        -numa "node,nodeid=$n,cpus=$first-$lastc,memdev=m$n")
done
for ((a = 0; a < nodes; a++)); do
    for ((b = 0; b < nodes; b++)); do
        [ $a -eq $b ] && continue
        args+=(-numa "dist,src=$a,dst=$b,val=$((a / 2 == b / 2 ? 16 : 22))")
    done
done
log=$out/console-$nodes-$mode.log
rc=0
timeout "${XA_GUEST_TIMEOUT:-600}" qemu-system-x86_64 "${args[@]}" \
    -kernel "$kernel" -initrd "$initrd" \
    -append "console=ttyS0 quiet panic=-1 xa_mode=$mode xa_rounds=${XA_BENCH_ROUNDS:-20}" \
    -nographic -no-reboot -serial stdio -monitor none -display none -nodefaults \
    </dev/null >"$log" 2>&1 || rc=$?
rm -f "$initrd"
exit $rc
