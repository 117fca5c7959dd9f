#!/bin/bash
# tests/e2e/run.sh: end-to-end test of the packages (make e2e).
#
#   deb  boots a minimal Debian with systemd as PID 1 (systemd-nspawn),
#        installs the .debs with apt, runs xalloc-enable on the real
#        redis-server service and checks the preload, xalloc-stat and redis;
#        then --disable and checks the library is gone.
#   rpm  installs the .rpms into an --installroot with dnf, checks where the
#        files land, the %config(noreplace) file, then removes them.
#
# Usage: tests/e2e/run.sh [deb|rpm|all]   (default all; run as root)
# Needs build/deb/*.deb and build/rpm/RPMS/*/*.rpm (make deb rpm).
# The debootstrapped root is cached in build/e2e-cache/ between local runs;
# with CI=true it is built fresh. Every step that fails fails the run; no
# step is skipped. Output is TAP.
set -euo pipefail

cd "$(dirname "$0")/../.."
TOP=$PWD
BUILD=${BUILD:-build}
WHAT=${1:-all}
OUT=$TOP/$BUILD/e2e
CACHE=$TOP/$BUILD/e2e-cache
MULTIARCH=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
SUITE=bookworm
INCLUDE=systemd,systemd-sysv,dbus,procps,redis-server,redis-tools,prometheus-node-exporter
REDIS_CONF='thp:never,arenas:8'

n=0
failed=0
ok() { n=$((n + 1)); printf 'ok %d - %s\n' "$n" "$*"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); printf 'not ok %d - %s\n' "$n" "$*"; }
bail() { printf 'Bail out! %s\n' "$*"; exit 1; }
# check DESC CMD...: one TAP line; the command's output is shown on failure.
check() {
    local desc=$1 out rc=0
    shift
    out=$("$@" 2>&1) || rc=$?
    if [ "$rc" = 0 ]; then
        ok "$desc"
    else
        not_ok "$desc"
        printf '%s\n' "$out" | sed 's/^/#   /' | tail -40
    fi
    return 0
}
# must DESC CMD...: like check, but later steps depend on it.
must() {
    local before=$failed
    check "$@"
    [ "$failed" = "$before" ] || bail "$1"
}
# expect_fail DESC PATTERN CMD...: CMD must exit non-zero and print PATTERN.
expect_fail() {
    local desc=$1 pattern=$2 out rc=0
    shift 2
    out=$("$@" 2>&1) || rc=$?
    if [ "$rc" != 0 ] && printf '%s\n' "$out" | grep -qE -- "$pattern"; then
        ok "$desc"
        printf '%s\n' "$out" | sed 's/^/#   /' | head -5
    else
        not_ok "$desc (exit $rc, wanted non-zero and /$pattern/)"
        printf '%s\n' "$out" | sed 's/^/#   /' | tail -20
    fi
}

[ "$(id -u)" = 0 ] || bail "run as root (debootstrap, systemd-nspawn, dnf --installroot)"
for c in debootstrap systemd-nspawn nsenter rpm dnf createrepo_c rpmbuild flock; do
    command -v "$c" >/dev/null || bail "$c not found (apt-get install systemd-container debootstrap rpm dnf createrepo-c util-linux)"
done
mkdir -p "$OUT" "$CACHE"

# ---- deb: systemd in a container ----

NSPID=''
LEADER=''
MACHINE=xalloc-e2e-$$

IN() { timeout 120 nsenter -t "$LEADER" -a "$@"; }

stop_container() {
    [ -n "$NSPID" ] || return 0
    if kill -0 "$NSPID" 2>/dev/null; then
        [ -z "$LEADER" ] || timeout 10 nsenter -t "$LEADER" -a systemctl poweroff --no-block >/dev/null 2>&1 || true
        timeout 30 tail --pid="$NSPID" -f /dev/null 2>/dev/null || true
        if kill -0 "$NSPID" 2>/dev/null; then
            kill -TERM "$NSPID" 2>/dev/null || true
            timeout 10 tail --pid="$NSPID" -f /dev/null 2>/dev/null || kill -KILL "$NSPID" 2>/dev/null || true
        fi
    fi
    wait "$NSPID" 2>/dev/null || true
    NSPID=''
    LEADER=''
}

on_exit() {
    local rc=$?
    stop_container
    if [ "$rc" != 0 ] || [ "$failed" != 0 ]; then
        [ ! -s "$OUT/nspawn.log" ] || { echo "# last lines of $OUT/nspawn.log:"; tail -20 "$OUT/nspawn.log" | sed 's/^/#   /'; }
    fi
}
trap on_exit EXIT
trap 'exit 130' INT TERM

# The debootstrapped root, rebuilt when the package list changes or in CI.
prepare_root() {
    local root=$CACHE/root stamp="$SUITE $INCLUDE" mirror
    if [ "${CI:-}" = true ] || [ ! -f "$CACHE/root.stamp" ] || [ "$(cat "$CACHE/root.stamp")" != "$stamp" ]; then
        mirror=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
        mirror=${mirror:-http://deb.debian.org/debian}
        rm -rf "$root" "$root.tmp" "$CACHE/root.stamp"
        echo "# debootstrap $SUITE into $root (about 45 s)"
        timeout 900 debootstrap --variant=minbase --include="$INCLUDE" "$SUITE" "$root.tmp" "$mirror" \
            > "$OUT/debootstrap.log" 2>&1 || { tail -20 "$OUT/debootstrap.log"; bail "debootstrap failed"; }
        mv "$root.tmp" "$root"
        printf '%s\n' "$stamp" > "$CACHE/root.stamp"
    else
        echo "# using the cached root $root (CI=true rebuilds it)"
    fi
}

boot_container() {
    local i state=''
    systemd-nspawn -D "$CACHE/root" --boot --register=no --keep-unit --console=passive \
        -M "$MACHINE" --volatile=overlay --bind-ro="$DEBS:/debs" \
        </dev/null >"$OUT/nspawn.log" 2>&1 &
    NSPID=$!
    for i in $(seq 300); do
        LEADER=$(pgrep -P "$NSPID" -x systemd || true)
        [ -z "$LEADER" ] || break
        kill -0 "$NSPID" 2>/dev/null || bail "systemd-nspawn exited (see $OUT/nspawn.log)"
        sleep 0.1
    done
    [ -n "$LEADER" ] || bail "no systemd in the container after 30 s"
    for i in $(seq 300); do
        state=$(timeout 5 nsenter -t "$LEADER" -a systemctl is-system-running 2>/dev/null || true)
        case $state in running | degraded) break ;; esac
        sleep 0.2
    done
    case $state in
        running | degraded) ok "container booted systemd as PID 1 (state $state)" ;;
        *) bail "container did not finish booting in 60 s (state '$state')" ;;
    esac
}

# Pid of the service's main process, as the container sees it.
main_pid() {
    IN systemctl show -p MainPID --value redis-server.service
}

wait_redis() {
    local i
    for i in $(seq 100); do
        [ "$(IN redis-cli ping 2>/dev/null || true)" = PONG ] && return 0
        sleep 0.1
    done
    return 1
}

maps_has_xalloc() {
    IN grep -E "r-xp .* /usr/lib/$MULTIARCH/libxalloc\.so\.1$" "/proc/$1/maps"
}

# The same seen from the host: the host pid whose NSpid ends in $1 and that
# lives in the container's pid namespace.
host_maps_has_xalloc() {
    local p hp='' ns
    ns=$(readlink "/proc/$LEADER/ns/pid")
    for p in /proc/[0-9]*; do
        [ "$(readlink "$p/ns/pid" 2>/dev/null)" = "$ns" ] || continue
        if awk -v want="$1" '/^NSpid:/ { exit !($NF == want) }' "$p/status" 2>/dev/null; then
            hp=${p#/proc/}
            break
        fi
    done
    [ -n "$hp" ] || { echo "no host pid for container pid $1"; return 1; }
    echo "host pid $hp"
    grep -E "r-xp .* /usr/lib/$MULTIARCH/libxalloc\.so\.1$" "/proc/$hp/maps"
}

maps_lacks_xalloc() {
    ! IN grep -q libxalloc "/proc/$1/maps"
}

dropin_absent() {
    ! IN test -e /etc/systemd/system/redis-server.service.d/xalloc.conf
}

redis_works() {
    local i v
    {
        for i in $(seq 1 2000); do
            printf 'SET key:%d %0512d\r\n' "$i" "$i"
        done
    } | IN redis-cli --pipe >/dev/null
    [ "$(IN redis-cli dbsize)" -ge 2000 ] || return 1
    v=$(IN redis-cli get key:1234)
    [ "$v" = "$(printf '%0512d' 1234)" ] || return 1
    [ "$(IN redis-cli set hello world)" = OK ] || return 1
    [ "$(IN redis-cli get hello)" = world ] || return 1
    IN redis-cli flushall >/dev/null
}

wait_stat() {
    local i
    for i in $(seq 50); do
        IN xalloc-stat "$1" >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    IN xalloc-stat "$1"
}

# Owner of the statistics memory file of container pid $1 ("" if none).
memfd_owner() {
    # shellcheck disable=SC2016 # expanded by the container's shell
    IN sh -c 'for f in /proc/$1/fd/*; do
        [ "$(readlink "$f")" = "/memfd:xalloc-stats (deleted)" ] && stat -L -c %U "$f"; done' _ "$1"
}

# node_exporter's /metrics inside the container (bash's /dev/tcp: minbase
# has no curl).
node_metrics() {
    # shellcheck disable=SC2016 # expanded by the container's bash
    IN bash -c 'exec 3<>/dev/tcp/127.0.0.1/9100 &&
        printf "GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n" >&3 && cat <&3'
}

# The xalloc samples of container pid $1 (redis-server), labelled with its
# unit, on node_exporter's /metrics after one run of the export service.
exported_metrics() {
    local i out=''
    for i in $(seq 50); do
        out=$(node_metrics 2>/dev/null) || true
        grep -q '^node_textfile_scrape_error' <<<"$out" && break
        sleep 0.2
    done
    grep -E '^(xalloc_(allocated_bytes|narenas|export_success)|node_textfile_scrape_error)' <<<"$out" | head -8
    if grep -qE "^xalloc_allocated_bytes\{pid=\"$1\",program=\"redis-server\",service=\"redis-server.service\"\} [0-9]+" <<<"$out" &&
        grep -qE "^xalloc_narenas\{pid=\"$1\",program=\"redis-server\",service=\"redis-server.service\"\} 8$" <<<"$out" &&
        grep -qx 'xalloc_export_success 1' <<<"$out" &&
        grep -qx 'node_textfile_scrape_error 0' <<<"$out"; then
        return 0
    fi
    echo "-- /metrics: $(wc -l <<<"$out") lines; xalloc.prom and the service's journal:"
    IN sh -c 'ls -l /var/lib/prometheus/node-exporter; head -c 600 /var/lib/prometheus/node-exporter/xalloc.prom'
    IN journalctl -u xalloc-stat-export.service -n 15 --no-pager
    return 1
}

stat_shows_conf() {
    local pid=$1 out
    out=$(IN xalloc-stat "$pid") || { printf '%s\n' "$out"; return 1; }
    printf '%s\n' "$out"
    printf '%s\n' "$out" | grep -E '^[[:space:]]*thp\b.*\bnever\b.*XALLOC_CONF' >/dev/null || return 1
    printf '%s\n' "$out" | grep -E '^[[:space:]]*arenas\b.*\b8\b.*XALLOC_CONF' >/dev/null || return 1
}

run_deb() {
    local f p pid pid2 pkgs=()
    DEBS=$TOP/$BUILD/deb
    for p in libxalloc1 libxalloc-dev xalloc-tools; do
        f=''
        for f in "$DEBS/${p}_"*.deb; do break; done
        [ -f "$f" ] || bail "$DEBS/${p}_*.deb missing (make deb)"
        pkgs+=("/debs/${f##*/}")
    done
    exec 9>"$CACHE/lock"
    timeout 1200 flock 9 || bail "another e2e run holds $CACHE/lock"
    prepare_root
    boot_container

    must "apt-get install the three .debs" IN env DEBIAN_FRONTEND=noninteractive apt-get install -y "${pkgs[@]}"
    check "libxalloc1 puts the library in /usr/lib/$MULTIARCH" IN test -f "/usr/lib/$MULTIARCH/libxalloc.so.1"
    check "libxalloc-dev has header, .so link and pkg-config file" \
        IN test -f /usr/include/xalloc.h -a -L "/usr/lib/$MULTIARCH/libxalloc.so" -a -f "/usr/lib/$MULTIARCH/pkgconfig/xalloc.pc"
    check "xalloc-tools has xalloc-stat and xalloc-enable" IN test -x /usr/bin/xalloc-stat -a -x /usr/sbin/xalloc-enable
    check "/etc/xalloc.conf is a conffile of xalloc-tools" \
        sh -c "nsenter -t $LEADER -a dpkg-query -W -f='\${Conffiles}' xalloc-tools | grep -q ' /etc/xalloc.conf '"
    for p in man3/xalloc.3 man5/xalloc.conf.5 man1/xalloc-stat.1 man8/xalloc-enable.8; do
        check "man page $p installed" IN test -f "/usr/share/man/$p.gz"
    done
    check "example drop-in installed" IN test -f /usr/share/doc/xalloc-tools/examples/xalloc-preload.conf

    pid=$(main_pid)
    must "redis-server runs before xalloc-enable (pid $pid)" test "$pid" -gt 0
    check "redis-server does not map libxalloc before" maps_lacks_xalloc "$pid"

    expect_fail "xalloc-enable: unknown service" 'unknown service' IN xalloc-enable no-such-service
    expect_fail "xalloc-enable: not root" 'must be run as root' \
        IN setpriv --reuid=65534 --regid=65534 --clear-groups xalloc-enable redis-server
    expect_fail "xalloc-enable: bad --conf, with the library's message" 'xalloc: XALLOC_CONF: .*thp' \
        IN xalloc-enable --conf 'thp:sometimes' redis-server
    expect_fail "xalloc-enable: unknown option in --conf" 'xalloc: XALLOC_CONF: .*thp_mode' \
        IN xalloc-enable --conf 'thp_mode:never' redis-server
    check "a rejected --conf writes no drop-in" dropin_absent
    expect_fail "xalloc-enable: library not installed" 'library not installed' \
        IN env XALLOC_ENABLE_LIBDIR=/nonexistent xalloc-enable redis-server
    if IN test -e "/usr/lib/$MULTIARCH/libxalloc-prof.so.1"; then
        check "xalloc-enable --prof with the profiling build installed" IN xalloc-enable --prof --no-reload redis-server
        IN rm -rf /etc/systemd/system/redis-server.service.d
    else
        expect_fail "xalloc-enable --prof: profiling build not installed" 'profiling build not installed' \
            IN xalloc-enable --prof redis-server
    fi

    must "xalloc-enable --conf '$REDIS_CONF' redis-server" IN xalloc-enable --conf "$REDIS_CONF" redis-server
    check "drop-in written and listed by systemctl cat" \
        sh -c "nsenter -t $LEADER -a systemctl cat redis-server.service | grep -q 'XALLOC_CONF=$REDIS_CONF'"
    check "systemd-analyze verify has nothing to say about the drop-in" \
        sh -c "! nsenter -t $LEADER -a systemd-analyze verify redis-server.service 2>&1 | grep xalloc"
    must "systemctl restart redis-server" IN systemctl restart redis-server.service
    check "redis-server is active" IN systemctl is-active redis-server.service
    pid=$(main_pid)
    check "systemctl show: Environment has LD_PRELOAD and XALLOC_CONF" \
        sh -c "nsenter -t $LEADER -a systemctl show -p Environment redis-server.service | grep 'LD_PRELOAD=/usr/lib/$MULTIARCH/libxalloc.so.1' | grep -q 'XALLOC_CONF=$REDIS_CONF'"
    check "redis-server (pid $pid) maps libxalloc.so.1 r-xp" maps_has_xalloc "$pid"
    check "redis answers redis-cli (2000 SETs, GETs) with xalloc" wait_redis
    check "redis data is right with xalloc" redis_works
    check "xalloc-stat $pid shows the configuration from the drop-in" stat_shows_conf "$pid"
    IN xalloc-stat "$pid" 2>&1 | grep -E '^[[:space:]]*(thp|arenas|stats_dir)[[:space:]]' | sed 's/^/#   /' || true
    check "the statistics are one memory file of redis-server, owned by redis" \
        sh -c "[ \"\$1\" = redis ]" _ "$(memfd_owner "$pid")"
    check "... and no named statistics file anywhere" \
        sh -c "! nsenter -t $LEADER -a ls /run/xalloc/redis-server/xalloc.$pid /dev/shm/xalloc.$pid /run/xalloc/$pid 2>/dev/null"
    check "host view: redis-server maps libxalloc.so.1 r-xp" host_maps_has_xalloc "$pid"
    # Prometheus: the export units of xalloc-tools and Debian's node_exporter.
    check "xalloc-stat-export.timer is installed and disabled" \
        sh -c "nsenter -t $LEADER -a systemctl is-enabled xalloc-stat-export.timer | grep -qx disabled"
    must "systemctl start xalloc-stat-export.service (one export)" IN systemctl start xalloc-stat-export.service
    check "node_exporter serves redis's xalloc metrics, labelled service=redis-server.service" \
        exported_metrics "$pid"
    must "systemctl enable --now xalloc-stat-export.timer" IN systemctl enable --now xalloc-stat-export.timer
    check "the timer is active" IN systemctl is-active xalloc-stat-export.timer
    check "redis-server is still the same process" test "$(main_pid)" = "$pid"

    # A second service with another user: each process's statistics file
    # is its own user's.
    IN sh -c 'cat > /etc/systemd/system/xalloc-demo.service' <<'EOF'
[Service]
User=nobody
ExecStart=/usr/bin/perl -e 'my @a = map { "x" x 1000 } 1 .. 2000; sleep 600'
EOF
    IN sh -c 'cp /etc/xalloc.conf /run/xalloc.conf.orig && echo thp:sometimes >> /etc/xalloc.conf'
    check "xalloc-enable warns about a bad /etc/xalloc.conf and still enables" \
        sh -c "nsenter -t $LEADER -a xalloc-enable xalloc-demo 2>&1 | grep -q 'warning: /etc/xalloc.conf has the problems'"
    IN cp /run/xalloc.conf.orig /etc/xalloc.conf
    must "xalloc-enable xalloc-demo (User=nobody, no SystemCallFilter)" IN xalloc-enable xalloc-demo
    check "xalloc-demo drop-in has no SystemCallFilter line" \
        sh -c "! nsenter -t $LEADER -a grep -q SystemCallFilter /etc/systemd/system/xalloc-demo.service.d/xalloc.conf"
    must "systemctl start xalloc-demo" IN systemctl start xalloc-demo.service
    local dpid
    dpid=$(IN systemctl show -p MainPID --value xalloc-demo.service)
    check "xalloc-demo (pid $dpid) maps libxalloc.so.1 r-xp" maps_has_xalloc "$dpid"
    check "xalloc-stat $dpid reads the second service" wait_stat "$dpid"
    check "xalloc-demo's statistics are nobody's, redis's stay redis's" \
        sh -c "[ \"\$1 \$2\" = 'nobody redis' ]" _ "$(memfd_owner "$dpid")" "$(memfd_owner "$pid")"
    must "systemctl stop xalloc-demo" IN systemctl stop xalloc-demo.service
    check "stopping xalloc-demo leaves redis's statistics readable" IN xalloc-stat "$pid"
    IN xalloc-enable --disable xalloc-demo >/dev/null

    # redis.service is the unit's alias: the drop-in goes with the real name.
    must "xalloc-enable --disable redis (the alias)" IN xalloc-enable --disable redis
    check "drop-in removed" dropin_absent
    must "systemctl restart redis-server" IN systemctl restart redis-server.service
    pid2=$(main_pid)
    check "redis-server restarted (pid $pid -> $pid2)" test "$pid2" -gt 0 -a "$pid2" != "$pid"
    check "redis-server (pid $pid2) no longer maps libxalloc" maps_lacks_xalloc "$pid2"
    check "redis answers redis-cli without xalloc" wait_redis
    check "xalloc-enable --disable again is not an error" IN xalloc-enable --disable redis-server

    # NUMA: the library calls mbind once it sees two nodes, and redis's
    # unit denies @resources (mbind) with SIGSYS. Show the library two
    # nodes (a bind mount over the sysfs list; the one real node takes the
    # binding) and check the drop-in's SystemCallFilter line keeps redis up.
    must "show two NUMA nodes in the container" \
        IN sh -c 'printf "0-1\n" > /run/xalloc-e2e-nodes && mount --bind /run/xalloc-e2e-nodes /sys/devices/system/node/online'
    must "xalloc-enable --conf thp:never redis-server (two nodes)" IN xalloc-enable --conf thp:never redis-server
    check "the drop-in allows mbind, set_mempolicy and memfd_create in the filtered unit" \
        IN grep -qx 'SystemCallFilter=mbind set_mempolicy memfd_create' /etc/systemd/system/redis-server.service.d/xalloc.conf
    must "systemctl restart redis-server (two nodes)" IN systemctl restart redis-server.service
    pid=$(main_pid)
    check "redis-server with xalloc on two nodes maps libxalloc.so.1 r-xp" maps_has_xalloc "$pid"
    check "redis answers redis-cli with xalloc on two nodes" wait_redis
    IN sed -i '/^SystemCallFilter=/d' /etc/systemd/system/redis-server.service.d/xalloc.conf
    IN systemctl daemon-reload
    IN systemctl restart redis-server.service >/dev/null 2>&1 || true
    check "negative control: without that line redis dies of SIGSYS (status 31)" \
        sh -c "nsenter -t $LEADER -a systemctl show -p ExecMainStatus --value redis-server.service | grep -qx 31"
    must "xalloc-enable --disable redis-server" IN xalloc-enable --disable redis-server
    IN umount /sys/devices/system/node/online
    IN systemctl reset-failed redis-server.service
    must "systemctl restart redis-server (one node, no xalloc)" IN systemctl restart redis-server.service
    check "redis answers redis-cli at the end" wait_redis

    stop_container
    ok "container powered off"
}

# ---- rpm: dnf --installroot ----

# A package that provides what our packages require from the
# distribution (glibc capabilities, /bin/bash, ...), and a static
# /sbin/ldconfig for the scriptlets: no RPM distribution can be reached here.
build_stub() {
    local dir=$1 req
    shift
    mkdir -p "$dir/SPECS"
    req=$( (rpm -qp --requires "$@" 2>/dev/null) | sed 's/[[:space:]]*$//' | sort -u |
        grep -v -e '^rpmlib(' -e '^xalloc' -e '^config(' || true)
    {
        echo "Name: e2e-base-stub"
        echo "Version: 1"
        echo "Release: 1"
        echo "Summary: Stands in for glibc and bash in the e2e installroot"
        echo "License: MIT"
        printf '%s\n' "$req" | grep -v '^/sbin/ldconfig$' | grep . | sed 's/^/Provides: /'
        echo "%description"
        echo "Test stub."
        echo "%install"
        echo "install -D -m 0755 /sbin/ldconfig %{buildroot}/sbin/ldconfig"
        echo "mkdir -p %{buildroot}/etc"
        echo "%files"
        echo "/sbin/ldconfig"
    } > "$dir/SPECS/stub.spec"
    rpmbuild --define "_topdir $dir" --nodeps -bb "$dir/SPECS/stub.spec" > "$dir/build.log" 2>&1 ||
        { cat "$dir/build.log"; return 1; }
}

run_rpm() {
    local rpms=() R=$OUT/rpmroot REPO=$OUT/rpmrepo f
    for f in "$TOP/$BUILD"/rpm/RPMS/*/xalloc*.rpm; do
        case $f in *debuginfo* | *debugsource* | *'*'*) ;; *) rpms+=("$f") ;; esac
    done
    [ "${#rpms[@]}" -ge 3 ] || bail "$BUILD/rpm/RPMS/*/xalloc*.rpm missing (make rpm)"
    rm -rf "$R" "$REPO" "$OUT/stub"
    mkdir -p "$R" "$REPO"
    must "build the base stub rpm" build_stub "$OUT/stub" "${rpms[@]}"
    cp "${rpms[@]}" "$OUT"/stub/RPMS/*/e2e-base-stub-*.rpm "$REPO/"
    must "createrepo_c" createrepo_c -q "$REPO"
    # shellcheck disable=SC2054 # the comma belongs to dnf's option
    local DNF=(timeout 300 dnf -y -q --installroot="$R" --releasever=1 --disablerepo='*'
        --repofrompath=local,"file://$REPO" --enablerepo=local --nogpgcheck
        --setopt=reposdir=/nonexistent --setopt=install_weak_deps=False)
    must "dnf --installroot install xalloc xalloc-devel xalloc-tools" "${DNF[@]}" install xalloc xalloc-devel xalloc-tools
    for f in /usr/lib64/libxalloc.so.1 /usr/lib64/libxalloc.so /usr/lib64/pkgconfig/xalloc.pc \
             /usr/include/xalloc.h /usr/bin/xalloc-stat /usr/sbin/xalloc-enable /etc/xalloc.conf \
             /usr/share/man/man3/xalloc.3.gz /usr/share/man/man5/xalloc.conf.5.gz \
             /usr/share/man/man1/xalloc-stat.1.gz /usr/share/man/man8/xalloc-enable.8.gz \
             /usr/share/doc/xalloc-tools/examples/xalloc-preload.conf; do
        check "rpm: $f installed" test -e "$R$f"
    done
    check "rpm: library owned by package xalloc" sh -c "rpm --root '$R' -qf /usr/lib64/libxalloc.so.1 | grep -q '^xalloc-1'"
    check "rpm: /etc/xalloc.conf is %config(noreplace)" \
        sh -c "rpm --root '$R' -q --qf '[%{FILEFLAGS:fflags} %{FILENAMES}\\n]' xalloc-tools | grep -qx 'cn /etc/xalloc.conf'"
    check "rpm: example drop-in preloads from /usr/lib64" grep -q '^Environment=LD_PRELOAD=/usr/lib64/libxalloc.so.1$' \
        "$R/usr/share/doc/xalloc-tools/examples/xalloc-preload.conf"
    check "rpm: xalloc-enable looks in /usr/lib64" grep -q "^readonly BUILD_LIBDIR='/usr/lib64'" "$R/usr/sbin/xalloc-enable"
    check "rpm: pkg-config --cflags --libs xalloc" sh -c "PKG_CONFIG_SYSROOT_DIR='$R' PKG_CONFIG_LIBDIR='$R/usr/lib64/pkgconfig' pkg-config --cflags --libs xalloc | grep -q -- '-lxalloc'"
    check "rpm: the packaged library preloads" sh -c "LD_PRELOAD='$R/usr/lib64/libxalloc.so.1' /bin/true 2>&1 | (! grep .)"
    check "rpm: rpm -V finds nothing changed" rpm --root "$R" -V xalloc xalloc-devel xalloc-tools
    echo "# operator edit" >> "$R/etc/xalloc.conf"
    must "dnf remove xalloc xalloc-devel xalloc-tools" "${DNF[@]}" remove xalloc xalloc-devel xalloc-tools
    check "rpm: files gone after remove" sh -c "! test -e '$R/usr/lib64/libxalloc.so.1' && ! test -e '$R/usr/sbin/xalloc-enable' && ! test -e '$R/usr/include/xalloc.h'"
    check "rpm: the edited /etc/xalloc.conf is kept as .rpmsave" test -f "$R/etc/xalloc.conf.rpmsave"
    check "rpm: rpm -qa has no xalloc package left" sh -c "! rpm --root '$R' -qa | grep -q '^xalloc'"
}

start=$SECONDS
case $WHAT in
    deb) run_deb ;;
    rpm) run_rpm ;;
    all) run_deb; run_rpm ;;
    *) bail "usage: $0 [deb|rpm|all]" ;;
esac
echo "1..$n"
echo "# e2e $WHAT: $((n - failed))/$n passed in $((SECONDS - start)) s"
[ "$failed" = 0 ]
