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
fail=0 pass=0
work=$(mktemp -d /tmp/xs-tool.XXXXXX)
chmod 755 "$work"
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
    wait 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

ok() { pass=$((pass + 1)); echo "ok   - $*"; }
bad() { fail=$((fail + 1)); echo "FAIL - $*"; }
check() { # check DESCRIPTION COMMAND...
    local d=$1; shift
    if "$@"; then ok "$d"; else bad "$d"; fi
}
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
# Frees return what passes an arena's dirty allowance (8 MiB) at once;
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

# Stale file: a process killed without running its exit code.
start h4 "" 1 0 30
wait_readable "$h4"
f4=$("$TOOL" --json "$h4" >/dev/null; ls /run/xalloc/"$h4" /dev/shm/xalloc."$h4" 2>/dev/null | head -1)
cp "$f4" "$work/copy.stats"
kill -KILL "$h4"; wait "$h4" 2>/dev/null
check "killed process left its file" test -e "$f4"
out=$("$TOOL" "$h4" 2>&1); rc=$?
check "stale file reported (rc $rc): $out" bash -c '[ "$1" = 3 ] && grep -q "removed the stale statistics file" <<<"$2"' _ "$rc" "$out"
check "... and removed" test ! -e "$f4"
cp "$work/copy.stats" "$f4"
out=$("$TOOL" --all 2>&1 >/dev/null)
check "--all removes stale files too: $out" bash -c 'grep -q "removed stale statistics file $1" <<<"$2" && [ ! -e "$1" ]' _ "$f4" "$out"

# Incompatible version: format major 99 in a copy.
printf '\x63\x00' | dd of="$work/copy.stats" bs=1 seek=8 conv=notrunc status=none
out=$("$TOOL" --file "$work/copy.stats" 2>&1); rc=$?
check "incompatible version names both (rc $rc): $out" \
    bash -c '[ "$1" = 6 ] && grep -q "format 99.0" <<<"$2" && grep -q "reads format 1.x" <<<"$2"' _ "$rc" "$out"

# ---- a symlink planted at the stats path ----
if [ "$(id -u)" = 0 ]; then
    d="$work/shm"; mkdir "$d"; chmod 1777 "$d"
    echo "precious" >"$work/victim"; chmod 644 "$work/victim"
    # sh's pid is the holder's after exec: the link sits at its exact path.
    sh -c 'setpriv --reuid=nobody --regid=nogroup --clear-groups ln -s "$1" "$2/xalloc.$$" &&
           exec env LD_PRELOAD="$3" XALLOC_CONF="stats_dir:$2" "$4" 1 0 30' \
        _ "$work/victim" "$d" "$LIB" "$HOLDER" >"$work/h5.out" 2>&1 &
    h5=$!; pids+=("$h5")
    for _ in $(seq 50); do grep -q ready "$work/h5.out" && break; sleep 0.1; done
    wait_readable "$h5" || true
    check "planted symlink not followed: victim intact" test "$(cat "$work/victim")" = precious
    check "... the stats file is a regular 0600 file of root" \
        test "$(stat -c '%F %a %U' "$d/xalloc.$h5" 2>/dev/null)" = "regular file 600 root"
    check "stats_dir found through /proc/PID/maps (no --dir)" bash -c '"$1" --no-kernel "$2" >/dev/null' _ "$TOOL" "$h5"
    check "... and with --dir" bash -c '"$1" --dir "$2" "$3" >/dev/null' _ "$TOOL" "$d" "$h5"
    kill "$h5"; wait "$h5" 2>/dev/null
    check "file removed at exit" test ! -e "$d/xalloc.$h5"
else
    echo "skip - symlink case needs root"
fi

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
    check "found through NSpid and /proc/PID/root" jq -e --argjson p "$h6" '.pid == $p and .program == "holder"' <<<"$out" >/dev/null
    kill "$h6" 2>/dev/null
else
    echo "skip - pid namespace case needs root and unshare"
fi

echo "tool.sh: $pass passed, $fail failed"
[ "$fail" = 0 ]
