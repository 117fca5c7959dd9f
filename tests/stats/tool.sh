#!/usr/bin/env bash
# tests/stats/tool.sh: xalloc-stat against live processes using xalloc:
# report formats, --all, --watch, --config, --purge and --set (effect on
# VmRSS), errors (no process, not xalloc, stats:off, other user, stale file,
# incompatible version), a symlink planted at the stats path, and a process
# in another pid namespace. Usage: tool.sh LIB XALLOC_STAT HOLDER
# Needs root for the other-user, symlink and namespace cases (skipped, and
# said so, otherwise). Every wait is bounded.
set -u
LIB=$1 TOOL=$2 HOLDER=$3
work=$(mktemp -d /tmp/xs-tool.XXXXXX)
chmod 755 "$work"
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
    wait 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

# shellcheck source=tests/stats/checks.sh
. "$(dirname "$0")/checks.sh"
rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }

# start NAME CONF ARGS...: runs holder in the background, waits for "ready".
start() {
    local name=$1 conf=$2; shift 2
    env LD_PRELOAD="$LIB" XALLOC_CONF="$conf" "$HOLDER" "$@" >"$work/$name.out" 2>"$work/$name.err" &
    local p=$!
    pids+=("$p")
    for _ in $(seq 100); do
        grep -q ready "$work/$name.out" 2>/dev/null && break
        sleep 0.1
    done
    grep -q ready "$work/$name.out" || { bad "$name did not start: $(cat "$work/$name.err")"; }
    eval "$name=$p"
}

# wait_file PID: until xalloc-stat can read the process (first publication).
wait_readable() {
    for _ in $(seq 50); do
        "$TOOL" --no-kernel "$1" >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    return 1
}

# A copy of the tool that any user can run.
cp "$TOOL" "$work/xalloc-stat" && chmod 755 "$work/xalloc-stat"
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }

# ---- report formats ----
start h1 "decay_ms:600000,stats_interval_ms:100" 32 0 60
check "holder publishes" wait_readable "$h1"
sleep 0.3 # a snapshot taken after "ready"
out=$("$TOOL" "$h1")
order=$(awk '/^Totals$/ {print "T"} /^Arenas: / {print "A"} /^Size classes: / {print "S"}' <<<"$out" | tr -d '\n')
check "text report: totals, arenas, classes in that order ($order)" test "$order" = TAS
check "text report names the process" grep -q "of pid $h1 (holder)" <<<"$out"
check "text report shows the kernel's accounting" grep -q "^Kernel accounting (" <<<"$out"
json=$("$TOOL" --json "$h1")
check "--json is valid and has >= 32 MiB allocated" \
    jq -e --argjson pid "$h1" '.pid == $pid and .program == "holder" and .totals.allocated >= 33554432 and (.arenas|length) >= 1 and (.config|length) > 5' <<<"$json"
prom=$("$TOOL" --prometheus "$h1")
check "--prometheus: every line a comment or a labelled sample" \
    bash -c '! grep -vE "^# (HELP|TYPE) xalloc_[a-z_]+ |^xalloc_[a-z_]+\{pid=\"$2\",program=\"holder\"[^}]*\} [0-9]+$" <<<"$1"' _ "$prom" "$h1"
check "--prometheus: allocated sample" grep -qE "^xalloc_allocated_bytes\{pid=\"$h1\",program=\"holder\"\} [0-9]+$" <<<"$prom"
check "--all lists the holder" bash -c '"$1" --all | grep -qE "^ *$2 holder "' _ "$TOOL" "$h1"
check "--all --json is an array holding it" \
    bash -c '"$1" --all --json | jq -e --argjson p "$2" "map(.pid) | index(\$p) != null" >/dev/null' _ "$TOOL" "$h1"
n=$(timeout 10 "$TOOL" --watch 0.2 --count 3 "$h1" | grep -c "^Totals$")
check "--watch 0.2 --count 3 prints 3 reports" test "$n" = 3
cfg=$("$TOOL" --config "$h1")
check "--config: decay_ms from XALLOC_CONF" grep -qE "^  decay_ms +600000 +XALLOC_CONF$" <<<"$cfg"
check "--config: thp from default" grep -qE "^  thp +[a-z]+ +default$" <<<"$cfg"

# ---- --purge on memory freed but not yet returned ----
# Frees return what passes an arena's dirty allowance (4 MiB) at once;
# with decay_ms:600000 the last few MiB wait for decay or --purge.
start h2 "decay_ms:600000" 8 500 60
wait_readable "$h2"
before=$(rss_kb "$h2")
check "holder keeps the dirty allowance, not the 500 MiB it freed (VmRSS ${before} kB)" \
    test "$before" -gt $((12 * 1024)) -a "$before" -lt $((100 * 1024))
if [ "$(id -u)" = 0 ]; then
    out=$(as_nobody "$work/xalloc-stat" --purge "$h2" 2>&1); rc=$?
    check "--purge by another user is refused (rc $rc)" test "$rc" = 5
    check "... saying permission denied" grep -q "permission denied" <<<"$out"
    check "... and VmRSS is unchanged" test "$(rss_kb "$h2")" -ge $((before - 512))
    out=$(as_nobody "$work/xalloc-stat" "$h2" 2>&1); rc=$?
    check "reading another user's stats is refused (rc $rc)" test "$rc" = 5
    check "... saying permission denied" grep -q "permission denied" <<<"$out"
else
    echo "skip - other-user cases need root"
fi
t0=$(date +%s%N)
out=$("$TOOL" --purge "$h2"); rc=$?
check "--purge acknowledged (rc $rc): $out" test "$rc" = 0
check "... reporting the bytes purged" grep -qE "purged [0-9]+ bytes" <<<"$out"
low=0
for _ in $(seq 20); do
    [ "$(rss_kb "$h2")" -lt $((before - 4 * 1024)) ] && { low=1; break; }
    sleep 0.1
done
ms=$((($(date +%s%N) - t0) / 1000000))
check "VmRSS fell by > 4 MiB within 2 s (${before} -> $(rss_kb "$h2") kB in ${ms} ms)" test "$low" = 1

# ---- --set ----
out=$("$TOOL" --set decay_ms:0 "$h2"); rc=$?
check "--set decay_ms:0 acknowledged (rc $rc): $out" test "$rc" = 0
check "--config then shows decay_ms 0 from runtime" \
    bash -c '"$1" --config "$2" | grep -qE "^  decay_ms +0 +runtime$"' _ "$TOOL" "$h2"
base=$(rss_kb "$h2")
kill -USR1 "$h2"
for _ in $(seq 100); do grep -q cycled "$work/h2.out" && break; sleep 0.1; done
sleep 0.3
after=$(rss_kb "$h2")
check "decay_ms:0 takes effect: 500 MiB freed again is not kept (${base} -> ${after} kB)" \
    test "$after" -lt $((base + 100 * 1024))
out=$("$TOOL" --set stats_interval_ms:200 "$h2"); rc=$?
check "--set stats_interval_ms:200 (rc $rc)" test "$rc" = 0
out=$("$TOOL" --set background_thread:true "$h2"); rc=$?
check "--set background_thread:true (rc $rc): $out" test "$rc" = 0
out=$("$TOOL" --set thp:never "$h2" 2>&1); rc=$?
check "--set of a start-up-only option is refused (rc $rc): $out" test "$rc" = 7
out=$("$TOOL" --set no_such_option:1 "$h2" 2>&1); rc=$?
check "--set of an unknown option is refused (rc $rc)" test "$rc" = 7

# ---- errors ----
out=$("$TOOL" 99999999 2>&1); rc=$?
check "no such process (rc $rc): $out" bash -c '[ "$1" = 3 ] && grep -q "no such process" <<<"$2"' _ "$rc" "$out"
sleep 30 & sp=$!; pids+=("$sp"); sleep 0.1
out=$("$TOOL" "$sp" 2>&1); rc=$?
check "process not using xalloc (rc $rc): $out" bash -c '[ "$1" = 4 ] && grep -q "does not use xalloc" <<<"$2"' _ "$rc" "$out"
start h3 "stats:off" 1 0 30
out=$("$TOOL" "$h3" 2>&1); rc=$?
check "stats:off (rc $rc): $out" bash -c '[ "$1" = 4 ] && grep -q "uses xalloc but publishes no statistics" <<<"$2"' _ "$rc" "$out"

# memfd_of PID: the descriptor of PID's statistics memory file.
memfd_of() {
    local f
    for f in /proc/"$1"/fd/*; do
        [ "$(readlink "$f" 2>/dev/null)" = "/memfd:xalloc-stats (deleted)" ] && { echo "$f"; return 0; }
    done
    return 1
}

# A process killed without running its exit code leaves nothing: its
# statistics lived in a memory file that died with it.
start h4 "" 1 0 30
wait_readable "$h4"
f4=$(memfd_of "$h4")
check "the statistics are a memory file of the process ($f4)" test -n "$f4"
check "... 0600 and owned by the process's user" test "$(stat -L -c '%a %u' "$f4")" = "600 $(id -u)"
cp "$f4" "$work/copy.stats"
kill -KILL "$h4"; wait "$h4" 2>/dev/null
out=$("$TOOL" "$h4" 2>&1); rc=$?
check "killed process: no such process, nothing to clean (rc $rc): $out" \
    bash -c '[ "$1" = 3 ] && grep -q "no such process" <<<"$2" && ! grep -q stale <<<"$2"' _ "$rc" "$out"
check "... no named file anywhere" bash -c '! ls /run/xalloc/"$1" /dev/shm/xalloc."$1" 2>/dev/null' _ "$h4"
# A file left by a library before format 1.1 (named files) is still
# recognised as stale and removed.
legacy=/dev/shm/xalloc.$h4
cp "$work/copy.stats" "$legacy"
out=$("$TOOL" "$h4" 2>&1); rc=$?
check "legacy stale file reported (rc $rc): $out" bash -c '[ "$1" = 3 ] && grep -q "removed the stale statistics file" <<<"$2"' _ "$rc" "$out"
check "... and removed" test ! -e "$legacy"
cp "$work/copy.stats" "$legacy"
out=$("$TOOL" --all 2>&1 >/dev/null)
check "--all removes legacy stale files too: $out" bash -c 'grep -q "removed stale statistics file $1" <<<"$2" && [ ! -e "$1" ]' _ "$legacy" "$out"

# Incompatible version: format major 99 in a copy.
printf '\x63\x00' | dd of="$work/copy.stats" bs=1 seek=8 conv=notrunc status=none
out=$("$TOOL" --file "$work/copy.stats" 2>&1); rc=$?
check "incompatible version names both (rc $rc): $out" \
    bash -c '[ "$1" = 6 ] && grep -q "format 99\\.1" <<<"$2" && grep -q "reads format 1.x" <<<"$2"' _ "$rc" "$out"

# ---- stats_dir (before format 1.1) names no file any more ----
d="$work/shm"; mkdir "$d"; chmod 1777 "$d"
start h5 "stats_dir:$d" 1 0 30
check "a process with a stats_dir (old xalloc-enable drop-ins) is read" wait_readable "$h5"
check "... and with --dir" bash -c '"$1" --dir "$2" "$3" >/dev/null' _ "$TOOL" "$d" "$h5"
check "... and nothing is created in that directory" bash -c '[ -z "$(ls -A "$1")" ]' _ "$d"
check "--config shows its stats_dir" bash -c '"$1" --config "$2" | grep -qE "^  stats_dir +$3 +XALLOC_CONF$"' _ "$TOOL" "$h5" "$d"
kill "$h5"; wait "$h5" 2>/dev/null

# ---- --dump: the plain library has no profiler ----
out=$("$TOOL" --dump "$h2" 2>&1); rc=$?
check "--dump on libxalloc.so.1 is refused, naming the profiling build (rc $rc): $out" \
    bash -c '[ "$1" = 7 ] && grep -q "no profiler in this library: preload libxalloc-prof.so.1" <<<"$2"' _ "$rc" "$out"

# ---- another pid namespace ----
if [ "$(id -u)" = 0 ] && unshare --pid --fork --mount-proc true 2>/dev/null; then
    unshare --pid --fork --mount-proc env LD_PRELOAD="$LIB" "$HOLDER" 4 0 30 >"$work/h6.out" 2>&1 &
    u=$!; pids+=("$u")
    for _ in $(seq 50); do grep -q ready "$work/h6.out" && break; sleep 0.1; done
    h6=$(pgrep -P "$u" | head -1)
    nspid=$(awk '/^NSpid:/ {print $NF}' "/proc/$h6/status")
    check "holder in a new pid namespace (host pid $h6, ns pid $nspid)" test "$nspid" != "$h6"
    wait_readable "$h6" || true
    out=$("$TOOL" --json "$h6" 2>&1)
    check "found from the host through /proc/PID/fd, named by its NSpid" \
        bash -c 'jq -e --argjson p "$1" ".pid == \$p and .program == \"holder\"" <<<"$2" >/dev/null' _ "$h6" "$out"
    kill "$h6" 2>/dev/null
else
    echo "skip - pid namespace case needs root and unshare"
fi

echo "tool.sh: $pass passed, $fail failed"
[ "$fail" = 0 ]
