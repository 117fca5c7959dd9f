#!/bin/bash
# numa-check.sh: boots the 2-node and the 4-node qemu (TCG) guests one
# after the other, runs the placement checks in each (guest-init.sh) and
# prints the table of results (evaluate.py). Exit status 1 when any check
# failed or a guest did not finish.
# Usage: tests/numa/numa-check.sh BUILD
set -uo pipefail
build=$1
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d "${TMPDIR:-/tmp}/xa-numa-check.XXXXXX")
start=$(date +%s)
for nodes in 2 4; do
    t0=$(date +%s)
    "$here/run-guest.sh" check "$nodes" "$out" "$build"
    rc=$?
    echo "numa-check: $nodes-node guest: $(($(date +%s) - t0)) s, qemu exit $rc"
done
python3 "$here/evaluate.py" "$out"/console-2-check.log "$out"/console-4-check.log
rc=$?
mkdir -p "$build/numa"
cp "$out"/console-*-check.log "$build/numa/" 2>/dev/null
rm -rf "$out"
echo "numa-check: $(($(date +%s) - start)) s in all; guest consoles in $build/numa/console-*-check.log"
exit $rc
