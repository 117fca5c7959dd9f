#!/bin/bash
# tests/harden/soak-redis.sh LIB OUTDIR [SECONDS]: redis-server under
# xalloc (LD_PRELOAD) on a free loopback port, driven by redis-benchmark
# for SECONDS (default 600) in rounds that rotate the value size (64 B,
# 512 B, 4 KiB, 32 KiB) over a fixed key space, with a FLUSHALL every
# fourth round. RSS and redis's used_memory are sampled every second into
# OUTDIR/redis-rss.csv and drawn into OUTDIR/redis-rss.png (gnuplot).
# Fails on any benchmark error, or if RSS drifts: the peak RSS of the last
# third of the run may exceed that of the middle third by at most 10%
# (+16 MiB): after warm-up the curve must be flat.
set -u
lib=$1 out=$2 secs=${3:-600}
mkdir -p "$out"
for c in redis-server redis-benchmark redis-cli gnuplot; do
    command -v $c >/dev/null || { echo "soak-redis: SKIP: $c not installed"; exit 0; }
done
port=""
for _ in $(seq 50); do
    p=$((20000 + RANDOM % 30000))
    if ! (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null; then port=$p; break; fi
done
[ -n "$port" ] || { echo "soak-redis: no free port"; exit 1; }
dir=$(mktemp -d)
trap 'kill $pid $sampler 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$dir"' EXIT
LD_PRELOAD=$lib redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no \
    --dir "$dir" --daemonize no --logfile "$dir/redis.log" &
pid=$!
for _ in $(seq 50); do redis-cli -p "$port" ping 2>/dev/null | grep -q PONG && break; sleep 0.1; done
grep -q xalloc "/proc/$pid/maps" || { echo "soak-redis: xalloc not loaded in redis"; exit 1; }
csv=$out/redis-rss.csv
echo "seconds,rss_mib,used_memory_mib" > "$csv"
( t0=$SECONDS
  while kill -0 $pid 2>/dev/null; do
      rss=$(awk '/^VmRSS/ {print $2}' /proc/$pid/status 2>/dev/null)
      used=$(redis-cli -p "$port" info memory 2>/dev/null | awk -F: '/^used_memory:/ {printf "%d", $2}')
      [ -n "$rss" ] && [ -n "$used" ] &&
          echo "$((SECONDS - t0)),$((rss / 1024)),$((used / 1048576))" >> "$csv"
      sleep 1
  done ) &
sampler=$!
start=$SECONDS round=0 errors=0 requests=0
sizes=(64 512 2048 8192)
while [ $((SECONDS - start)) -lt "$secs" ]; do
    d=${sizes[$((round % 4))]}
    res=$(redis-benchmark -h 127.0.0.1 -p "$port" -q -n 20000 -c 16 -P 8 -r 20000 -d "$d" \
        -t set,get,lpush,lpop,hset,sadd,mset 2>&1)
    rc=$?
    if [ $rc -ne 0 ] || grep -qiE 'error|refused' <<< "$res"; then
        errors=$((errors + 1)); echo "round $round: exit $rc: $(head -n 3 <<< "$res")"
    fi
    requests=$((requests + 140000))
    round=$((round + 1))
    [ $((round % 4)) -eq 0 ] && redis-cli -p "$port" flushall >/dev/null
done
sleep 2
kill $sampler 2>/dev/null
n=$(($(wc -l < "$csv") - 1))
mid=$(awk -F, -v n=$n 'NR > 1 && NR - 1 > n / 3 && NR - 1 <= 2 * n / 3 && $2 > m {m = $2} END {print m + 0}' "$csv")
last=$(awk -F, -v n=$n 'NR > 1 && NR - 1 > 2 * n / 3 && $2 > m {m = $2} END {print m + 0}' "$csv")
gnuplot <<GP
set terminal pngcairo size 900,480
set output "$out/redis-rss.png"
set datafile separator ","
set key top left noenhanced
set termoption noenhanced
set xlabel "seconds"
set ylabel "MiB"
set title "redis-server under xalloc: $round rounds of redis-benchmark, values of 64 B to 8 KiB"
plot "$csv" using 1:2 with lines lw 2 title "RSS", "$csv" using 1:3 with lines title "redis used_memory"
GP
drift=$(awk -v a="$mid" -v b="$last" 'BEGIN {printf "%.1f", a ? (b - a) * 100 / a : 0}')
echo "soak-redis: $((SECONDS - start)) s, $round rounds, $requests requests, $errors failed rounds;" \
     "peak RSS middle third $mid MiB, last third $last MiB (drift $drift%); chart $out/redis-rss.png"
[ $errors -eq 0 ] && [ "$last" -le $((mid + mid / 10 + 16)) ]
