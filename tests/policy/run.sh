#!/bin/bash
# run.sh: page-policy tests (issue: give memory back, THP awareness).
# Runs tests/policy/probe under LD_PRELOAD with different XALLOC_CONF and
# checks what the kernel reports (/proc/self/smaps, VmRSS). TAP-style lines,
# and a closing "N passed, N failed" line.
set -euo pipefail
LIB=$1
PROBE=$2
# shellcheck source=tests/policy/lib.sh
. "$(dirname "$0")/lib.sh"


# ---- transparent huge pages ----
if [ -r "$THP" ] && [ "$(thp_mode)" != never ]; then
    out=$(run "thp:always" thp)
    huge=$(val anon_huge_kb "$out")
    if [ "$huge" -ge 32768 ]; then ok "thp:always: 64 MiB heap backed by huge pages ($huge kB, system: $(thp_mode))"
    else bad "thp:always: only $huge kB in huge pages (system: $(thp_mode))"; fi
    out=$(run "thp:never" thp)
    huge=$(val anon_huge_kb "$out")
    if [ "$huge" -eq 0 ]; then ok "thp:never: no huge page (system: $(thp_mode))"
    else bad "thp:never: $huge kB in huge pages (system: $(thp_mode))"; fi
    # thp:default follows the system: madvise counts as never.
    out=$(run "thp:default" thp)
    huge=$(val anon_huge_kb "$out")
    if [ "$(thp_mode)" = always ] && [ "$huge" -gt 0 ] || { [ "$(thp_mode)" != always ] && [ "$huge" -eq 0 ]; }; then
        ok "thp:default follows the system setting ($(thp_mode): $huge kB)"
    else bad "thp:default with system $(thp_mode): $huge kB"; fi
    # With the system set to always, thp:never must still keep huge pages out.
    if [ -w "$THP" ]; then
        saved=$(thp_mode)
        trap 'echo "$saved" > "$THP"' EXIT
        if echo always > "$THP" 2>/dev/null; then
            out=$(run "thp:never" thp)
            huge=$(val anon_huge_kb "$out")
            if [ "$huge" -eq 0 ]; then ok "thp:never with system 'always': no huge page"
            else bad "thp:never with system 'always': $huge kB in huge pages"; fi
            # One 1 MiB block per chunk is half a chunk: sparse, so small
            # pages (tests/policy/return.sh checks that a dense heap is
            # promoted).
            out=$(run "thp:default" thp)
            huge=$(val anon_huge_kb "$out")
            if [ "$huge" -eq 0 ]; then ok "thp:default with system 'always': half-used chunks stay in small pages"
            else bad "thp:default with system 'always': $huge kB of huge pages for half-used chunks"; fi
            echo "$saved" > "$THP"
        else
            echo "note - cannot switch $THP here (not permitted): 'always' case not run"
        fi
        trap - EXIT
    else
        echo "note - $THP not writable (not root?): the 'always' system case is not run"
    fi
else
    bad "transparent huge pages unavailable ($THP missing or 'never'): cannot check THP policy"
fi

# ---- memory goes back ----
check_rss() {
    local conf=$1 decay=$2 label=$3
    local out live decayed trimmed peak limit
    out=$(run "$conf" rss "$decay")
    live=$(val live_kb "$out"); peak=$(val peak_kb "$out")
    decayed=$(val decayed_kb "$out"); trimmed=$(val trimmed_kb "$out")
    # Within 25% of the live bytes plus a fixed 64 MiB allowance (program,
    # libraries, metadata, partly used slabs).
    limit=$((live * 125 / 100 + 65536))
    if [ "$decayed" -le "$limit" ]; then
        ok "$label: RSS $peak kB at peak -> $decayed kB after decay (live $live kB, limit $limit)"
    else bad "$label: RSS $decayed kB after decay exceeds $limit (live $live kB, peak $peak)"; fi
    if [ "$trimmed" -le "$limit" ]; then ok "$label: after malloc_trim(0) $trimmed kB"
    else bad "$label: after malloc_trim(0) $trimmed kB exceeds $limit"; fi
}
check_rss "decay_ms:1000,thp:never" 1000 "decay_ms:1000"
check_rss "decay_ms:0,thp:never" 0 "decay_ms:0"
check_rss "decay_ms:500,thp:never,background_thread:true" 500 "background thread"

# malloc_trim(0) at once, with decay far away.
out=$(run "decay_ms:600000,thp:never" rss 0)
live=$(val live_kb "$out"); trimmed=$(val trimmed_kb "$out")
limit=$((live * 125 / 100 + 65536))
if [ "$trimmed" -le "$limit" ]; then ok "malloc_trim(0) purges at once with decay_ms:600000 ($trimmed kB)"
else bad "malloc_trim(0) with decay_ms:600000 left $trimmed kB (limit $limit)"; fi

# ---- memory of exited threads ----
out=$(run "decay_ms:500" exited 500)
held=$(val held_kb "$out"); after=$(val after_kb "$out"); reused=$(val reused_kb "$out")
if [ "$after" -le $((held / 4)) ]; then ok "freed memory of an exited thread returned ($held -> $after kB)"
else bad "freed memory of an exited thread kept ($held -> $after kB)"; fi
if [ "$reused" -le $((held + held / 10)) ]; then ok "and reused without growth ($reused kB)"
else bad "reallocation grew RSS to $reused kB (held $held)"; fi

echo "policy: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
