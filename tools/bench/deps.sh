#!/usr/bin/env bash
# deps.sh: makes sure what `make bench` needs is installed: the other
# allocators (to compare against), gnuplot (charts), valgrind (instruction
# counts), strace (system-call counts), redis, python3 and sqlite3 (the
# real-program workloads; python3 also runs the runner). As root it
# installs what is missing with apt-get; otherwise it prints the exact
# command and fails.
set -euo pipefail

missing=()
need_file() { # package, path that proves it is installed
    [[ -e "$2" ]] || missing+=("$1")
}
need_cmd() { # package, command it provides
    command -v "$2" >/dev/null 2>&1 || missing+=("$1")
}

libdir=/usr/lib/x86_64-linux-gnu
need_file libjemalloc2 "$libdir/libjemalloc.so.2"
need_file libmimalloc2.0 "$libdir/libmimalloc.so.2"
need_file libtcmalloc-minimal4 "$libdir/libtcmalloc_minimal.so.4"
need_cmd gnuplot-nox gnuplot
need_cmd valgrind valgrind
need_cmd strace strace
need_cmd redis-server redis-server
need_cmd redis-tools redis-benchmark
need_cmd python3 python3
need_cmd sqlite3 sqlite3

if ((${#missing[@]} == 0)); then
    exit 0
fi
if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
    echo "bench-deps: installing: ${missing[*]}"
    # Bounded: a stuck mirror must not hang `make bench` forever.
    timeout 600 apt-get update -qq || true
    DEBIAN_FRONTEND=noninteractive timeout 900 apt-get install -y "${missing[@]}"
else
    echo "bench-deps: missing packages: ${missing[*]}" >&2
    echo "bench-deps: run as root: apt-get install -y ${missing[*]}" >&2
    exit 1
fi
