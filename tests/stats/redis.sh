#!/usr/bin/env bash
# tests/stats/redis.sh: xalloc-stat against a real program. redis-server
# runs on 127.0.0.1 (random free port, no persistence) under LD_PRELOAD of
# xalloc with XALLOC_CONF=arenas:4; after redis-benchmark, xalloc-stat must
# show 4 arenas and allocated bytes within 10% of redis's own used_memory.
# Usage: redis.sh LIB XALLOC_STAT. Needs redis-server and redis-tools.
set -u
LIB=$1 TOOL=$2
for b in redis-server redis-benchmark redis-cli jq; do
    command -v "$b" >/dev/null || { echo "redis.sh: $b missing (apt-get install redis-server redis-tools jq)"; exit 1; }
done
work=$(mktemp -d /tmp/xs-redis.XXXXXX)
rs=
cleanup() {
    [ -n "$rs" ] && kill "$rs" 2>/dev/null && wait "$rs" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
fail=0
ok() { echo "ok   - $*"; }
bad() { fail=1; echo "FAIL - $*"; }

# A free port: bind-test a few random ones.
port=
for _ in $(seq 20); do
    p=$((20000 + RANDOM % 30000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then port=$p; break; fi
done
[ -n "$port" ] || { echo "redis.sh: no free port"; exit 1; }

env LD_PRELOAD="$LIB" XALLOC_CONF="arenas:4,stats_interval_ms:200" \
    redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
    --dir "$work" --daemonize no >"$work/redis.log" 2>&1 &
rs=$!
for _ in $(seq 100); do
    redis-cli -p "$port" ping 2>/dev/null | grep -q PONG && break
    sleep 0.1
done
redis-cli -p "$port" ping | grep -q PONG || { bad "redis-server did not start: $(tail -5 "$work/redis.log")"; exit 1; }

if grep -E 'libxalloc\.so\.1' "/proc/$rs/maps" | grep -q ' r-xp '; then
    ok "libxalloc.so.1 mapped r-xp in redis-server"
else
    bad "libxalloc.so.1 not mapped in redis-server"
fi

timeout 120 redis-benchmark -p "$port" -n 20000 -c 8 -d 256 -r 10000 -q \
    -t set,get,lpush,incr,sadd,hset >"$work/bench.out" 2>&1 || bad "redis-benchmark failed: $(tail -3 "$work/bench.out")"
# Some data that stays, so the comparison is about a real heap.
timeout 60 redis-benchmark -p "$port" -n 20000 -c 4 -d 1024 -r 20000 -q -t set >/dev/null 2>&1
sleep 0.5 # one stats_interval_ms and more: a snapshot after the load

used=$(redis-cli -p "$port" info memory | tr -d '\r' | awk -F: '$1 == "used_memory" {print $2}')
json=$("$TOOL" --json "$rs") || { bad "xalloc-stat failed on redis-server"; exit 1; }
alloc=$(jq '.totals.allocated' <<<"$json")
narenas=$(jq '.arenas | length' <<<"$json")
[ "$narenas" = 4 ] && ok "4 arenas" || bad "arenas: $narenas, expected 4"
jq -e '.config[] | select(.name == "arenas") | .value == "4" and .source == "XALLOC_CONF"' <<<"$json" >/dev/null &&
    ok "--config: arenas 4 from XALLOC_CONF" || bad "arenas option not reported from XALLOC_CONF"
echo "     redis used_memory $used, xalloc allocated $alloc"
if [ -n "$used" ] && [ "$alloc" -gt 0 ] &&
    awk -v a="$alloc" -v u="$used" 'BEGIN { d = a - u; if (d < 0) d = -d; exit !(d <= u / 10) }'; then
    ok "allocated within 10% of used_memory"
else
    bad "allocated $alloc vs used_memory $used: more than 10% apart"
fi
"$TOOL" "$rs" | grep -q "^Arenas: 4 " && ok "text report shows 4 arenas" || bad "text report"
"$TOOL" --prometheus "$rs" | grep -qE "^xalloc_narenas\{pid=\"$rs\",program=\"redis-server\"\} 4$" &&
    ok "prometheus: narenas 4 labelled with pid and program" || bad "prometheus labels"

n=0
for f in /proc/"$rs"/fd/*; do
    [ "$(readlink "$f" 2>/dev/null)" = "/memfd:xalloc-stats (deleted)" ] && n=$((n + 1))
done
[ "$n" = 1 ] && ok "one statistics memory file in /proc/$rs/fd" || bad "$n statistics memory files in /proc/$rs/fd"
kill "$rs"; wait "$rs" 2>/dev/null
ls /run/xalloc/"$rs" /dev/shm/xalloc."$rs" >/dev/null 2>&1 && bad "a named statistics file left after exit" ||
    ok "nothing left behind when redis exits"
rs=
[ "$fail" = 0 ] && echo "redis.sh: passed" || echo "redis.sh: FAILED"
exit "$fail"
