#!/bin/busybox sh
# shellcheck shell=dash
# guest-init.sh: /init of the initramfs that tests/numa/run-guest.sh boots
# under qemu (TCG) with several NUMA nodes. Runs the placement checks
# (xa_mode=check) or the node-local benchmark (xa_mode=bench) with the
# allocator under test preloaded, prints everything on the serial console
# between markers that the host parses, and powers off.
/bin/busybox --install -s /bin
export PATH=/bin:/usr/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null
mkdir -p /dev/shm /run /tmp
mount -t tmpfs shm /dev/shm
mount -t tmpfs tmp /tmp
mount -t tmpfs run /run

mode=$(sed -n 's/.*xa_mode=\([a-z]*\).*/\1/p' /proc/cmdline)
nodes=$(find /sys/devices/system/node -maxdepth 1 -name "node[0-9]*" | wc -l)
last=$((nodes - 1))
X=/x
LIB=$X/libxalloc.so.1
echo "GUEST nodes=$nodes online=$(cat /sys/devices/system/node/online) cpus=$(cat /sys/devices/system/cpu/online) kernel=$(uname -r) mode=$mode"
for n in /sys/devices/system/node/node*; do
    echo "GUEST $(basename "$n") cpus=$(cat "$n/cpulist") distance=$(cat "$n/distance")"
done

# run NAME CMD...: one test program under a time limit; its CHECK lines go
# to the console as they come.
run() {
    name=$1
    shift
    echo "RUN $name"
    timeout 300 "$@"
    echo "RC $name $?"
}

if [ "$mode" = check ]; then
    run local env LD_PRELOAD=$LIB $X/numa_probe local
    run remote env LD_PRELOAD=$LIB $X/numa_probe remote
    run interleave env LD_PRELOAD=$LIB XALLOC_CONF=numa:interleave $X/numa_probe interleave
    run membind numactl --membind=1 env LD_PRELOAD=$LIB $X/numa_probe allowed 1 membind_1
    # A cgroup v2 cpuset whose memory nodes leave out node 0.
    if mkdir -p /sys/fs/cgroup && mount -t cgroup2 none /sys/fs/cgroup &&
        echo +cpuset >/sys/fs/cgroup/cgroup.subtree_control && mkdir /sys/fs/cgroup/xa &&
        echo "1-$last" >/sys/fs/cgroup/xa/cpuset.mems &&
        cat /sys/fs/cgroup/cpuset.cpus.effective >/sys/fs/cgroup/xa/cpuset.cpus; then
        run cpuset sh -c "echo \$\$ >/sys/fs/cgroup/xa/cgroup.procs &&
            grep Mems_allowed_list /proc/self/status &&
            exec env LD_PRELOAD=$LIB $X/numa_probe allowed 1-$last cpuset_without_node0"
    else
        echo "CHECK cpuset_without_node0 FAIL could not make a cgroup v2 cpuset in the guest"
    fi
    run migrate env LD_PRELOAD=$LIB $X/numa_probe migrate
    # The probe installs the filter, then runs itself with the library.
    run unavailable env XA_PRELOAD_CHILD=$LIB $X/numa_probe unavailable
    # What xalloc made of the topology (verbose:true), in a program that
    # links libnuma itself, then under numactl --membind=1.
    want_nodes=$(seq -s, 0 "$last")
    [ "$nodes" -ge 3 ] && want_nodes="0-$last"
    line=$(env LD_PRELOAD=$LIB XALLOC_CONF=verbose:true numactl --hardware 2>&1 >/dev/null | grep '^xalloc: numa:')
    case "$line" in
    *"on; arenas on nodes $want_nodes; allowed $want_nodes; online $want_nodes; libnuma available"*)
        echo "CHECK topology_reported PASS $line" ;;
    *) echo "CHECK topology_reported FAIL want nodes $want_nodes and libnuma available, got: ${line:-nothing}" ;;
    esac
    line=$(numactl --membind=1 env LD_PRELOAD=$LIB XALLOC_CONF=verbose:true numactl --show 2>&1 >/dev/null | grep '^xalloc: numa:')
    case "$line" in
    *"on (inactive); arenas on nodes 1; allowed 1; online $want_nodes"*)
        echo "CHECK topology_membind_reported PASS $line" ;;
    *) echo "CHECK topology_membind_reported FAIL want arenas and allowed node 1 only, got: ${line:-nothing}" ;;
    esac
    # libnuma's own constructor allocates: numactl (linked with libnuma)
    # under the preload must print what it prints without it.
    # (free memory lines left out: they change from one run to the next)
    numactl --hardware 2>&1 | grep -v 'free:' >/tmp/hw.plain
    env LD_PRELOAD=$LIB numactl --hardware >/tmp/hw.out 2>&1
    hwrc=$?
    grep -v 'free:' /tmp/hw.out >/tmp/hw.xalloc
    if [ $hwrc -eq 0 ] && cmp -s /tmp/hw.plain /tmp/hw.xalloc; then
        echo "CHECK libnuma_program_preloaded PASS numactl --hardware under the preload: exit 0, same nodes, CPUs, sizes and distances"
    else
        echo "CHECK libnuma_program_preloaded FAIL numactl --hardware under the preload: exit $hwrc, output differs:"
        diff /tmp/hw.plain /tmp/hw.xalloc | head -20
    fi
    # xalloc-stat per-node bytes against the kernel's numa_maps.
    env LD_PRELOAD=$LIB XALLOC_CONF=stats:on,stats_interval_ms:100 $X/numa_probe hold 30 >/tmp/hold.out 2>&1 &
    hold=$!
    i=0
    while ! grep -q READY /tmp/hold.out && [ $i -lt 600 ]; do
        sleep 0.1
        i=$((i + 1))
    done
    sleep 1
    cfg=$($X/xalloc-stat --config "$hold" 2>&1 | grep '^  numa_nodes' | tr -s ' ')
    case $cfg in
    *"numa_nodes on; arenas on nodes $want_nodes; allowed $want_nodes"*)
        echo "CHECK stat_config_numa PASS xalloc-stat --config:$cfg" ;;
    *) echo "CHECK stat_config_numa FAIL xalloc-stat --config has no numa_nodes line for nodes $want_nodes: ${cfg:-nothing}" ;;
    esac
    echo "BEGIN stats_json"
    $X/xalloc-stat --json "$hold" 2>&1
    echo "END stats_json"
    echo "BEGIN numa_maps"
    cat /proc/$hold/numa_maps
    echo "END numa_maps"
    echo "BEGIN maps"
    cat /proc/$hold/maps
    echo "END maps"
    kill $hold
    wait $hold 2>/dev/null
fi

if [ "$mode" = bench ]; then
    rounds=$(sed -n 's/.*xa_rounds=\([0-9]*\).*/\1/p' /proc/cmdline)
    for a in glibc xalloc jemalloc mimalloc tcmalloc; do
        case $a in
        glibc) pre= ;;
        xalloc) pre=$LIB ;;
        jemalloc) pre=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 ;;
        mimalloc) pre=/usr/lib/x86_64-linux-gnu/libmimalloc.so.2 ;;
        tcmalloc) pre=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 ;;
        esac
        run "bench_$a" env LD_PRELOAD="$pre" $X/bench_numa $a "${rounds:-20}"
    done
fi

echo "GUEST-DONE"
sync
poweroff -f
