#!/bin/bash
# tests/integration/run.sh: runs the danger-list probes (probe_*.c: first
# operation, constructors/atexit/destructors, thread exit, dlopen, TSD
# destructors, fork, 10,000 threads, invalid frees) and prints TAP.
# Each probe checks the allocator it runs on itself and exits 0 on success;
# this driver adds the preload, a time limit, and the expected output.
#
# usage: run.sh xalloc|glibc BINDIR [LIBXALLOC]
#   xalloc: every probe runs with LD_PRELOAD=LIBXALLOC (make check-danger)
#   glibc:  no preload, XT_ALLOCATOR=glibc (make check-api-glibc): proves
#           that the probes pass on the system allocator
set -u
MODE=$1
BIN=$2
if [ "$MODE" = xalloc ]; then
    LIB=$(readlink -f "$3")
    PRE=(env LD_PRELOAD="$LIB" XT_ALLOCATOR=xalloc)
else
    PRE=(env -u LD_PRELOAD XT_ALLOCATOR=glibc)
fi
T=${XT_PROBE_TIMEOUT:-300}
n=0
failures=0

# probe NAME [ARGS...]: runs BIN/NAME; each ';'-separated line of
# $want_out, if set, must appear in its stdout.
probe() {
    local name=$1 out err rc start
    shift
    out=$(mktemp)
    err=$(mktemp)
    start=$(date +%s)
    timeout "$T" "${PRE[@]}" "$BIN/$name" "$@" >"$out" 2>"$err"
    rc=$?
    n=$((n + 1))
    local missing= w
    IFS=';' read -ra wants <<<"${want_out:-}"
    for w in "${wants[@]}"; do
        grep -qxF "$w" "$out" || missing=1
    done
    if [ $rc -eq 0 ] && [ -z "$missing" ]; then
        echo "ok $n - $name ($(($(date +%s) - start)) s)"
        sed 's/^/# /' "$out"
    else
        failures=$((failures + 1))
        echo "not ok $n - $name: exit status $rc${want_out:+, want \"$want_out\" on stdout}"
        sed 's/^/# stdout: /' "$out" | tail -n 20
        sed 's/^/# stderr: /' "$err" | tail -n 20
    fi
    rm -f "$out" "$err"
    want_out=
}

echo "TAP version 13"
want_out="main done;destructor done" probe probe_ctor_atexit
probe probe_first_in_thread
probe probe_dlopen "$BIN/libxt_dlopen.so"
probe probe_tsd
probe probe_thread_exit
probe probe_many_threads
probe probe_fork
probe probe_bad_free
echo "1..$n"
[ $failures -eq 0 ]
