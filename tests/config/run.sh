#!/bin/bash
# run.sh: integration tests of the tuning layer. Runs tests/config/probe
# (and a few system programs) under LD_PRELOAD=libxalloc.so.1 with good and
# bad XALLOC_CONF values and config files, and checks that each option has
# its effect, that every bad input gives its exact one-line message, and
# that the program's own output never changes. Output is TAP.
# Usage: tests/config/run.sh build/libxalloc.so.1 build/tests/config/probe
set -u
LIB=$(readlink -f "${1:?usage: run.sh LIB PROBE}")
PROBE_SRC=$(readlink -f "${2:?usage: run.sh LIB PROBE}")

if [ ! -f "$LIB" ]; then
    echo "check-config: FAIL: $LIB does not exist; build it with 'make lib'" >&2
    exit 1
fi
for s in malloc free xalloc_config_get xalloc_config_set; do
    if ! nm -D --defined-only "$LIB" | awk '{print $NF}' | grep -qx "$s"; then
        echo "check-config: FAIL: $LIB does not export $s (core allocator not landed yet?)" >&2
        exit 1
    fi
done

T=$(mktemp -d /tmp/xalloc-check-config.XXXXXX)
trap 'rm -rf "$T"' EXIT
# Section names match the executable's base name: give the probe a few.
cp "$PROBE_SRC" "$T/probe"
cp "$PROBE_SRC" "$T/other-program"
cp "$PROBE_SRC" "$T/third"
PROBE=$T/probe
ulimit -c 0

n=0
failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() {
    n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"
    shift
    for l in "$@"; do echo "#   $l"; done
    echo "#   stdout: $(head -c 600 "$T/out")"
    echo "#   stderr: $(head -c 900 "$T/err")"
}

# xrun [VAR=VALUE...] -- COMMAND...: runs under the library, with no
# configuration other than the one given (no /etc/xalloc.conf, no inherited
# XALLOC_CONF). Sets rc; output in $T/out and $T/err.
xrun() {
    local envs=()
    while [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    env -u XALLOC_CONF XALLOC_CONF_FILE= "${envs[@]}" LD_PRELOAD="$LIB" "$@" \
        >"$T/out" 2>"$T/err"
    rc=$?
}

expect_err() { # name, expected stderr (exact, may be several lines)
    if [ "$rc" = 0 ] && [ "$(cat "$T/err")" = "$2" ] && cmp -s "$T/out" "$T/base"; then
        ok "$1"
    else
        not_ok "$1" "rc=$rc, expected stderr: $2"
    fi
}

ncpu=$(nproc)
DA=$((4 * ncpu))
[ "$DA" -gt 1024 ] && DA=1024
NOPT=$(grep -c '^XA_OPTION(' "$(dirname "$0")/../../src/options.def")

# ---- baseline and good configurations ----
"$PROBE" >"$T/base" 2>"$T/base.err"
xrun -- "$PROBE"
expect_err "no configuration: output unchanged, silent" ""
xrun XALLOC_CONF=thp:never,arenas:8 -- "$PROBE"
expect_err "good XALLOC_CONF: output unchanged, silent" ""
xrun "XALLOC_CONF= thp : never , decay_ms=2s,,tcache_max:64k,junk:on,stats:off" -- "$PROBE"
expect_err "spaces, '=', empty items, every type: silent" ""

# ---- bad XALLOC_CONF ----
xrun XALLOC_CONF=arenas:0 -- "$PROBE"
expect_err "out of range value" "xalloc: XALLOC_CONF: arenas: '0' is out of range 1..1024; using $DA"
xrun XALLOC_CONF=thp_mode:never -- "$PROBE"
expect_err "unknown key with suggestion" "xalloc: XALLOC_CONF: unknown option 'thp_mode' (did you mean 'thp'?)"
xrun XALLOC_CONF=thp:sometimes,decay_ms:1min,arenas:4 -- "$PROBE" get arenas
printf 'arenas=4 (XALLOC_CONF)\n' >"$T/base.get"
if [ "$(cat "$T/err")" = "xalloc: XALLOC_CONF: thp: 'sometimes' is not one of default|always|never; using default
xalloc: XALLOC_CONF: decay_ms: '1min' is not a duration (ms, or with an ms or s suffix); using 1000" ] &&
    cmp -s "$T/out" "$T/base.get"; then
    ok "two errors, two lines, the good item still applies"
else
    not_ok "two errors, two lines, the good item still applies"
fi
long=$(head -c 100000 /dev/zero | tr '\0' 7)
xrun "XALLOC_CONF=decay_ms:$long" -- "$PROBE"
expect_err "very long value: one truncated line" \
    "xalloc: XALLOC_CONF: decay_ms: '$(head -c 64 /dev/zero | tr '\0' 7)...' is out of range 0..3600000; using 1000"
xrun "XALLOC_CONF=$(printf 'thp:\001\377x')" -- "$PROBE"
expect_err "binary bytes are escaped" \
    "xalloc: XALLOC_CONF: thp: '\\x01\\xffx' is not one of default|always|never; using default"
xrun XALLOC_CONF=arenas:2,arenas:3 -- "$PROBE"
expect_err "duplicate key" "xalloc: XALLOC_CONF: arenas: set more than once; using 3"

# ---- verbose ----
xrun XALLOC_CONF=verbose:true,thp:never -- "$PROBE"
lines=$(grep -c '^xalloc: config: ' "$T/err")
if [ "$lines" = "$NOPT" ] && [ "$(wc -l <"$T/err")" = "$NOPT" ] &&
    grep -qx 'xalloc: config: thp=never (XALLOC_CONF)' "$T/err" &&
    grep -qx 'xalloc: config: verbose=true (XALLOC_CONF)' "$T/err" &&
    grep -qx "xalloc: config: arenas=$DA (default)" "$T/err" &&
    grep -qx 'xalloc: config: tcache_max=1m (default)' "$T/err"; then
    ok "verbose prints the configuration once ($NOPT lines), with sources"
else
    not_ok "verbose prints the configuration once ($NOPT lines), with sources"
fi

# ---- xalloc_config_get / set ----
xrun XALLOC_CONF=arenas:3,thp:never -- "$PROBE" get arenas thp numa tcache_max
if [ "$(cat "$T/out")" = "arenas=3 (XALLOC_CONF)
thp=never (XALLOC_CONF)
numa=on (default)
tcache_max=1m (default)" ] && [ ! -s "$T/err" ]; then
    ok "xalloc_config_get reports values and sources"
else
    not_ok "xalloc_config_get reports values and sources"
fi
xrun -- "$PROBE" set decay_ms:500
if [ "$(cat "$T/out")" = "rc=0 msg=" ]; then ok "xalloc_config_set decay_ms"; else not_ok "xalloc_config_set decay_ms"; fi
xrun -- "$PROBE" set arenas:2
if [ "$(cat "$T/out")" = "rc=-1 msg=xalloc_config_set: arenas: cannot change at run time (only decay_ms, background_thread, stats_interval_ms, prof_active can); using $DA" ] &&
    [ ! -s "$T/err" ]; then
    ok "xalloc_config_set refuses start-up options, quietly"
else
    not_ok "xalloc_config_set refuses start-up options, quietly"
fi

# ---- the configuration file ----
F=$T/xalloc.conf
cat >"$F" <<'EOF'
# host defaults
arenas:2
thp:never      # no huge pages here

[probe]
arenas:5, decay_ms:250ms
[other-program]
arenas=7
bogus_only_for_other:1
EOF
xrun XALLOC_CONF_FILE="$F" -- "$T/probe" get arenas thp decay_ms
if [ "$(cat "$T/out")" = "arenas=5 ($F)
thp=never ($F)
decay_ms=250 ($F)" ] && [ ! -s "$T/err" ]; then
    ok "file: global lines plus the [probe] section; other sections' errors stay quiet"
else
    not_ok "file: global lines plus the [probe] section; other sections' errors stay quiet"
fi
xrun XALLOC_CONF_FILE="$F" -- "$T/other-program" get arenas
if [ "$(cat "$T/out")" = "arenas=7 ($F)" ] &&
    [ "$(cat "$T/err")" = "xalloc: $F:9: unknown option 'bogus_only_for_other' (known: thp, arenas, numa, decay_ms, purge, background_thread, tcache, tcache_max, stats, stats_dir, stats_interval_ms, stats_print, verbose, abort_on_error, junk, prof, prof_sample, prof_dir, prof_interval, prof_active, prof_final, prof_leak)" ]; then
    ok "file: [other-program] section applies to other-program only, with its error"
else
    not_ok "file: [other-program] section applies to other-program only, with its error"
fi
xrun XALLOC_CONF_FILE="$F" -- "$T/third" get arenas
if [ "$(cat "$T/out")" = "arenas=2 ($F)" ]; then ok "file: no section for 'third'"; else not_ok "file: no section for 'third'"; fi
xrun XALLOC_CONF_FILE="$F" XALLOC_CONF=arenas:9 -- "$T/probe" get arenas thp
if [ "$(cat "$T/out")" = "arenas=9 (XALLOC_CONF)
thp=never ($F)" ]; then ok "XALLOC_CONF beats the file"; else not_ok "XALLOC_CONF beats the file"; fi
xrun XALLOC_CONF_FILE="$F" XALLOC_CONF=verbose:on -- "$T/probe"
if grep -qx "xalloc: config: arenas=5 ($F:6)" "$T/err"; then
    ok "verbose names the file and line"
else
    not_ok "verbose names the file and line"
fi

printf 'thp:never\ndecay_ms:abc\n' >"$F"
xrun XALLOC_CONF_FILE="$F" -- "$PROBE"
expect_err "bad value in the file: message with path and line" \
    "xalloc: $F:2: decay_ms: 'abc' is not a duration (ms, or with an ms or s suffix); using 1000"
printf 'thp:never\r\narenas:3' >"$F" # CRLF, unterminated last line
xrun XALLOC_CONF_FILE="$F" -- "$PROBE" get arenas
if [ "$(cat "$T/out")" = "arenas=3 ($F)" ] && [ ! -s "$T/err" ]; then
    ok "CRLF and an unterminated last line"
else
    not_ok "CRLF and an unterminated last line"
fi
{ printf 'arenas:3\n'; head -c 2000 /dev/zero | tr '\0' ' '; printf 'x\n'; printf 'ju\0nk:on\n'; } >"$F"
xrun XALLOC_CONF_FILE="$F" -- "$PROBE"
expect_err "long line and NUL byte skipped" "xalloc: $F:2: line longer than 1024 bytes; skipped
xalloc: $F:3: line contains a NUL byte; skipped"
xrun XALLOC_CONF_FILE="$T/nope.conf" -- "$PROBE"
expect_err "missing file" "xalloc: $T/nope.conf: cannot open (no such file); file ignored"
head -c 70000 /dev/zero | tr '\0' '\n' >"$F"
xrun XALLOC_CONF_FILE="$F" -- "$PROBE"
expect_err "oversized file" "xalloc: $F: larger than 65536 bytes; file ignored"
xrun XALLOC_CONF_FILE="$T" -- "$PROBE"
expect_err "a directory as the file" "xalloc: $T: cannot read (is a directory); file ignored"

# ---- abort_on_error ----
xrun XALLOC_CONF=arenas:0,abort_on_error:true -- "$PROBE" 2>/dev/null # no "Aborted" from bash
if [ "$rc" = 134 ] && [ "$(cat "$T/err")" = "xalloc: XALLOC_CONF: arenas: '0' is out of range 1..1024; using $DA
xalloc: config: 1 error and abort_on_error is set; aborting" ] && [ ! -s "$T/out" ]; then
    ok "abort_on_error:true makes a bad value fatal (SIGABRT)"
else
    not_ok "abort_on_error:true makes a bad value fatal (SIGABRT)" "rc=$rc (want 134)"
fi
xrun XALLOC_CONF=abort_on_error:true,arenas:3 -- "$PROBE"
expect_err "abort_on_error:true without errors runs normally" ""

# ---- the option takes effect in the allocator ----
stats_ok=1
if ! nm -D --defined-only "$LIB" | awk '{print $NF}' | grep -qx xalloc_stats_get; then
    stats_ok=0
    not_ok "arenas:1 gives one arena" "xalloc_stats_get is not exported by $LIB yet"
fi
if [ $stats_ok = 1 ]; then
    xrun XALLOC_CONF=arenas:1 -- "$PROBE" arenas 6
    if [ "$(cat "$T/out")" = "narenas=1" ] && [ ! -s "$T/err" ]; then
        ok "arenas:1 gives one arena (6 threads)"
    else
        not_ok "arenas:1 gives one arena (6 threads)"
    fi
    xrun XALLOC_CONF=arenas:2 -- "$PROBE" arenas 6
    a=$(sed -n 's/^narenas=//p' "$T/out")
    if [ -n "$a" ] && [ "$a" -ge 1 ] && [ "$a" -le 2 ]; then
        ok "arenas:2 gives at most two arenas (6 threads: $a)"
    else
        not_ok "arenas:2 gives at most two arenas (6 threads)"
    fi
    xrun XALLOC_CONF=arenas:5 -- "$PROBE" arenas 6
    a=$(sed -n 's/^narenas=//p' "$T/out")
    if [ -n "$a" ] && [ "$a" -ge 2 ] && [ "$a" -le 5 ]; then
        ok "arenas:5 gives 2 to 5 arenas (6 threads: $a)"
    else
        not_ok "arenas:5 gives 2 to 5 arenas (6 threads)"
    fi
fi

# ---- outside the probe ----
env -u XALLOC_CONF XALLOC_CONF_FILE= XALLOC_CONF=arenas:0 LD_PRELOAD="$LIB" /bin/true 2>"$T/err"
rc=$?
if [ $rc = 0 ] && [ "$(cat "$T/err")" = "xalloc: XALLOC_CONF: arenas: '0' is out of range 1..1024; using $DA" ]; then
    ok "/bin/true reports the error (validation as xalloc-enable does it)"
else
    not_ok "/bin/true reports the error (validation as xalloc-enable does it)"
fi
printf 'pear\napple\nfig\n' | env -u XALLOC_CONF XALLOC_CONF_FILE= XALLOC_CONF=thp_mode:x \
    LD_PRELOAD="$LIB" sort >"$T/out" 2>"$T/err"
if [ "$(cat "$T/out")" = "apple
fig
pear" ] && [ "$(cat "$T/err")" = "xalloc: XALLOC_CONF: unknown option 'thp_mode' (did you mean 'thp'?)" ]; then
    ok "sort: output unchanged, one message"
else
    not_ok "sort: output unchanged, one message"
fi

echo "1..$n"
if [ $failed -ne 0 ]; then
    echo "check-config: $failed of $n tests FAILED" >&2
    exit 1
fi
echo "check-config: all $n tests passed"
