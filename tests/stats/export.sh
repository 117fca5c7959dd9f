#!/usr/bin/env bash
# tests/stats/export.sh: xalloc-stat-export (issue 15) against live
# processes, outside systemd: the file it writes into a textfile directory
# passes promtool, names a process of a systemd unit with service="UNIT"
# (a cgroup named like one, in the v1 name=systemd hierarchy, as root),
# is replaced atomically (no temporary file left, an old reader keeps the
# old file whole), and Debian's prometheus-node-exporter serves its samples
# on /metrics. The e2e test (tests/e2e/run.sh) does the same under systemd
# with the packaged units.
# Usage: export.sh LIB XALLOC_STAT HOLDER
set -u
LIB=$1 TOOL=$2 HOLDER=$3
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/stats/checks.sh
. "$here/checks.sh"
work=$(mktemp -d /tmp/xs-export.XXXXXX)
h='' ne='' cg=''
cleanup() {
    [ -n "$h" ] && kill "$h" 2>/dev/null
    [ -n "$ne" ] && kill "$ne" 2>/dev/null
    wait 2>/dev/null
    [ -n "$cg" ] && rmdir "$cg" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
sed -e "s|@BINDIR@|$(dirname "$TOOL")|g" "$here/../../tools/xalloc-stat-export.in" >"$work/export"
chmod +x "$work/export"
dir=$work/textfile
mkdir "$dir"

env LD_PRELOAD="$LIB" XALLOC_CONF=stats_interval_ms:100 "$HOLDER" 4 0 60 >"$work/h.out" 2>&1 &
h=$!
for _ in $(seq 100); do grep -q ready "$work/h.out" 2>/dev/null && break; sleep 0.05; done
for _ in $(seq 100); do "$TOOL" --no-kernel "$h" >/dev/null 2>&1 && break; sleep 0.05; done
unit=xs-export-test-$$.service
if [ "$(id -u)" = 0 ] && [ -d /sys/fs/cgroup/systemd ] && mkdir "/sys/fs/cgroup/systemd/$unit" 2>/dev/null; then
    cg=/sys/fs/cgroup/systemd/$unit
    echo "$h" >"$cg/cgroup.procs"
else
    unit=
    echo "skip - service label: needs root and a v1 name=systemd cgroup hierarchy to fake a unit"
fi

XALLOC_EXPORT_DIR=$dir "$work/export" 2>"$work/export.err"
rc=$?
f=$dir/xalloc.prom
check "the export writes $dir/xalloc.prom (rc $rc) $(head -c 200 "$work/export.err")" test "$rc" = 0 -a -s "$f"
check "... with no temporary file left" bash -c '[ "$(ls -A "$1")" = xalloc.prom ]' _ "$dir"
check "... mode 0644, readable by node_exporter's user" test "$(stat -c %a "$f")" = 644
if command -v promtool >/dev/null; then
    check "... passes promtool check metrics" bash -c 'promtool check metrics <"$1"' _ "$f"
else
    echo "skip - promtool not installed (apt-get install prometheus)"
fi
check "... has the holder's samples" grep -qE "^xalloc_allocated_bytes\{pid=\"$h\",program=\"holder\"" "$f"
check "... and the export's own success and time" \
    bash -c 'grep -qx "xalloc_export_success 1" "$1" && grep -qE "^xalloc_export_timestamp_seconds [0-9]+$" "$1"' _ "$f"
if [ -n "$unit" ]; then
    check "... labelled with the process's unit: service=\"$unit\"" \
        grep -qE "^xalloc_allocated_bytes\{pid=\"$h\",program=\"holder\",service=\"$unit\"\} [0-9]+$" "$f"
fi

# Atomic: a reader holding the old file keeps it whole while a new one is
# written and renamed over it.
exec 5<"$f"
old_ino=$(stat -c %i "$f")
XALLOC_EXPORT_DIR=$dir "$work/export" 2>/dev/null
check "a second run replaces the file by rename (inode $old_ino -> $(stat -c %i "$f"))" \
    test "$(stat -c %i "$f")" != "$old_ino"
check "... and the reader of the old one still reads it whole" bash -c 'tail -1 <&5 | grep -q "^xalloc_export_timestamp_seconds"'
exec 5<&-

# Without a directory: one line, exit 1.
out=$(XALLOC_EXPORT_DIR=$work/none "$work/export" 2>&1); rc=$?
check "a missing directory is one clear line (rc $rc): $out" \
    bash -c '[ "$1" = 1 ] && [ "$(wc -l <<<"$2")" = 1 ] && grep -q "XALLOC_EXPORT_DIR" <<<"$2"' _ "$rc" "$out"

# node_exporter reads it.
ne_bin=$(command -v prometheus-node-exporter || command -v node_exporter || true)
if [ -n "$ne_bin" ]; then
    port=
    for _ in $(seq 20); do
        p=$((20000 + RANDOM % 30000))
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then port=$p; break; fi
    done
    "$ne_bin" --web.listen-address="127.0.0.1:$port" --collector.disable-defaults \
        --collector.textfile --collector.textfile.directory="$dir" >"$work/ne.log" 2>&1 &
    ne=$!
    metrics=
    for _ in $(seq 50); do
        metrics=$(python3 -c 'import sys,urllib.request; print(urllib.request.urlopen(sys.argv[1], timeout=2).read().decode())' \
            "http://127.0.0.1:$port/metrics" 2>/dev/null) && break
        sleep 0.1
    done
    check "node_exporter serves the holder's xalloc samples on /metrics" \
        grep -qE "^xalloc_allocated_bytes\{pid=\"$h\",program=\"holder\"" <<<"$metrics"
    check "... without a textfile scrape error" grep -qE '^node_textfile_scrape_error 0$' <<<"$metrics"
else
    echo "skip - prometheus-node-exporter not installed"
fi
echo "export.sh: $pass passed, $fail failed"
[ "$fail" = 0 ]
