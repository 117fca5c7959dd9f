#!/bin/bash
# tests/harden/faults.sh DRIVER: runs the fault driver (fault-injection
# build) under every fault kind: the Nth call failing (once, and four in a
# row) for N over the calls a run makes, every purge failing, every file
# call failing, and random faults of every kind with several seeds.
# Prints one summary line per group and the total of faults survived.
set -u
drv=$1
total=0 runs=0 fails=0
run() { # env-spec mode [seed]
    local out rc
    out=$(XALLOC_FAULT="$1" timeout 120 "$drv" "$2" "${3:-1}" 2>&1)
    rc=$?
    runs=$((runs + 1))
    if [ $rc -ne 0 ]; then
        fails=$((fails + 1))
        echo "not ok: XALLOC_FAULT='$1' $2 ${3:-}: exit $rc"
        echo "$out" | tail -n 5 | sed 's/^/    /'
        return
    fi
    local f=${out##*faults=}
    total=$((total + ${f%% *}))
}
# Calls per kind a run makes early on (mbind: none on a one-node machine;
# thread: the statistics thread). HX_FAULT_SCALE multiplies (make soak).
scale=${HX_FAULT_SCALE:-1}
for kv in mmap:24 mremap:12 madvise:16 mbind:2 file:12 thread:3; do
    kind=${kv%%:*} NMAX=$((${kv##*:} * scale))
    before=$total
    for n in $(seq 1 "$NMAX"); do
        run "$kind:nth=$n:count=1" sweep "$n"
        run "$kind:nth=$n:count=4" sweep "$((n + 100))"
    done
    echo "faults: $kind at call 1..$NMAX (1 and 4 in a row): $((total - before)) faults survived"
done
before=$total
run "madvise:nth=1:count=0" purge 3
echo "faults: every madvise failing (purge): $((total - before)) faults survived"
before=$total
msgs=$(XALLOC_CONF=verbose:true XALLOC_FAULT="file:nth=1:count=0" "$drv" stats 5 2>&1 >/dev/null |
    grep -c 'stats: cannot create')
run "file:nth=1:count=0" stats 5
if [ "$msgs" != 1 ]; then
    fails=$((fails + 1))
    echo "not ok: failed statistics file: $msgs messages with verbose:true (want 1)"
fi
echo "faults: every file call failing (statistics off, $msgs message): $((total - before)) faults survived"
before=$total
for seed in 1 2 3 4; do
    run "" random "$seed"
done
echo "faults: random, every kind at 2% (4 seeds): $((total - before)) faults survived"
echo "faults: $runs runs, $total faults injected and survived, $fails failed"
[ $fails -eq 0 ]
