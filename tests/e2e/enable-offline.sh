#!/bin/bash
# tests/e2e/enable-offline.sh: tests of the distribution files that need no
# container (make check-enable, part of make check):
#  - xalloc-enable against a unit tree (XALLOC_ENABLE_ROOT): drop-in
#    contents, SystemCallFilter only where the unit filters, every error;
#  - the example drop-in is what xalloc-enable writes;
#  - the generated /etc/xalloc.conf names exactly the options of src/options.def;
#  - make install / uninstall with DESTDIR, PREFIX, LIBDIR, MANDIR, and
#    pkg-config on the result;
#  - shellcheck on the scripts.
# Usage: tests/e2e/enable-offline.sh path/to/libxalloc.so.1
set -euo pipefail

cd "$(dirname "$0")/../.."
TOP=$PWD
LIB=$(readlink -f "${1:-build/libxalloc.so.1}")
[ -f "$LIB" ] || { echo "Bail out! $LIB missing (make lib)"; exit 1; }
SRCLIBDIR=$(dirname "$LIB")
# The path the services see, inside the unit tree below.
LIBDIR=/usr/lib/xalloc-test
T=$(mktemp -d /tmp/xalloc-enable-test.XXXXXX)
chmod 0755 "$T"
trap 'rm -rf "$T"' EXIT

n=0
failed=0
ok() { n=$((n + 1)); printf 'ok %d - %s\n' "$n" "$*"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); printf 'not ok %d - %s\n' "$n" "$*"; }
check() {
    local desc=$1 out rc=0
    shift
    out=$("$@" 2>&1) || rc=$?
    if [ "$rc" = 0 ]; then ok "$desc"; else not_ok "$desc"; printf '%s\n' "$out" | sed 's/^/#   /' | tail -30; fi
}
expect_fail() {
    local desc=$1 pattern=$2 out rc=0
    shift 2
    out=$("$@" 2>&1) || rc=$?
    if [ "$rc" != 0 ] && printf '%s\n' "$out" | grep -qE -- "$pattern"; then
        ok "$desc"
    else
        not_ok "$desc (exit $rc, wanted non-zero and /$pattern/)"
        printf '%s\n' "$out" | sed 's/^/#   /' | tail -20
    fi
}

# ---- xalloc-enable on a unit tree ----
EN=$T/xalloc-enable
sed -e "s|@LIBDIR@|$LIBDIR|g" -e 's|@VERSION@|test|g' tools/xalloc-enable.in > "$EN"
chmod 0755 "$EN"
R=$T/root
mkdir -p "$R/lib/systemd/system" "$R/etc/systemd/system" "$R/usr/bin"
cp /bin/true "$R/usr/bin/demo"
mkdir -p "$R$LIBDIR"
cp "$LIB" "$R$LIBDIR/"
[ ! -e "$SRCLIBDIR/libxalloc-prof.so.1" ] || cp "$SRCLIBDIR/libxalloc-prof.so.1" "$R$LIBDIR/"
# The targets and slices that every service depends on, for verify --root.
cp /lib/systemd/system/*.target /lib/systemd/system/*.slice "$R/lib/systemd/system/" 2>/dev/null || true
cat > "$R/lib/systemd/system/plain.service" <<'EOF'
[Unit]
Description=plain test service
[Service]
ExecStart=/usr/bin/demo
EOF
cat > "$R/lib/systemd/system/hardened.service" <<'EOF'
[Unit]
Description=hardened test service
[Service]
ExecStart=/usr/bin/demo
User=nobody
ProtectSystem=strict
SystemCallFilter=@system-service
SystemCallFilter=~@privileged @resources
EOF
mkdir -p "$R/etc/systemd/system/reset.service.d"
cp "$R/lib/systemd/system/hardened.service" "$R/lib/systemd/system/reset.service"
printf '[Service]\nSystemCallFilter=\n' > "$R/etc/systemd/system/reset.service.d/unfilter.conf"
export XALLOC_ENABLE_ROOT=$R XALLOC_ENABLE_LIBDIR=$LIBDIR
D=$R/etc/systemd/system

check "enable plain.service" "$EN" --conf 'thp:never,arenas:8' plain
check "plain: drop-in preloads the library" grep -qx "Environment=LD_PRELOAD=$LIBDIR/libxalloc.so.1" "$D/plain.service.d/xalloc.conf"
check "plain: drop-in sets XALLOC_CONF to the options given" \
    grep -qx 'Environment=XALLOC_CONF=thp:never,arenas:8' "$D/plain.service.d/xalloc.conf"
check "plain: no statistics directory (the statistics live in a memory file)" \
    sh -c "! grep -qE 'RuntimeDirectory|stats_dir' '$D/plain.service.d/xalloc.conf'"
check "plain: no SystemCallFilter (it would forbid every other call)" \
    sh -c "! grep -q '^SystemCallFilter' '$D/plain.service.d/xalloc.conf'"
check "plain: systemd-analyze verify --root is silent" \
    sh -c "out=\$(systemd-analyze verify --root='$R' plain.service 2>&1 | grep -v /sys/fs/cgroup) ; [ -z \"\$out\" ] || { echo \"\$out\"; exit 1; }"
check "enable hardened (redis-like, SystemCallFilter)" "$EN" --conf 'thp:never,arenas:8' hardened.service
check "hardened: drop-in allows mbind and set_mempolicy" \
    grep -qx 'SystemCallFilter=mbind set_mempolicy memfd_create' "$D/hardened.service.d/xalloc.conf"
check "enable reset.service (filter reset by a drop-in)" "$EN" reset
check "reset: no SystemCallFilter line once the unit's filter is reset" \
    sh -c "! grep -q '^SystemCallFilter' '$D/reset.service.d/xalloc.conf'"
sed -e "s|@LIBDIR@|$LIBDIR|g" systemd/xalloc-preload.conf.in | grep -v '^#' > "$T/example"
grep -v '^#' "$D/hardened.service.d/xalloc.conf" > "$T/written" || true
check "the example drop-in is what xalloc-enable writes" diff -u "$T/example" "$T/written"
check "enable without --conf (no XALLOC_CONF line)" "$EN" plain
check "plain: without --conf, no XALLOC_CONF line" \
    sh -c "! grep -q XALLOC_CONF '$D/plain.service.d/xalloc.conf'"
check "enable with a stats_dir of the operator's" "$EN" --conf 'stats_dir:/var/tmp' plain
check "plain: the operator's stats_dir is kept" \
    grep -qx 'Environment=XALLOC_CONF=stats_dir:/var/tmp' "$D/plain.service.d/xalloc.conf"
check "--conf verbose:true is accepted (its option listing is no rejection)" \
    "$EN" --conf 'verbose:true' plain
check "disable plain" "$EN" --disable plain
check "plain: drop-in and its directory removed" test ! -e "$D/plain.service.d"
check "disable again is not an error" "$EN" --disable plain
check "--version" "$EN" --version
check "--help" "$EN" --help

expect_fail "unknown service" "unknown service 'nosuch.service'" "$EN" nosuch
expect_fail "not a service unit" 'not a service unit' "$EN" foo.socket
expect_fail "bad --conf value: the library's own message" 'xalloc: XALLOC_CONF: .*thp' \
    "$EN" --conf 'thp:sometimes' plain
expect_fail "unknown --conf option: the library's own message" 'xalloc: XALLOC_CONF: .*thp_mode' \
    "$EN" --conf 'thp_mode:never' plain
expect_fail "--conf with characters systemd would reinterpret" 'only letters' "$EN" --conf 'stats_dir:/tmp/a b' plain
expect_fail "relative stats_dir: the library's own message" 'xalloc: XALLOC_CONF: .*stats_dir' \
    "$EN" --conf 'stats_dir:run' plain
expect_fail "empty --conf" "bad --conf ''" "$EN" --conf '' plain
check "a rejected --conf leaves no drop-in" test ! -e "$D/plain.service.d"
expect_fail "library not installed" 'library not installed' env XALLOC_ENABLE_LIBDIR=/usr/lib/none "$EN" plain
if [ -e "$R$LIBDIR/libxalloc-prof.so.1" ]; then
    expect_fail "--prof without the profiling build" 'profiling build not installed' \
        env XALLOC_ENABLE_LIBDIR=/usr/lib/no-prof "$EN" --prof plain
else
    expect_fail "--prof without the profiling build" 'profiling build not installed' "$EN" --prof plain
    # Stand-in for the profiling build (same option table) for the rest.
    cp "$LIB" "$R$LIBDIR/libxalloc-prof.so.1"
fi
mkdir -p "$R/usr/lib/no-prof"
cp "$LIB" "$R/usr/lib/no-prof/"
check "--prof with the profiling build" "$EN" --prof --conf thp:never plain
check "--prof preloads libxalloc-prof.so.1" \
    grep -qx "Environment=LD_PRELOAD=$LIBDIR/libxalloc-prof.so.1" "$D/plain.service.d/xalloc.conf"
check "--prof turns sampling on, profiles to /var/lib/xalloc/SERVICE" \
    grep -qx 'Environment=XALLOC_CONF=thp:never,prof:true,prof_dir:/var/lib/xalloc/%N' \
    "$D/plain.service.d/xalloc.conf"
check "--prof: StateDirectory=xalloc/%N" grep -qx 'StateDirectory=xalloc/%N' "$D/plain.service.d/xalloc.conf"
"$EN" --disable plain >/dev/null
expect_fail "--disable with --conf" 'takes no --conf' "$EN" --disable --conf thp:never plain
expect_fail "two services" 'only one SERVICE' "$EN" plain hardened
expect_fail "unknown option" "unknown option '--bogus'" "$EN" --bogus plain
unset XALLOC_ENABLE_ROOT XALLOC_ENABLE_LIBDIR
if [ "$(id -u)" = 0 ]; then
    expect_fail "not root" 'must be run as root' setpriv --reuid=65534 --regid=65534 --clear-groups "$EN" plain
else
    expect_fail "not root" 'must be run as root' "$EN" plain
fi

# ---- the commented /etc/xalloc.conf ----
opts=$(sed -n 's/^XA_OPTION(\([a-z_0-9]*\),.*/\1/p' src/options.def | sort)
check "generate xalloc.conf from src/options.def" sh -c "systemd/xalloc.conf.sh src/options.def > '$T/xalloc.conf'"
example=$(sed -n 's/^#\([a-z_0-9]*\):.*/\1/p' "$T/xalloc.conf" | sort)
check "xalloc.conf names exactly the options of src/options.def" \
    diff -u <(printf '%s\n' "$opts") <(printf '%s\n' "$example")
check "xalloc.conf has only comments and blank lines" sh -c "! grep -v -e '^#' -e '^\$' '$T/xalloc.conf'"
check "xalloc.conf, uncommented, is accepted by the library" \
    sh -c "sed -n 's/^#\\([a-z_0-9]*:\\)/\\1/p' '$T/xalloc.conf' > '$T/conf' && test -s '$T/conf' &&
           out=\$(XALLOC_CONF_FILE='$T/conf' LD_PRELOAD='$LIB' /bin/true 2>&1) && [ -z \"\$out\" ] || { echo \"\$out\"; exit 1; }"
# verbose:true prints "xalloc: config: key=value (source)" for every option.
shown_values() {
    XALLOC_CONF_FILE="$T/conf" XALLOC_CONF=verbose:true LD_PRELOAD="$LIB" /bin/true 2>&1 |
        sed -n 's/^xalloc: config: \([a-z_0-9]*\)=\(.*\) (.*/\1:\2/p' | sed 's/:""$/:/' | grep -v '^verbose:'
}
check "xalloc.conf, uncommented, gives the values it shows" \
    diff -u <(grep -v '^verbose:' "$T/conf") <(shown_values)

# ---- make install / uninstall ----
I=$T/inst
MA=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
check "make install DESTDIR PREFIX=/usr LIBDIR MANDIR" \
    make -s -C "$TOP" install DESTDIR="$I" PREFIX=/usr LIBDIR="/usr/lib/$MA" MANDIR=/usr/share/man WERROR=0
for f in "usr/lib/$MA/libxalloc.so.1" "usr/lib/$MA/libxalloc.so" "usr/lib/$MA/pkgconfig/xalloc.pc" \
         usr/include/xalloc.h usr/sbin/xalloc-enable usr/share/man/man3/xalloc.3 \
         usr/share/man/man8/xalloc-enable.8 usr/share/doc/xalloc/examples/xalloc-preload.conf etc/xalloc.conf; do
    check "installed /$f" test -e "$I/$f"
done
for p in man/*.[1358]; do
    check "man page $p installed" test -f "$I/usr/share/man/man${p##*.}/${p##*/}"
done
check "installed xalloc-enable knows LIBDIR" grep -q "^readonly BUILD_LIBDIR='/usr/lib/$MA'" "$I/usr/sbin/xalloc-enable"
check "pkg-config --cflags --libs xalloc after install" \
    sh -c "PKG_CONFIG_SYSROOT_DIR='$I' PKG_CONFIG_LIBDIR='$I/usr/lib/$MA/pkgconfig' pkg-config --cflags --libs xalloc | grep -- '-lxalloc'"
printf '#include <xalloc.h>\n#include <stdio.h>\nint main(void){puts(xalloc_version());return 0;}\n' > "$T/v.c"
check "a program builds with pkg-config and runs" \
    sh -c "cc '$T/v.c' -o '$T/v' \$(PKG_CONFIG_SYSROOT_DIR='$I' PKG_CONFIG_LIBDIR='$I/usr/lib/$MA/pkgconfig' pkg-config --cflags --libs xalloc) &&
           LD_LIBRARY_PATH='$I/usr/lib/$MA' '$T/v' | grep -x '$(sed -n 's/^#define XALLOC_VERSION_\(MAJOR\|MINOR\|PATCH\) //p' include/xalloc.h | paste -sd.)'"
echo "# operator edit" >> "$I/etc/xalloc.conf"
check "make install keeps an edited /etc/xalloc.conf" \
    sh -c "make -s -C '$TOP' install DESTDIR='$I' PREFIX=/usr LIBDIR=/usr/lib/$MA WERROR=0 >/dev/null && grep -q 'operator edit' '$I/etc/xalloc.conf'"
check "make uninstall" make -s -C "$TOP" uninstall DESTDIR="$I" PREFIX=/usr LIBDIR="/usr/lib/$MA" MANDIR=/usr/share/man
check "uninstall leaves only directories and the edited config" \
    sh -c "left=\$(find '$I' ! -type d | sed 's|^$I||'); [ \"\$left\" = /etc/xalloc.conf ] || { echo \"\$left\"; exit 1; }"
check "make install PREFIX=/opt/x honours PREFIX" \
    sh -c "make -s -C '$TOP' install DESTDIR='$T/p' PREFIX=/opt/x SYSCONFDIR=/opt/x/etc WERROR=0 >/dev/null &&
           test -f '$T/p/opt/x/lib/libxalloc.so.1' -a -f '$T/p/opt/x/sbin/xalloc-enable' -a -f '$T/p/opt/x/share/man/man3/xalloc.3' -a -f '$T/p/opt/x/etc/xalloc.conf'"

# ---- the exported symbols ----
if command -v dpkg-gensymbols >/dev/null; then
    mkdir -p "$T/sym/DEBIAN"
    check "debian/libxalloc1.symbols lists exactly the exported symbols (make deb-symbols)" \
        sh -c "dpkg-gensymbols -plibxalloc1 -v'$(sed -n 's/^#define XALLOC_VERSION_\(MAJOR\|MINOR\|PATCH\) //p' include/xalloc.h | paste -sd.)' \
                 -e'$LIB' -P'$T/sym' -O -c4 >/dev/null"
else
    not_ok "dpkg-gensymbols not installed (apt-get install dpkg-dev)"
fi

# ---- shellcheck ----
if command -v shellcheck >/dev/null; then
    check "shellcheck xalloc-enable and the e2e scripts" \
        shellcheck -s bash tools/xalloc-enable.in tests/e2e/run.sh tests/e2e/enable-offline.sh systemd/xalloc.conf.sh
else
    not_ok "shellcheck not installed (apt-get install shellcheck)"
fi

echo "1..$n"
echo "# check-enable: $((n - failed))/$n passed"
[ "$failed" = 0 ]
