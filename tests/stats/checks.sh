# tests/stats/checks.sh: the result helpers of the statistics test scripts
# (sourced). ok/bad print one line and count; check DESC CMD... runs CMD.
# shellcheck shell=bash
fail=0 pass=0
ok() { pass=$((pass + 1)); echo "ok   - $*"; }
bad() { fail=$((fail + 1)); echo "FAIL - $*"; }
check() {
    local d=$1
    shift
    if "$@"; then ok "$d"; else bad "$d"; fi
}
