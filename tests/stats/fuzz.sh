#!/usr/bin/env bash
# tests/stats/fuzz.sh: no content of the statistics file can hurt the
# process that publishes it, nor xalloc-stat (issue 16). A content-verified
# workload (victim) runs under LD_PRELOAD with stats_interval_ms:10 while
# fuzz_statfile overwrites its statistics memory file thousands of times
# (random bytes, extreme values, hostile header fields and requests) and
# runs xalloc-stat on it every 200 ms. Then: the process is alive, its
# heap verified byte for byte, its file heals (xalloc-stat reads it), the
# options are those it started with (start-up ones untouched, run-time
# ones within their ranges), and the ignored requests were counted.
# Usage: fuzz.sh LIB XALLOC_STAT VICTIM FUZZER [SECONDS]
set -u
LIB=$1 TOOL=$2 VICTIM=$3 FUZZER=$4 SECS=${5:-8}
work=$(mktemp -d /tmp/xs-fuzz.XXXXXX)
v=
cleanup() {
    [ -n "$v" ] && kill -KILL "$v" 2>/dev/null
    wait 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
# shellcheck source=tests/stats/checks.sh
. "$(dirname "$0")/checks.sh"

env LD_PRELOAD="$LIB" XALLOC_CONF=stats_interval_ms:10,arenas:3 "$VICTIM" $((SECS + 30)) \
    >"$work/victim.out" 2>"$work/victim.err" &
v=$!
for _ in $(seq 100); do grep -q ready "$work/victim.out" 2>/dev/null && break; sleep 0.05; done
for _ in $(seq 100); do "$TOOL" --no-kernel "$v" >/dev/null 2>&1 && break; sleep 0.05; done
before=$("$TOOL" --no-kernel --json "$v")
check "victim publishes before the fuzz" jq -e '.totals.nmalloc > 0' <<<"$before" >/dev/null

"$FUZZER" "$v" "$TOOL" "$SECS" >"$work/fuzz.out" 2>&1
rc=$?
cat "$work/fuzz.out"
check "fuzzer: process and xalloc-stat survived every write (rc $rc)" test "$rc" = 0
check "the process is alive" kill -0 "$v"

# The file heals at the next publication (within stats_interval_ms).
after=
for _ in $(seq 50); do
    after=$("$TOOL" --no-kernel --json "$v" 2>/dev/null) && jq -e . <<<"$after" >/dev/null 2>&1 && break
    after=
    sleep 0.05
done
check "xalloc-stat reads the file again once the fuzz stops" test -n "$after"
cfg() { jq -r --arg n "$1" '.config[] | select(.name == $n) | "\(.value) \(.source)"' <<<"$after"; }
check "start-up options untouched: thp $(cfg thp), arenas $(cfg arenas)" \
    test "$(cfg thp)" = "default default" -a "$(cfg arenas)" = "3 XALLOC_CONF"
check "... stats_dir $(cfg stats_dir | tr ' ' /)" test "$(cfg stats_dir)" = " default"
dm=$(cfg decay_ms | cut -d' ' -f1) si=$(cfg stats_interval_ms | cut -d' ' -f1)
check "run-time options within their ranges: decay_ms $dm (0..3600000), stats_interval_ms $si (10..3600000)" \
    bash -c '[ "$1" -ge 0 ] && [ "$1" -le 3600000 ] && [ "$2" -ge 10 ] && [ "$2" -le 3600000 ]' _ "$dm" "$si"
ign=$(jq '.requests.ignored' <<<"$after")
srv=$(jq '.requests.served' <<<"$after")
check "requests it could not use were ignored and counted ($ign ignored, $srv served)" test "$ign" -gt 0
out=$("$TOOL" --no-kernel --set decay_ms:250 "$v" 2>&1); rc=$?
check "a genuine request is still served afterwards (rc $rc): $out" test "$rc" = 0

kill -TERM "$v"
wait "$v"; rc=$?
v=
check "the workload verified its heap and exited 0 (rc $rc): $(tail -1 "$work/victim.out") $(head -c 300 "$work/victim.err")" \
    test "$rc" = 0
echo "fuzz.sh: $pass passed, $fail failed"
[ "$fail" = 0 ]
