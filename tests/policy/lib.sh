# shellcheck shell=bash
# lib.sh: shared by the policy test scripts (sourced): TAP-style result
# lines, counters for the closing "N passed, N failed" line, "key value"
# lookup in a probe's output, and running the probe under the library.
# Expects LIB and PROBE to be set.
pass=0
fail=0
ok() { echo "ok   - $*"; pass=$((pass + 1)); }
bad() { echo "FAIL - $*"; fail=$((fail + 1)); }
val() { awk -v k="$1" '$1 == k { print $2 }' <<<"$2"; }
run() { env XALLOC_CONF="$1" LD_PRELOAD="$LIB" "$PROBE" "${@:2}"; }
THP=/sys/kernel/mm/transparent_hugepage/enabled
thp_mode() { sed -n 's/.*\[\(.*\)\].*/\1/p' "$THP"; }
