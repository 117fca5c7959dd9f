#!/usr/bin/env python3
"""run.py: the benchmark runner of tools/bench (Python 3.11, stdlib only).

Runs every workload (the C programs built into build/bench/, plus the real
programs: redis-server driven by redis-benchmark, python3 running
scripts/pywork.py and the sqlite3 shell running scripts/sqlwork.sql, whose
output must be the same under every allocator) under glibc (no preload),
xalloc and each installed one of jemalloc, mimalloc and tcmalloc, with
LD_PRELOAD. Allocators are
interleaved inside each repetition (A,B,C,D,E, then again) so machine noise
hits all of them alike; medians of the repetitions are reported. For each run
it records wall time, peak RSS and minor page faults from the kernel's
accounting of the finished process (wait4(): ru_maxrss, ru_minflt) plus the
workload's own RESULT figures.

Deterministic figures come from two extra passes: callgrind instruction counts
per malloc/free pair (two pair counts, difference / difference in pairs), and
the system calls made in the steady state of the large-fragmented workload
(strace, counted between the workload's XBENCH markers).

Writes, into --out: RESULTS.md (tables), results.csv (every run),
results.json (medians and machine), *.png (gnuplot charts), logs/ (stderr of
failed runs). With --readme, refreshes the results summary in that README
between its `<!-- results:begin -->` and `<!-- results:end -->` markers.
"""
from __future__ import annotations

import argparse
import csv
import datetime
import difflib
import json
import math
import os
import platform
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
SCRIPTS = os.path.join(HERE, "scripts")   # inputs of the real-program workloads
SQL_BATCH = 10000                         # sqlite3 rows per transaction

# Environment variables that tune an allocator: stripped from the base
# environment so a stray setting in the caller's shell cannot skew a column.
TUNING_VARS = ("LD_PRELOAD", "XALLOC_CONF", "XALLOC_CONF_FILE", "MALLOC_CONF",
               "GLIBC_TUNABLES", "MALLOC_ARENA_MAX", "MALLOC_TOP_PAD_",
               "MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_", "PYTHONMALLOC")
TUNING_PREFIXES = ("MIMALLOC_", "TCMALLOC_", "JE_MALLOC_CONF", "_RJEM_")

# name, shared object to look for, Debian package that ships it
OTHER_ALLOCATORS = [
    ("jemalloc", "libjemalloc.so.2", "libjemalloc2"),
    ("mimalloc", "libmimalloc.so.2", "libmimalloc2.0"),
    ("tcmalloc", "libtcmalloc_minimal.so.4", "libtcmalloc-minimal4"),
]
DEBIAN_LIBDIRS = ("/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu",
                  "/usr/lib64", "/usr/lib")


# ---------------------------------------------------------------- allocators

@dataclass
class Allocator:
    name: str
    lib: str | None          # None: the C library's own malloc, no preload
    expect: str              # file name bench_malloc_owner() must report
    version: str = ""


def find_lib(soname: str) -> str | None:
    """Path of a shared library, from `ldconfig -p` or the Debian paths."""
    try:
        out = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True,
                             timeout=20).stdout
        for line in out.splitlines():
            line = line.strip()
            if line.startswith(soname + " ") and "x86-64" in line and "=>" in line:
                path = line.split("=>", 1)[1].strip()
                if os.path.exists(path):
                    return path
    except (OSError, subprocess.SubprocessError):
        pass
    for d in DEBIAN_LIBDIRS:
        p = os.path.join(d, soname)
        if os.path.exists(p):
            return p
    return None


def pkg_version(pkg: str) -> str:
    try:
        r = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", pkg],
                           capture_output=True, text=True, timeout=20)
        return r.stdout.strip() if r.returncode == 0 else ""
    except (OSError, subprocess.SubprocessError):
        return ""


def xalloc_version() -> str:
    ver = {}
    try:
        with open(os.path.join(REPO, "include", "xalloc.h")) as f:
            for line in f:
                m = re.match(r"#define XALLOC_VERSION_(MAJOR|MINOR|PATCH) (\d+)", line)
                if m:
                    ver[m.group(1)] = m.group(2)
    except OSError:
        pass
    v = ".".join(ver.get(k, "?") for k in ("MAJOR", "MINOR", "PATCH"))
    try:
        rev = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=20).stdout.strip()
        dirty = subprocess.run(["git", "-C", REPO, "status", "--porcelain", "--", "src", "include"],
                               capture_output=True, text=True, timeout=20).stdout.strip()
        if rev:
            v += f" (git {rev}{'+dirty' if dirty else ''})"
    except (OSError, subprocess.SubprocessError):
        pass
    return v


def discover_allocators(xalloc_lib: str, wanted: list[str] | None,
                        notes: list[str]) -> list[Allocator]:
    glibc_ver = os.confstr("CS_GNU_LIBC_VERSION") or "glibc"
    allocs = [Allocator("glibc", None, "libc.so.6", glibc_ver.replace("glibc ", ""))]
    if os.path.exists(xalloc_lib):
        allocs.append(Allocator("xalloc", os.path.abspath(xalloc_lib),
                                os.path.basename(xalloc_lib), xalloc_version()))
    else:
        notes.append(f"SKIP xalloc: {xalloc_lib} not found (run `make lib`).")
    for name, soname, pkg in OTHER_ALLOCATORS:
        path = find_lib(soname)
        if path:
            allocs.append(Allocator(name, path, soname, pkg_version(pkg)))
        else:
            notes.append(f"SKIP {name}: {soname} not installed "
                         f"(apt-get install -y {pkg}).")
    if wanted:
        unknown = set(wanted) - {a.name for a in allocs}
        for u in sorted(unknown):
            notes.append(f"SKIP {u}: requested but not available.")
        allocs = [a for a in allocs if a.name in wanted]
    return allocs


# ---------------------------------------------------------------- cases

EnvFn = Callable[[str], "dict[str, str] | None"]


def no_env(_alloc: str) -> dict[str, str]:
    return {}


def thp_env(mode: str) -> EnvFn:
    """Per-allocator settings for a THP mode. Only xalloc and jemalloc have a
    per-process switch for both directions; glibc and mimalloc can only opt
    in (hugetlb tunable, large OS pages), and the system default here is
    `madvise`, where not advising means no huge pages; tcmalloc (gperftools)
    has no switch at all and runs with its defaults in both rows."""
    def env(alloc: str) -> dict[str, str]:
        if alloc == "xalloc":
            return {"XALLOC_CONF": f"thp:{mode}"}
        if alloc == "jemalloc":
            return {"MALLOC_CONF": f"thp:{mode}"}
        if alloc == "glibc" and mode == "always":
            return {"GLIBC_TUNABLES": "glibc.malloc.hugetlb=1"}
        if alloc == "mimalloc" and mode == "always":
            return {"MIMALLOC_LARGE_OS_PAGES": "1"}
        return {}
    return env


THP_NOTE = ("THP rows: xalloc gets XALLOC_CONF=thp:MODE, jemalloc MALLOC_CONF=thp:MODE; "
            "for thp:always glibc gets GLIBC_TUNABLES=glibc.malloc.hugetlb=1 and mimalloc "
            "MIMALLOC_LARGE_OS_PAGES=1, for thp:never they run with defaults (no advice, "
            "which under the system's `madvise` setting means no huge pages); tcmalloc has "
            "no THP switch and runs with its defaults in both rows. The system THP setting "
            "is never changed (it is global to the machine).")


@dataclass
class Case:
    id: str                  # row label
    group: str
    prog: str                # program in build/bench, or one of REAL_PROGRAMS
    args: list[str]
    metric: str = "secs"     # RESULT key shown in the main table (lower is better)
    unit: str = "s"
    scale_metric: float = 1.0  # e.g. 1e-3 to show ns as us
    env: EnvFn = no_env
    details: list[str] = field(default_factory=list)
    allocs: list[str] | None = None   # None: every allocator
    note: str = ""


def human_size(n: int) -> str:
    for unit, div in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div and n % div == 0:
            return f"{n // div} {unit}"
    return f"{n} B"


PROFILES = {
    # scale multiplies iteration counts; rss/pause/redis are the big fixed costs;
    # py_n (python3 records) and sql_rows (sqlite3 rows) size the real programs
    # smoke: every workload once with tiny counts, for `make check-bench`
    "smoke": dict(reps=1, scale=0.02, ovsdb_rows=(200, 2000), rss_total="32M",
                  pause_ms=50, redis_n=2000, py_n=500, sql_rows=5000,
                  cg_pairs=(2000, 6000), strace_cycles=100, timeout=60, budget_s=120),
    "quick": dict(reps=3, scale=0.1, ovsdb_rows=(1000, 20000), rss_total="128M",
                  pause_ms=300, redis_n=10000, py_n=4000, sql_rows=40000,
                  cg_pairs=(20000, 60000), strace_cycles=500, timeout=120, budget_s=180),
    "default": dict(reps=5, scale=2.5, ovsdb_rows=(1000, 200000), rss_total="1G",
                    pause_ms=2000, redis_n=100000, py_n=12000, sql_rows=200000,
                    cg_pairs=(100000, 300000), strace_cycles=2000, timeout=300,
                    budget_s=900),
    "full": dict(reps=7, scale=4.0, ovsdb_rows=(1000, 200000), rss_total="1G",
                 pause_ms=12000, redis_n=300000, py_n=40000, sql_rows=500000,
                 cg_pairs=(100000, 500000), strace_cycles=5000, timeout=600,
                 budget_s=3600),
}


# workloads that are installed programs, not built in build/bench: the
# Debian packages that provide them (a case whose program is missing is skipped)
REAL_PROGRAMS = {"redis": "redis-server redis-tools", "python3": "python3",
                 "sqlite3": "sqlite3"}


def n(x: float) -> str:
    return str(max(1, int(round(x))))


def build_cases(p: dict) -> list[Case]:
    s = p["scale"]
    cases: list[Case] = []
    # malloc-test: pairs per size chosen so each run is ~0.1-0.3 s on a good
    # allocator but stays bounded on one that makes a system call per pair.
    pairs = {64: 5e6, 1024: 5e6, 9300: 3e6, 65536: 1e6, 1048576: 2e5}
    for size, pr in pairs.items():
        for t in (1, 2):
            cases.append(Case(f"malloc-test {human_size(size)} t{t}", "malloc-test",
                              "malloc_test", [f"threads={t}", f"size={size}",
                                              f"pairs={n(pr * s)}"],
                              details=["ns_per_pair", "ops_per_sec", "minflt"]))
    # more threads than cores (5 on this 2-core machine), 2 MiB included:
    # blocks mapped fresh each time would show here
    for size, pr in {64: 2e6, 1024: 2e6, 9300: 1e6, 2097152: 1e5}.items():
        cases.append(Case(f"malloc-test {human_size(size)} t5", "malloc-test",
                          "malloc_test", ["threads=5", f"size={size}", f"pairs={n(pr * s)}"],
                          details=["ns_per_pair", "ops_per_sec", "minflt"]))
    # batches: B blocks allocated, then freed, in rounds (a request's
    # buffers); more blocks than one slab or span holds
    for size, b in {1024: 100, 4096: 40, 10240: 24}.items():
        cases.append(Case(f"malloc-test {human_size(size)} batch {b} t1", "malloc-test",
                          "malloc_test", ["threads=1", f"size={size}", f"batch={b}",
                                          f"pairs={n(2e6 * s)}"],
                          details=["ns_per_pair", "ops_per_sec"]))
    # batches that move through the sizes (sh6bench): what the allocator
    # kept for the classes it passed through, reused or held cold
    cases.append(Case("size sweep batches t2", "malloc-test", "sweep",
                      ["threads=2", f"rounds={n(4e3 * s)}", "max=1000"],
                      metric="ns_per_pair", unit="ns/pair", details=["ns_per_pair", "secs"]))
    # stats overhead: xalloc only, stats:off vs stats:on, same binary
    for st in ("off", "on"):
        cases.append(Case(f"malloc-test 64 B t1 stats:{st}", "stats", "malloc_test",
                          ["threads=1", "size=64", f"pairs={n(5e6 * s)}"],
                          env=(lambda a, st=st: {"XALLOC_CONF": f"stats:{st}"}),
                          details=["ns_per_pair"], allocs=["xalloc"]))
    # OVSDB-like
    small, big = p["ovsdb_rows"]
    ov_details = ["ops_per_sec", "setup_secs", "rss_work_kb", "rss_final_kb"]
    cases.append(Case(f"ovsdb update {small} rows", "ovsdb", "ovsdb",
                      ["mode=update", f"rows={small}", "workers=10", "rowmap=256",
                       "rpt=1", f"ops={n(300 * s)}"], details=ov_details))
    cases.append(Case(f"ovsdb update {big} rows", "ovsdb", "ovsdb",
                      ["mode=update", f"rows={big}", "workers=10", "rowmap=4",
                       "rpt=8", f"ops={n(1000 * s)}"], details=ov_details))
    cases.append(Case(f"ovsdb insert-only {big} rows", "ovsdb", "ovsdb",
                      ["mode=insert", f"rows={big}", "workers=10", "rowmap=4",
                       "rpt=16"], details=ov_details))
    cases.append(Case("ovsdb producer/consumer 1+10", "ovsdb", "ovsdb",
                      ["mode=pc", f"rows={small}", "workers=10", "rowmap=4",
                       f"ops={n(500 * s)}"], details=ov_details))
    # large-fragmented: the span counts are the point, only cycles scale
    for spans in (100, 1000, 10000):
        cases.append(Case(f"largefrag {spans} spans", "largefrag", "largefrag",
                          [f"spans={spans}", "cycles=2000000",
                           f"secs={max(0.05, 0.12 * s):.3g}"],
                          metric="ns_per_op", unit="ns/op",
                          details=["ns_per_op", "setup_secs", "rss_work_kb"]))
    cases.append(Case("larson t2", "threads", "larson",
                      ["threads=2", "slots=1000", f"ops={n(100000 * s)}", "rounds=20"],
                      details=["ops_per_sec", "rss_final_kb"]))
    # short-lived threads, two at a time (a thread per request): what a
    # thread's set-up and exit cost the allocator, next to its work
    cases.append(Case("thread churn 200", "threads", "churn",
                      [f"threads={max(10, int(200 * s))}", "live=2", "bytes=4m"],
                      details=["threads_per_sec", "rss_final_kb", "minflt"]))
    # the same with big heaps: each thread builds 64 MiB through a window of
    # 4,096 blocks (about 30 MiB live) and frees it all before it exits;
    # what the next thread finds resident (or must fault in again)
    cases.append(Case("thread churn 40 x 64 MiB", "threads", "churn",
                      [f"threads={max(4, int(40 * min(s, 1.0)))}", "live=2", "bytes=64m",
                       "window=4096"],
                      details=["threads_per_sec", "rss_final_kb", "minflt"]))
    cases.append(Case("producer/consumer 1+1", "threads", "prodcons",
                      ["pairs=1", f"items={n(3e6 * s)}"],
                      details=["ops_per_sec", "rss_final_kb"]))
    # buffers handed from a producer to a consumer (a network server's
    # pipeline): 64 KiB-1 MiB, each written whole, 16 in flight
    cases.append(Case("producer/consumer 1+1, 64 KiB-1 MiB buffers", "threads", "prodcons",
                      ["pairs=1", f"items={n(1e4 * s)}", "batch=4", "queue=4", "min=64k",
                       "max=1m", "fill=1"],
                      details=["ops_per_sec", "rss_final_kb"]))
    cases.append(Case("false sharing passive t2", "threads", "falseshare",
                      ["mode=passive", "threads=2", f"iters={n(50000 * s)}"],
                      details=["ops_per_sec"]))
    cases.append(Case("false sharing active t2", "threads", "falseshare",
                      ["mode=active", "threads=2", f"iters={n(50000 * s)}"],
                      details=["ops_per_sec"]))
    for mode in ("always", "never"):
        cases.append(Case(f"latency thp:{mode}", "latency", "latency",
                          ["threads=2", f"requests={n(20000 * s)}"],
                          metric="p99_ns", unit="us p99", scale_metric=1e-3,
                          env=thp_env(mode),
                          details=["p50_ns", "p99_ns", "p999_ns", "mean_ns",
                                   "rss_work_kb", "anon_huge_kb", "minflt"],
                          note=THP_NOTE))
    cases.append(Case(f"rss-return {p['rss_total']}", "rssret", "rssret",
                      [f"total={p['rss_total']}", "small=64", "other=256",
                       "free_pct=90", f"pause_ms={p['pause_ms']}"],
                      details=["rss_full_kb", "rss_afterfree_kb", "rss_realloc_kb",
                               "rss_idle_kb", "rss_final_kb", "minflt"]))
    # memory return: RSS right after a multi-threaded mass free and after an
    # idle sleep with no allocator call; a small many-threaded service's
    # footprint while its threads are parked (at the system's THP setting)
    total = f"{max(64, int(384 * s))}M"
    cases.append(Case("mass free t8", "memphase", "memphase",
                      ["mode=massfree", "threads=8", f"total={total}",
                       f"pause_ms={p['pause_ms']}"],
                      metric="rss_afterfree_kb", unit="kB RSS after free",
                      details=["secs", "live_kb", "rss_peak_kb", "rss_afterfree_kb",
                               "rss_idle_kb", "minflt"]))
    cases.append(Case("bulk free then idle", "memphase", "memphase",
                      ["mode=idle", f"total={max(32, int(256 * s))}M",
                       f"pause_ms={p['pause_ms']}"],
                      metric="rss_idle_kb", unit="kB RSS after idle",
                      details=["secs", "rss_peak_kb", "rss_afterfree_kb", "rss_idle_kb",
                               "minflt"]))
    cases.append(Case("small service t32", "memphase", "memphase",
                      ["mode=service", "threads=32", "pause_ms=1000"],
                      metric="rss_parked_kb", unit="kB RSS parked",
                      details=["secs", "rss_parked_kb", "anon_huge_kb"]))
    # threads that exit holding blocks they handed to others (a request's
    # result kept by the dispatcher): what their pages cost once idle
    cases.append(Case("threads exit after handing off t8", "memphase", "memphase",
                      ["mode=handoff", "threads=8", f"total={total}",
                       f"pause_ms={p['pause_ms']}"],
                      metric="rss_idle_kb", unit="kB RSS after idle",
                      details=["secs", "live_kb", "rss_peak_kb", "rss_afterexit_kb",
                               "rss_idle_kb"]))
    # a cache at its size limit: a random entry evicted and a new one
    # written, over a working set far bigger than the CPU caches (the freed
    # block is cold, and in the steady state every slab or span is nearly
    # full); the figure is the steady phase only (smaller caches in the
    # smoke and quick profiles)
    cases.append(Case("cache 100k entries 16-256 B t1", "cache", "cache",
                      ["threads=1", f"slots={n(1e5 * min(s, 1.0))}", f"ops={n(2e6 * s)}",
                       "min=16", "max=256"],
                      metric="ns_per_op", unit="ns/op", details=["ns_per_op", "rss_filled_kb"]))
    cases.append(Case("cache 50k entries 16 B-16 KiB t2", "cache", "cache",
                      ["threads=2", f"slots={n(5e4 * min(s, 1.0))}", f"ops={n(5e5 * s)}",
                       "min=16", "max=16k"],
                      metric="ns_per_op", unit="ns/op", details=["ns_per_op", "rss_filled_kb"]))
    # I/O buffers of a few to 64 KiB that a short message fills (only
    # their ends written): how fast a freed buffer of each size comes back
    cases.append(Case("cache 64 buffers 4-64 KiB, ends written t1", "cache", "cache",
                      ["threads=1", "slots=64", f"ops={n(1e6 * s)}", "min=4k", "max=64k",
                       "ends=1"],
                      metric="ns_per_op", unit="ns/op", details=["ns_per_op", "rss_filled_kb"]))
    # big buffers of varied sizes (images, query results, compressed
    # blocks): a freed mapping served again, cut or grown to the next
    # size, or every page of a fresh one faulted in
    cases.append(Case("cache 20 buffers 4-32 MiB t1", "cache", "cache",
                      ["threads=1", "slots=20", f"ops={n(80 * s)}", "min=4m", "max=32m"],
                      metric="ns_per_op", unit="ns/op", details=["ns_per_op", "rss_filled_kb"]))
    cases.append(Case("realloc-grow", "realloc", "realloc_grow",
                      ["builders=8", "target=256k", "append=128", f"rounds={n(100 * s)}"],
                      details=["ns_per_op"]))
    # real programs: time and peak RSS of the whole process; the output must
    # be the same under every allocator
    cases.append(Case(f"python3 {p['py_n']} records", "python3", "python3",
                      ["pywork.py", str(p["py_n"])], details=["utime_s", "stime_s", "minflt"],
                      note="python3: tools/bench/scripts/pywork.py with the interpreter's "
                           "default allocator (pymalloc: objects over 512 B and its arenas "
                           "come from malloc), PYTHONHASHSEED=0; output compared across "
                           "allocators."))
    cases.append(Case(f"sqlite3 {p['sql_rows']} rows", "sqlite3", "sqlite3",
                      ["sqlwork.sql", f"rows={p['sql_rows']}", f"batch={SQL_BATCH}"],
                      details=["utime_s", "stime_s", "minflt"],
                      note="sqlite3: the sqlite3 shell on an in-memory database running "
                           "tools/bench/scripts/sqlwork.sql (inserts in transactions of "
                           f"{SQL_BATCH:,} rows, two indexes, aggregate queries, update and "
                           "delete); output compared across allocators."))
    for d in (16, 1024):
        cases.append(Case(f"redis {human_size(d)} P16 {p['redis_n']} req x4", "redis", "redis",
                          [f"n={p['redis_n']}", f"d={d}", "P=16"],
                          details=["rps", "rps_set", "rps_get", "rps_lpush", "rps_lpop",
                                   "rss_hwm_kb", "rss_kb"],
                          note="redis: Debian's redis-server links libjemalloc.so.2 itself, "
                               "so its `glibc` column is really jemalloc 5.3 (linked); the "
                               "other columns preload their allocator over it (malloc, free, "
                               "calloc, realloc and malloc_usable_size are interposed)."))
    return cases


# ---------------------------------------------------------------- running

def base_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in TUNING_VARS and not k.startswith(TUNING_PREFIXES)}
    env["LC_ALL"] = "C"
    return env


def alloc_env(a: Allocator, extra: dict[str, str], var: str = "LD_PRELOAD") -> dict[str, str]:
    """Environment for a run. Through runchild, var is XBENCH_PRELOAD: the
    helper turns it into LD_PRELOAD for the workload only."""
    env = base_env()
    if a.lib:
        env[var] = a.lib
    env.update(extra)
    return env


MERGED_VARS = ("XALLOC_CONF", "MALLOC_CONF")  # key:value lists: user's, then the case's


def parse_user_env(items: list[str]) -> list[tuple[str | None, str, str]]:
    """--env [ALLOC:]NAME=VALUE -> (alloc or None for all, NAME, VALUE)."""
    out = []
    for it in items:
        name, eq, value = it.partition("=")
        if not eq or not name:
            raise SystemExit(f"--env wants [ALLOC:]NAME=VALUE, got {it!r}")
        alloc, colon, var = name.partition(":")
        out.append((alloc, var, value) if colon else (None, name, value))
    return out


def case_env(user: list[tuple[str | None, str, str]], case_extra: dict[str, str],
             alloc: str) -> dict[str, str]:
    """The extra environment of one run: --env settings for this allocator,
    then the case's own (THP mode, stats); option lists are joined, so
    `--env xalloc:XALLOC_CONF=arenas:1` still runs the thp rows as asked."""
    env: dict[str, str] = {}
    for a, k, v in user:
        if a is None or a == alloc:
            env[k] = f"{env[k]},{v}" if k in MERGED_VARS and k in env else v
    for k, v in case_extra.items():
        env[k] = f"{env[k]},{v}" if k in MERGED_VARS and k in env else v
    return env


def read_rss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * (os.sysconf("SC_PAGE_SIZE") // 1024)
    except (OSError, ValueError, IndexError):
        return 0


def child_of(pid: int) -> int:
    """The first child of pid (runchild's workload), or 0."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            kids = f.read().split()
        return int(kids[0]) if kids else 0
    except (OSError, ValueError):
        return 0


class Watchdog:
    """Kills a run (runchild's whole process group) that passes its time
    limit or whose workload's RSS passes the cap: an allocator bug must not
    take the shared machine down."""

    def __init__(self, pid: int, timeout: float, rss_cap_kb: int):
        self.pid, self.timeout, self.cap = pid, timeout, rss_cap_kb
        self.deadline = time.monotonic() + timeout
        self.reason = ""
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            why = ""
            if time.monotonic() > self.deadline:
                why = f"time limit ({self.timeout:.0f} s) passed"
            elif self.cap and read_rss_kb(child_of(self.pid) or self.pid) > self.cap:
                why = f"RSS over the cap of {self.cap // 1024} MiB"
            if why:
                self.reason = why
                try:
                    os.killpg(self.pid, 9)
                except (ProcessLookupError, PermissionError):
                    pass
                return

    def stop(self) -> None:
        self._stop.set()
        self._t.join()


def spawn(argv: list[str], env: dict[str, str], out_path: str, err_path: str) -> int:
    fa = [(os.POSIX_SPAWN_OPEN, 0, "/dev/null", os.O_RDONLY, 0),
          (os.POSIX_SPAWN_OPEN, 1, out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644),
          (os.POSIX_SPAWN_OPEN, 2, err_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)]
    exe = argv[0] if "/" in argv[0] else shutil.which(argv[0], path=env.get("PATH"))
    if not exe:
        raise FileNotFoundError(argv[0])
    # Own session: the watchdog can kill runchild and its workload together.
    return os.posix_spawn(exe, argv, env, file_actions=fa, setsid=True)


def read_report(path: str) -> dict[str, float]:
    try:
        with open(path) as f:
            return numeric(dict(w.split("=", 1) for w in f.read().split() if "=" in w))
    except OSError:
        return {}


def parse_result(text: str) -> dict[str, str] | None:
    line = None
    for ln in text.splitlines():
        if ln.startswith("RESULT "):
            line = ln
    if line is None:
        return None
    kv = {}
    for word in line.split()[1:]:
        if "=" in word:
            k, v = word.split("=", 1)
            kv[k] = v
    return kv


def numeric(kv: dict[str, str]) -> dict[str, float]:
    out = {}
    for k, v in kv.items():
        try:
            out[k] = float(v)
        except ValueError:
            pass
    return out


def xalloc_diagnostic(a: Allocator, stderr: str) -> str:
    """An `xalloc:` line on an xalloc run's stderr (say, a rejected
    XALLOC_CONF) fails the run: it would have measured the defaults."""
    if a.name != "xalloc":
        return ""
    diag = [ln for ln in stderr.splitlines() if ln.startswith("xalloc:")]
    return f"xalloc reported: {diag[0][:160]}" if diag else ""


def find_python() -> str | None:
    """The interpreter of the python3 workload: Debian's /usr/bin/python3 (what
    users run), else the one running this script."""
    for path in ("/usr/bin/python3", sys.executable):
        if path and os.access(path, os.X_OK):
            return path
    return None


def sqlite_script(template: str, rows: int, batch: int, maps: str) -> str:
    """scripts/sqlwork.sql with its batch block repeated once per transaction
    of `batch` rows (ids @lo..@hi), and @MAPS@ naming the maps side file."""
    with open(template) as f:
        text = f.read()
    head, rest = text.split("-- xbench:batch begin\n", 1)
    body, tail = rest.split("-- xbench:batch end\n", 1)
    out = [head.replace("@MAPS@", maps)]
    for lo in range(1, rows + 1, batch):
        out.append(f".parameter set @lo {lo}\n.parameter set @hi {min(rows, lo + batch - 1)}\n"
                   + body)
    return "".join(out) + tail


def program_versions(python: str | None) -> str:
    """One line naming the real programs' versions, for the notes."""
    def first(argv: list[str]) -> str:
        try:
            r = subprocess.run(argv, capture_output=True, text=True, timeout=20)
            return (r.stdout or r.stderr).split("\n")[0].strip()
        except (OSError, subprocess.SubprocessError):
            return "?"
    parts = []
    if python:
        parts.append(f"{python} ({first([python, '--version'])}, pymalloc)")
    if shutil.which("sqlite3"):
        parts.append("sqlite3 " + first(["sqlite3", "--version"]).split(" ")[0])
    if shutil.which("redis-server"):
        m = re.search(r"v=(\S+)", first(["redis-server", "--version"]))
        parts.append("redis-server " + (m.group(1) if m else "?"))
    return "Real programs: " + ", ".join(parts) + "." if parts else ""


@dataclass
class Run:
    case: str
    alloc: str
    rep: int
    ok: bool
    wall_s: float
    maxrss_kb: int
    metrics: dict[str, float]
    error: str = ""


class Runner:
    def __init__(self, args: argparse.Namespace, profile: dict, allocs: list[Allocator]):
        self.args, self.p, self.allocs = args, profile, allocs
        self.tmp = tempfile.mkdtemp(prefix="xbench.")
        self.logdir = os.path.join(args.out, "logs")
        os.makedirs(self.logdir, exist_ok=True)
        for old in os.listdir(self.logdir):  # logs of an earlier run would mislead
            if old.endswith(".log"):
                os.unlink(os.path.join(self.logdir, old))
        self.rss_cap_kb = args.rss_cap_mb * 1024
        self.helper = os.path.join(args.bin, "runchild")
        self.user_env = parse_user_env(args.env)
        self.python, self.sqlite = find_python(), shutil.which("sqlite3")
        self.outputs: dict[str, tuple[str, str]] = {}  # case -> (allocator, stdout) to match

    def log_failure(self, label: str, text: str) -> str:
        name = re.sub(r"[^A-Za-z0-9_.-]+", "_", label) + ".log"
        with open(os.path.join(self.logdir, name), "w") as f:
            f.write(text)
        return os.path.join(self.logdir, name)

    def log_run_failure(self, case: Case, a: Allocator, rep: int, cmdline: str, error: str,
                        stdout: str, stderr: str, extra_text: str = "") -> str:
        """Writes the log of a failed run; returns the error with the log's path."""
        path = self.log_failure(f"{case.id}-{a.name}-{rep}",
                                f"{cmdline}\nerror: {error}\n{extra_text}--- stdout\n{stdout}"
                                f"\n--- stderr\n{stderr}")
        return error + f" (log: {os.path.relpath(path, REPO)})"

    def run_child(self, argv: list[str], env: dict[str, str],
                  wdir: str) -> tuple[str, dict[str, float], str, str]:
        """Runs argv through runchild under the watchdog, output in wdir.
        Returns (why it failed or "", runchild's report, stdout, stderr)."""
        out, err = os.path.join(wdir, "out"), os.path.join(wdir, "err")
        report = os.path.join(wdir, "report")
        if os.path.exists(report):
            os.unlink(report)
        pid = spawn([self.helper, report] + argv, env, out, err)
        wd = Watchdog(pid, self.p["timeout"], self.rss_cap_kb)
        _, status, _ = os.wait4(pid, 0)
        wd.stop()
        ru = read_report(report)
        with open(out, errors="replace") as f:
            stdout = f.read()
        with open(err, errors="replace") as f:
            stderr = f.read()
        error = ""
        if wd.reason:
            error = "killed: " + wd.reason
        elif not ru or os.WIFSIGNALED(status):
            error = f"runchild failed (status {status})"
        elif ru.get("signal"):
            error = f"signal {ru['signal']:.0f}"
        elif ru.get("exit") != 0:
            error = f"exit {ru.get('exit', -1):.0f}"
        return error, ru, stdout, stderr

    def run_prog(self, case: Case, a: Allocator, rep: int) -> Run:
        extra = case_env(self.user_env, case.env(a.name) or {}, a.name)
        env = alloc_env(a, extra, "XBENCH_PRELOAD")
        argv = [os.path.join(self.args.bin, case.prog)] + case.args
        error, ru, stdout, stderr = self.run_child(argv, env, self.tmp)
        kv = parse_result(stdout)
        if error:
            pass
        elif kv is None:
            error = "no RESULT line"
        elif kv.get("alloc") != a.expect:
            error = f"preload not in effect: malloc comes from {kv.get('alloc')}"
        else:
            error = xalloc_diagnostic(a, stderr)
        if error:
            envs = " ".join(f"{k}={v}" for k, v in extra.items())
            error = self.log_run_failure(case, a, rep,
                                         f"{envs} LD_PRELOAD={a.lib or ''} {' '.join(argv)}",
                                         error, stdout, stderr)
        metrics = {} if error or not kv else numeric(kv)
        if metrics and "minflt" in ru:
            metrics["minflt"] = ru["minflt"]
        return Run(case.id, a.name, rep, not error, ru.get("wall_s", 0.0),
                   int(ru.get("maxrss_kb", 0)), metrics, error)

    # -- python3, sqlite3: real programs measured as whole processes

    def run_real(self, case: Case, a: Allocator, rep: int) -> Run:
        """The time and peak RSS of the whole process are the figures; its
        output must be the same as in every other run of the case (the first
        successful one, glibc's when it works, is the reference)."""
        extra = case_env(self.user_env, case.env(a.name) or {}, a.name)
        env = alloc_env(a, extra, "XBENCH_PRELOAD")
        wdir = tempfile.mkdtemp(dir=self.tmp)
        maps = os.path.join(wdir, "maps")  # the program's r-xp mappings: the preload check
        env["TMPDIR"] = wdir
        if case.prog == "python3":
            for k in [k for k in env if k.startswith("PYTHON") and k not in extra]:
                del env[k]  # PYTHONPATH, PYTHONSTARTUP, ...: the interpreter as users run it
            env.update(XBENCH_MAPS=maps, PYTHONHASHSEED="0")
            argv = [self.python or "python3", os.path.join(SCRIPTS, case.args[0])] + case.args[1:]
        else:
            kv = dict(x.split("=", 1) for x in case.args[1:])
            script = os.path.join(wdir, "work.sql")
            with open(script, "w") as f:
                f.write(sqlite_script(os.path.join(SCRIPTS, case.args[0]), int(kv["rows"]),
                                      int(kv["batch"]), maps))
            argv = [self.sqlite or "sqlite3", "-bail", ":memory:", f".read {script}"]
        error, ru, stdout, stderr = self.run_child(argv, env, wdir)
        diff = ""
        if not error:
            error = xalloc_diagnostic(a, stderr) or self.preload_mapped(a, maps)
        if not error and not stdout.strip():
            error = "no output"
        if not error:
            ref = self.outputs.setdefault(case.id, (a.name, stdout))
            if stdout != ref[1]:
                error = f"output differs from the {ref[0]} run's"
                diff = "--- diff against the reference\n" + "".join(list(difflib.unified_diff(
                    ref[1].splitlines(True), stdout.splitlines(True), ref[0], a.name))[:60])
        if error:
            envs = " ".join(f"{k}={v}" for k, v in extra.items())
            error = self.log_run_failure(case, a, rep,
                                         f"{envs} LD_PRELOAD={a.lib or ''} {' '.join(argv)}",
                                         error, stdout, stderr, diff)
        metrics = {} if error else {"secs": ru.get("wall_s", 0.0),
                                    "utime_s": ru.get("utime_s", 0.0),
                                    "stime_s": ru.get("stime_s", 0.0),
                                    "minflt": ru.get("minflt", 0.0)}
        shutil.rmtree(wdir, ignore_errors=True)
        return Run(case.id, a.name, rep, not error, ru.get("wall_s", 0.0),
                   int(ru.get("maxrss_kb", 0)), metrics, error)

    @staticmethod
    def preload_mapped(a: Allocator, maps: str) -> str:
        """"" if the preloaded library shows in the maps the program wrote."""
        if not a.lib:
            return ""
        try:
            with open(maps, errors="replace") as f:
                text = f.read()
        except OSError:
            return "the program wrote no /proc/self/maps copy (preload check)"
        if a.lib in text or os.path.realpath(a.lib) in text:
            return ""
        return f"preload not in effect: {a.lib} not mapped"

    # -- redis: the real program

    def run_redis(self, case: Case, a: Allocator, rep: int) -> Run:
        kv = dict(x.split("=", 1) for x in case.args)
        nreq = int(kv["n"])
        env = alloc_env(a, case_env(self.user_env, case.env(a.name) or {}, a.name),
                        "XBENCH_PRELOAD")
        wdir = tempfile.mkdtemp(dir=self.tmp)
        report = os.path.join(wdir, "report")
        port = free_port()
        argv = ["redis-server", "--port", str(port), "--bind", "127.0.0.1",
                "--save", "", "--appendonly", "no", "--daemonize", "no",
                "--protected-mode", "no", "--dir", wdir, "--loglevel", "warning",
                "--logfile", os.path.join(wdir, "redis.log")]
        out, err = os.path.join(wdir, "out"), os.path.join(wdir, "err")
        pid = spawn([self.helper, report] + argv, env, out, err)
        wd = Watchdog(pid, self.p["timeout"], self.rss_cap_kb)
        metrics: dict[str, float] = {}
        error = ""
        try:
            server = child_of(pid)
            if not redis_wait_ready(port, 10.0, pid) or not (server := server or child_of(pid)):
                error = "redis-server exited or did not answer PING within 10 s"
            else:
                mapped = proc_maps_has(server, a.lib) if a.lib else True
                if not mapped:
                    error = f"preload not in effect: {a.lib} not mapped in redis-server"
                bench_env = base_env()
                r = subprocess.run(
                    ["redis-benchmark", "-h", "127.0.0.1", "-p", str(port), "-q",
                     "-n", str(nreq), "-t", "set,get,lpush,lpop", "-P", kv.get("P", "16"),
                     "-r", "100000", "-d", kv.get("d", "64")],
                    capture_output=True, text=True, env=bench_env,
                    timeout=self.p["timeout"])
                rps = {}
                for m in re.finditer(r"(\w+): ([\d.]+) requests per second",
                                     r.stdout.replace("\r", "\n")):
                    rps[m.group(1).lower()] = float(m.group(2))
                if r.returncode != 0 or len(rps) < 4:
                    error = error or f"redis-benchmark failed: rc {r.returncode} {r.stdout[-300:]!r}"
                else:
                    secs = sum(nreq / v for v in rps.values())
                    metrics = {f"rps_{k}": v for k, v in rps.items()}
                    metrics["secs"] = secs
                    metrics["rps"] = 4 * nreq / secs
                    st = proc_status(server)
                    metrics["rss_hwm_kb"] = st.get("VmHWM", 0)
                    metrics["rss_kb"] = st.get("VmRSS", 0)
        except subprocess.TimeoutExpired:
            error = "redis-benchmark timed out"
        finally:
            redis_shutdown(port)
            # SHUTDOWN NOSAVE normally ends it at once; the watchdog bounds it.
            wd.deadline = min(wd.deadline, time.monotonic() + 10)
            os.wait4(pid, 0)
            wd.stop()
        ru = read_report(report)
        wall = ru.get("wall_s", 0.0)
        if not error and wd.reason:
            error = "killed: " + wd.reason
        if error:
            with open(err, errors="replace") as f:
                stderr = f.read()
            error = self.log_run_failure(case, a, rep,
                                         f"LD_PRELOAD={a.lib or ''} {' '.join(argv)}",
                                         error, "", stderr)
            metrics = {}
        return Run(case.id, a.name, rep, not error, wall, int(ru.get("maxrss_kb", 0)),
                   metrics, error)

    # -- callgrind: instructions per malloc/free pair

    def callgrind_ir(self, a: Allocator, extra: dict[str, str], size: int,
                     pairs: int) -> int:
        outf = os.path.join(self.tmp, "cg.out")
        env = alloc_env(a, case_env(self.user_env, extra, a.name))
        argv = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={outf}",
                os.path.join(self.args.bin, "malloc_test"), "threads=1",
                f"size={size}", f"pairs={pairs}"]
        r = subprocess.run(argv, env=env, capture_output=True, text=True,
                           timeout=self.p["timeout"])
        kv = parse_result(r.stdout)
        if r.returncode != 0 or kv is None:
            raise RuntimeError(f"callgrind run failed (rc {r.returncode}): {r.stderr[-400:]}")
        if kv.get("alloc") != a.expect:
            raise RuntimeError(f"preload not in effect under valgrind: {kv.get('alloc')}")
        with open(outf) as f:
            for line in f:
                if line.startswith(("summary:", "totals:")):
                    return int(line.split()[1])
        raise RuntimeError("no totals in callgrind output")

    # -- strace: system calls in the steady state of largefrag

    def strace_counts(self, a: Allocator, spans: int, cycles: int) -> dict[str, float]:
        logf = os.path.join(self.tmp, "strace.log")
        argv = ["strace", "-f", "-qq", "-o", logf,
                "-e", "trace=mmap,munmap,madvise,mremap,brk,mprotect,write"]
        if a.lib:
            argv += ["-E", f"LD_PRELOAD={a.lib}"]
        for k, v in case_env(self.user_env, {}, a.name).items():
            argv += ["-E", f"{k}={v}"]
        argv += [os.path.join(self.args.bin, "largefrag"), f"spans={spans}",
                 f"cycles={cycles}"]
        env = base_env()
        r = subprocess.run(argv, env=env, capture_output=True, text=True,
                           timeout=self.p["timeout"])
        kv = parse_result(r.stdout)
        if r.returncode != 0 or kv is None:
            raise RuntimeError(f"strace run failed (rc {r.returncode}): {r.stderr[-400:]}")
        if kv.get("alloc") != a.expect:
            raise RuntimeError(f"preload not in effect under strace: {kv.get('alloc')}")
        out = count_steady_syscalls(logf)
        out["cycles"] = float(cycles)
        return out


def count_steady_syscalls(logf: str) -> dict[str, float]:
    """Counts memory system calls in an `strace -f` log between the
    workload's XBENCH:STEADY_BEGIN and STEADY_END markers. A call split by
    another thread (`<unfinished ...>` / `<... resumed>`) counts once."""
    counts = {k: 0 for k in ("mmap", "munmap", "madvise", "mremap", "brk", "mprotect")}
    inside = seen_end = False
    call = re.compile(r"^(?:\[pid\s+)?\d*\]?\s*(\w+)\(")
    with open(logf, errors="replace") as f:
        for line in f:
            if "XBENCH:STEADY_BEGIN" in line:
                inside = True
                continue
            if "XBENCH:STEADY_END" in line:
                seen_end = True
                break
            if not inside or "resumed>" in line:
                continue
            m = call.match(line.strip())
            if m and m.group(1) in counts:
                counts[m.group(1)] += 1
    if not seen_end:
        raise RuntimeError("steady-state markers not found in the strace log")
    return {k: float(v) for k, v in counts.items()}


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def redis_cmd(port: int, cmd: bytes, timeout: float = 2.0) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(cmd)
        try:
            return s.recv(64)
        except (socket.timeout, ConnectionError):
            return b""


def proc_alive(pid: int) -> bool:
    """False once pid has exited (a zombie waiting for wait4 counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def redis_wait_ready(port: int, limit: float, pid: int) -> bool:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline and proc_alive(pid):
        try:
            if redis_cmd(port, b"PING\r\n").startswith(b"+PONG"):
                return True
        except OSError:
            pass
        time.sleep(0.05)
    return False


def redis_shutdown(port: int) -> None:
    try:
        redis_cmd(port, b"SHUTDOWN NOSAVE\r\n", timeout=5.0)
    except OSError:
        pass


def proc_status(pid: int) -> dict[str, int]:
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                k, _, v = line.partition(":")
                if v.strip().endswith("kB"):
                    out[k] = int(v.split()[0])
    except OSError:
        pass
    return out


def proc_maps_has(pid: int, lib: str) -> bool:
    real = os.path.realpath(lib)
    try:
        with open(f"/proc/{pid}/maps") as f:
            return any(line.rstrip().endswith((lib, real)) and "r-xp" in line for line in f)
    except OSError:
        return False


# ---------------------------------------------------------------- machine

def machine_info() -> dict[str, str]:
    info = {"kernel": platform.release(), "cpus": str(os.cpu_count())}
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=20).stdout
        for line in out.splitlines():
            k, _, v = line.partition(":")
            if k.strip() in ("Model name", "Hypervisor vendor"):
                info[k.strip().lower().replace(" ", "_")] = v.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    try:
        with open("/proc/meminfo") as f:
            kb = int(f.readline().split()[1])
            info["memory"] = f"{kb / (1 << 20):.1f} GiB"
    except (OSError, ValueError):
        pass
    for key, path in (("thp_enabled", "/sys/kernel/mm/transparent_hugepage/enabled"),
                      ("thp_defrag", "/sys/kernel/mm/transparent_hugepage/defrag")):
        try:
            with open(path) as f:
                m = re.search(r"\[(\w+)\]", f.read())
                info[key] = m.group(1) if m else "?"
        except OSError:
            info[key] = "n/a"
    info["glibc"] = os.confstr("CS_GNU_LIBC_VERSION") or "?"
    try:
        cc = subprocess.run([os.environ.get("CC", "cc"), "--version"], capture_output=True,
                            text=True, timeout=20).stdout.splitlines()
        info["compiler"] = cc[0] if cc else "?"
    except (OSError, subprocess.SubprocessError):
        pass
    try:
        info["os"] = platform.freedesktop_os_release().get("PRETTY_NAME", "")
    except OSError:
        pass
    return info


# ---------------------------------------------------------------- reporting

def median(xs: list[float]) -> float | None:
    return statistics.median(xs) if xs else None


def fmt_num(v: float | None, digits: int = 3) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    a = abs(v)
    if a == 0:
        return "0"
    if a >= 1e6:
        return f"{v / 1e6:.2f}M"
    if a >= 1000:
        return f"{v:,.0f}"
    if a >= 100:
        return f"{v:.0f}"
    if a >= 10:
        return f"{v:.1f}"
    return f"{v:.{digits - 1}f}" if a >= 1 else f"{v:.{digits}f}"


def fmt_metric(key: str, v: float | None) -> str:
    if v is None:
        return "–"
    if key.endswith("_kb"):
        return f"{v / 1024:.1f} MiB"
    if key.endswith("_ns"):
        return f"{v / 1000:.1f} us"
    return fmt_num(v)


class Report:
    def __init__(self, cases: list[Case], allocs: list[Allocator], runs: list[Run],
                 cg: dict, sc: dict, machine: dict, profile_name: str, profile: dict,
                 notes: list[str], elapsed: float, load: tuple[str, str]):
        self.cases, self.allocs, self.runs = cases, allocs, runs
        self.cg, self.sc, self.machine = cg, sc, machine
        self.profile_name, self.p, self.notes = profile_name, profile, notes
        self.elapsed, self.load = elapsed, load
        self.anames = [a.name for a in allocs]
        self.med: dict[tuple[str, str], dict[str, float]] = {}
        self.fail: dict[tuple[str, str], str] = {}
        for c in cases:
            for a in self.anames:
                rs = [r for r in runs if r.case == c.id and r.alloc == a]
                ok = [r for r in rs if r.ok]
                if not rs:
                    continue
                if not ok:
                    self.fail[(c.id, a)] = rs[-1].error
                    continue
                keys = set().union(*(r.metrics.keys() for r in ok))
                m = {k: median([r.metrics[k] for r in ok if k in r.metrics]) for k in keys}
                m["wall_s"] = median([r.wall_s for r in ok])
                m["maxrss_kb"] = median([float(r.maxrss_kb) for r in ok])
                m["n_ok"] = float(len(ok))
                m["n_runs"] = float(len(rs))
                self.med[(c.id, a)] = m

    def value(self, c: Case, a: str) -> float | None:
        m = self.med.get((c.id, a))
        if not m or c.metric not in m:
            return None
        return m[c.metric] * c.scale_metric

    def rss(self, c: Case, a: str) -> float | None:
        m = self.med.get((c.id, a))
        return m["maxrss_kb"] / 1024 if m else None

    @staticmethod
    def ratio(v: float | None, others: list[float | None]) -> str:
        o = [x for x in others if x is not None and x > 0]
        if v is None or not o:
            return ""
        return f" ({v / min(o):.2f}x)"

    def main_table(self) -> list[str]:
        hdr = "| workload | metric | " + " | ".join(self.anames) + " |"
        out = [hdr, "|" + "---|" * (2 + len(self.anames))]
        for c in self.cases:
            if c.allocs is not None:
                continue
            cells = []
            for a in self.anames:
                if (c.id, a) in self.fail:
                    cells.append("FAIL")
                    continue
                v = self.value(c, a)
                if v is None:
                    cells.append("–")
                    continue
                others_v = [self.value(c, b) for b in self.anames if b != a]
                others_r = [self.rss(c, b) for b in self.anames if b != a]
                r = self.rss(c, a)
                cells.append(f"{fmt_num(v)}{self.ratio(v, others_v)} · "
                             f"{fmt_num(r)} MiB{self.ratio(r, others_r)}")
            out.append(f"| {c.id} | {c.unit} · peak RSS | " + " | ".join(cells) + " |")
        # deterministic rows
        for size in sorted(self.cg):
            row = self.cg[size]
            cells = []
            for a in self.anames:
                v = row.get(a)
                if isinstance(v, str):
                    cells.append("FAIL")
                elif v is None:
                    cells.append("–")
                else:
                    others = [row.get(b) for b in self.anames if b != a]
                    others = [x for x in others if isinstance(x, float)]
                    cells.append(f"{v:.1f}{self.ratio(v, others)}")
            out.append(f"| callgrind {human_size(size)} malloc/free pair | instructions | "
                       + " | ".join(cells) + " |")
        if self.sc:
            cells = []
            for a in self.anames:
                v = self.sc.get(a)
                if isinstance(v, str):
                    cells.append("FAIL")
                elif v is None:
                    cells.append("–")
                else:
                    tot = sum(v[k] for k in ("mmap", "munmap", "madvise", "mremap", "brk"))
                    cells.append(f"{tot:.0f}")
            cyc = next((v["cycles"] for v in self.sc.values() if isinstance(v, dict)), 0)
            out.append(f"| largefrag 10000 spans, steady state ({cyc:.0f} cycles) | "
                       "mmap+munmap+madvise+mremap+brk calls | " + " | ".join(cells) + " |")
        st = self.stats_overhead()
        if st is not None:
            instr = ""
            if st[1] is not None:
                instr = f", {st[1]:+.2f}% instr" if abs(st[1]) >= 0.005 else ", 0.00% instr"
            cells = [f"on/off = {st[0]:.3f}x time{instr}" if a == "xalloc" else "–"
                     for a in self.anames]
            out.append("| stats overhead, malloc-test 64 B t1 | stats:on vs stats:off | "
                       + " | ".join(cells) + " |")
        return out

    def stats_overhead(self) -> tuple[float, float | None] | None:
        off = self.med.get(("malloc-test 64 B t1 stats:off", "xalloc"))
        on = self.med.get(("malloc-test 64 B t1 stats:on", "xalloc"))
        if not off or not on:
            return None
        cg = self.cg.get(64, {})
        ioff, ion = cg.get("xalloc stats:off"), cg.get("xalloc stats:on")
        pct = None
        if isinstance(ioff, float) and isinstance(ion, float) and ioff > 0:
            pct = (ion / ioff - 1) * 100
        return on["secs"] / off["secs"], pct

    def targets_table(self) -> list[str]:
        """The project's stated targets for xalloc, checked against the
        medians: a quick PASS/MISS view (timings on a noisy machine can
        flip a close call; the counts cannot)."""
        if "xalloc" not in self.anames:
            return []
        rows: list[tuple[str, str, str]] = []
        others = [a for a in self.anames if a != "xalloc"]

        def verdict(ok: bool | None) -> str:
            return "–" if ok is None else ("PASS" if ok else "MISS")

        by_id = {c.id: c for c in self.cases}
        # time <= best of the others: every malloc-test row, then thread churn
        timed = [c for c in self.cases if c.group == "malloc-test"]
        timed += [by_id[cid] for cid in ("thread churn 200", "thread churn 40 x 64 MiB")
                  if cid in by_id]
        for c in timed:
            x = self.value(c, "xalloc")
            best = [v for v in (self.value(c, a) for a in others) if v is not None]
            ok = None if x is None or not best else x <= min(best)
            rows.append((f"{c.id}: time <= best of the others",
                         f"{x / min(best):.2f}x best" if ok is not None else "n/a", verdict(ok)))
        for cid in ("producer/consumer 1+1", "larson t2"):
            c = by_id.get(cid)
            if not c:
                continue
            x, mi = self.value(c, "xalloc"), self.value(c, "mimalloc")
            ok = None if x is None or mi is None else x <= mi
            rows.append((f"{cid}: throughput >= mimalloc",
                         f"time {x / mi:.2f}x mimalloc" if ok is not None else "n/a", verdict(ok)))
            xr, je = self.rss(c, "xalloc"), self.rss(c, "jemalloc")
            ok = None if xr is None or je is None else xr <= je
            rows.append((f"{cid}: peak RSS <= jemalloc",
                         f"{xr:.1f} vs {je:.1f} MiB" if ok is not None else "n/a", verdict(ok)))
        lo, hi = by_id.get("largefrag 100 spans"), by_id.get("largefrag 10000 spans")
        if lo and hi:
            a_, b_ = self.value(lo, "xalloc"), self.value(hi, "xalloc")
            ok = None if a_ is None or b_ is None else b_ <= 1.3 * a_
            rows.append(("largefrag: 10000 spans within 1.3x of 100 spans",
                         f"{b_ / a_:.2f}x" if ok is not None else "n/a", verdict(ok)))
        v = self.sc.get("xalloc")
        if isinstance(v, dict):
            tot = sum(v[k] for k in ("mmap", "munmap", "madvise", "mremap", "brk"))
            rows.append(("largefrag 10000 spans: no system call in steady state",
                         f"{tot:.0f} calls in {v['cycles']:.0f} cycles", verdict(tot == 0)))
        for size in sorted(self.cg):
            x = self.cg[size].get("xalloc")
            best = [y for k, y in self.cg[size].items()
                    if isinstance(y, float) and not k.startswith("xalloc")]
            if isinstance(x, float) and best:
                rows.append((f"callgrind {human_size(size)} pair: instructions <= best of the others",
                             f"{x:.1f} vs {min(best):.1f}", verdict(x <= min(best))))
        st = self.stats_overhead()
        if st is not None:
            t, pct = st
            rows.append(("stats:on within 2% of stats:off (time)", f"{(t - 1) * 100:+.1f}%",
                         verdict(t <= 1.02)))
            if pct is not None:
                shown = f"{pct:+.2f}%" if abs(pct) >= 0.005 else "0.00%"  # no "-0.00%"
                rows.append(("stats:on within 2% of stats:off (instructions)", shown,
                             verdict(pct <= 2.0)))
        if not rows:
            return []
        return ["| target | measured | verdict |", "|---|---|---|"] + \
            [f"| {a} | {b} | {c_} |" for a, b, c_ in rows]

    def detail_tables(self) -> list[str]:
        out = []
        groups: dict[str, list[Case]] = {}
        for c in self.cases:
            groups.setdefault(c.group, []).append(c)
        for g, cs in groups.items():
            keys: list[str] = []
            for c in cs:
                for k in [c.metric, "wall_s", "maxrss_kb"] + c.details:
                    if k not in keys:
                        keys.append(k)
            out += [f"### {g}", "", "| case | allocator | " + " | ".join(keys) + " | runs ok |",
                    "|" + "---|" * (len(keys) + 3)]
            for c in cs:
                for a in self.anames:
                    if (c.id, a) in self.fail:
                        out.append(f"| {c.id} | {a} | FAIL: {self.fail[(c.id, a)]} |"
                                   + " |" * len(keys))
                        continue
                    m = self.med.get((c.id, a))
                    if not m:
                        continue
                    env = c.env(a) or {}
                    label = a + (" (" + " ".join(f"{k}={v}" for k, v in env.items()) + ")"
                                 if env else "")
                    out.append(f"| {c.id} | {label} | " +
                               " | ".join(fmt_metric(k, m.get(k)) for k in keys) +
                               f" | {m['n_ok']:.0f}/{m['n_runs']:.0f} |")
            notes = sorted({c.note for c in cs if c.note})
            out += [""] + [f"Note: {x}" for x in notes] + ([""] if notes else [])
            out.append("Args: " + "; ".join(f"`{c.prog} {' '.join(c.args)}`" for c in cs))
            out.append("")
        return out

    def callgrind_table(self) -> list[str]:
        if not self.cg:
            return []
        cols = sorted({k for row in self.cg.values() for k in row},
                      key=lambda k: (self.anames.index(k.split()[0])
                                     if k.split()[0] in self.anames else 99, k))
        out = ["| size | " + " | ".join(cols) + " |", "|" + "---|" * (len(cols) + 1)]
        for size in sorted(self.cg):
            out.append(f"| {human_size(size)} | " + " | ".join(
                (f"{v:.1f}" if isinstance(v, float) else ("FAIL" if v else "–"))
                for v in (self.cg[size].get(k) for k in cols)) + " |")
        return out

    def syscall_table(self) -> list[str]:
        if not self.sc:
            return []
        keys = ["mmap", "munmap", "madvise", "mremap", "brk", "mprotect"]
        out = ["| allocator | " + " | ".join(keys) + " | per 1000 cycles |",
               "|" + "---|" * (len(keys) + 2)]
        for a in self.anames:
            v = self.sc.get(a)
            if v is None:
                continue
            if isinstance(v, str):
                out.append(f"| {a} | FAIL: {v} |" + " |" * len(keys))
                continue
            tot = sum(v[k] for k in keys)
            out.append(f"| {a} | " + " | ".join(f"{v[k]:.0f}" for k in keys) +
                       f" | {tot * 1000 / v['cycles']:.1f} |")
        return out

    def redis_table(self) -> list[str]:
        """redis-benchmark's requests per second per command and value size
        (higher is better), and the server's peak RSS, side by side."""
        cs = [c for c in self.cases if c.group == "redis"]
        if not cs:
            return []
        out = ["| value size | figure | " + " | ".join(self.anames) + " |",
               "|" + "---|" * (2 + len(self.anames))]
        for c in cs:
            kv = dict(x.split("=", 1) for x in c.args)
            size = human_size(int(kv.get("d", "64")))
            rows = [(cmd.upper() + " req/s", f"rps_{cmd}") for cmd in
                    ("set", "get", "lpush", "lpop")] + [("all req/s", "rps"),
                                                        ("peak RSS", "maxrss_kb")]
            for label, key in rows:
                cells = []
                for a in self.anames:
                    m = self.med.get((c.id, a))
                    cells.append("FAIL" if (c.id, a) in self.fail else
                                 fmt_metric(key, m.get(key)) if m else "–")
                out.append(f"| {size} | {label} | " + " | ".join(cells) + " |")
        return out

    def machine_lines(self) -> list[str]:
        m = self.machine
        lines = [f"- CPU: {m.get('model_name', '?')}, {m.get('cpus')} CPUs"
                 + (f" ({m['hypervisor_vendor']} guest)" if m.get("hypervisor_vendor") else "")
                 + f", memory {m.get('memory', '?')}",
                 f"- OS: {m.get('os', '?')}, kernel {m.get('kernel')}, {m.get('glibc')}, "
                 f"THP enabled=`{m.get('thp_enabled')}` defrag=`{m.get('thp_defrag')}`",
                 f"- Compiler: {m.get('compiler', '?')}",
                 "- Allocators: " + ", ".join(f"{a.name} {a.version}".strip() for a in self.allocs),
                 f"- Load average before / after: {self.load[0]} / {self.load[1]}"]
        try:
            busy = float(self.load[0].split()[0]) > 0.5
        except (ValueError, IndexError):
            busy = False
        if busy:
            lines.append("- **Warning: the machine was busy when this run started (load "
                         f"{self.load[0].split()[0]}); timings are noisy, rerun `make bench` on "
                         "a quiet machine before quoting them. Counts (callgrind, strace) are "
                         "not affected.**")
        return lines

    def markdown(self, charts: list[str]) -> str:
        when = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
        out = ["# xalloc benchmark results", "",
               f"Generated by `tools/bench/run.py --profile {self.profile_name}` on {when}, "
               f"{self.p['reps']} repetitions per cell (allocators interleaved within each "
               f"repetition), medians shown; total run time {self.elapsed / 60:.1f} min.", "",
               "## Machine", ""] + self.machine_lines() + [
               "", "## Summary", "",
               "Each cell: the workload's figure (lower is better) and the peak RSS of the "
               "process (kernel `ru_maxrss`), each with its ratio to the best *other* "
               "allocator in parentheses (below 1.00x means better than every other one). "
               "Instruction and system-call rows are deterministic counts, not timings.", ""]
        out += self.main_table() + [""]
        out += [f"Note: {n_}" for n_ in self.notes] + ([""] if self.notes else [])
        tt = self.targets_table()
        if tt:
            out += ["## xalloc against the project's targets", ""] + tt + [""]
        out += ["## Charts", ""] + [f"![{c}]({c})" for c in charts] + [""]
        out += ["## Instructions per malloc/free pair (callgrind)", "",
                "`valgrind --tool=callgrind` whole-process instruction counts of `malloc_test "
                f"threads=1` at two pair counts {self.p['cg_pairs']}; the figure is the "
                "difference divided by the difference in pairs, so start-up and thread "
                "creation cancel out and the call and loop are included.", ""]
        out += self.callgrind_table() + [""]
        out += ["## System calls in the steady state of largefrag (10000 free spans)", "",
                "`strace -f` of `largefrag spans=10000`, counting the calls between the "
                "workload's STEADY_BEGIN and STEADY_END markers (1 MiB malloc/free cycles "
                "after the heap was fragmented).", ""]
        out += self.syscall_table() + [""]
        rt = self.redis_table()
        if rt:
            kv = dict(x.split("=", 1) for x in next(c for c in self.cases
                                                     if c.group == "redis").args)
            out += ["## redis: requests per second per command", "",
                    f"`redis-benchmark -P {kv.get('P', '16')} -n {kv['n']} -r 100000 -t "
                    "set,get,lpush,lpop -d SIZE` against a fresh redis-server per run "
                    "(medians; higher is better); peak RSS is the server's (wait4).", ""]
            out += rt + [""]
        out += ["## Details per workload", "",
                "Medians. `wall_s` and `maxrss_kb` come from the runner (wait4); the other "
                "columns are the workload's own RESULT figures.", ""]
        out += self.detail_tables()
        return "\n".join(out) + "\n"


# ---------------------------------------------------------------- charts

def gnuplot_terminal() -> str:
    try:
        r = subprocess.run(["gnuplot", "-e", "set terminal"], capture_output=True,
                           text=True, timeout=20)
        if "pngcairo" in r.stdout + r.stderr:
            return "pngcairo size 1600,800 font 'sans,10'"
    except (OSError, subprocess.SubprocessError):
        pass
    return "png size 1600,800"


def gp_str(s: str) -> str:
    return '"' + s.replace('"', "'") + '"'


def clustered_chart(path: str, title: str, ylabel: str, rows: list[str], cols: list[str],
                    data: list[list[float | None]], logscale: bool, term: str) -> bool:
    if not rows or not any(v is not None for r in data for v in r):
        return False
    dat = path[:-4] + ".dat"
    # On a log axis bars start at the bottom edge: put it below 1 so a bar of
    # exactly 1 (the best allocator) stays visible.
    yaxis = "set logscale y 2; set yrange [0.8:*]" if logscale else "set yrange [0:*]"
    # Room for the rotated row labels (in character heights).
    bmargin = min(18, 3 + int(max(len(r) for r in rows) * 0.45))
    with open(dat, "w") as f:
        f.write("label " + " ".join(gp_str(c) for c in cols) + "\n")
        for label, r in zip(rows, data):
            f.write(gp_str(label) + " " +
                    " ".join("?" if v is None or v <= 0 else f"{v:.6g}" for v in r) + "\n")
    script = f"""
set terminal {term}
set output {gp_str(path)}
set title {gp_str(title)}
set ylabel {gp_str(ylabel)}
set datafile missing "?"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set key top left
set grid ytics
set xtics rotate by -35 scale 0 font ',9'
set bmargin {bmargin}
set rmargin 6
{yaxis}
plot for [i=2:{len(cols) + 1}] {gp_str(dat)} using i:xtic(1) title columnheader(i)
"""
    return run_gnuplot(script)


def run_gnuplot(script: str) -> bool:
    try:
        r = subprocess.run(["gnuplot"], input=script, capture_output=True, text=True,
                           timeout=60)
    except (OSError, subprocess.SubprocessError) as e:
        print(f"gnuplot failed: {e}", file=sys.stderr)
        return False
    if r.returncode != 0:
        print(f"gnuplot failed: {r.stderr[-500:]}", file=sys.stderr)
        return False
    return True


def draw_charts(rep: Report, out: str) -> list[str]:
    term = gnuplot_terminal()
    made = []
    cases = [c for c in rep.cases if c.allocs is None]
    an = rep.anames
    # time relative to the best allocator of the row: one scale for all rows
    rows, data = [], []
    for c in cases:
        vals = [rep.value(c, a) for a in an]
        good = [v for v in vals if v]
        if not good:
            continue
        best = min(good)
        rows.append(c.id)
        data.append([v / best if v else None for v in vals])
    if clustered_chart(os.path.join(out, "time.png"),
                       "Time (or the row's metric) relative to the best allocator, per workload "
                       "(lower is better)", "x best (log2)", rows, an, data, True, term):
        made.append("time.png")
    rows = [c.id for c in cases]
    data = [[rep.rss(c, a) for a in an] for c in cases]
    if clustered_chart(os.path.join(out, "rss.png"),
                       "Peak RSS per workload (MiB, lower is better)", "MiB (log2)",
                       rows, an, data, True, term):
        made.append("rss.png")
    # OVSDB and RSS-return: RSS at the stages the workload reports, since
    # memory kept after the work matters as much as the peak there
    stages = [("rss_peak_kb", "peak"), ("rss_work_kb", "after work"),
              ("rss_afterfree_kb", "after free"), ("rss_realloc_kb", "after realloc"),
              ("rss_idle_kb", "after idle"), ("rss_final_kb", "final")]
    rows, data = [], []
    for c in cases:
        if c.group not in ("ovsdb", "rssret"):
            continue
        for key, label in stages:
            vals = [rep.med.get((c.id, a), {}).get(key) for a in an]
            if any(v is not None for v in vals):
                rows.append(f"{c.id}: {label}")
                data.append([v / 1024 if v is not None else None for v in vals])
    if clustered_chart(os.path.join(out, "rss_stages.png"),
                       "OVSDB-like and RSS-return: RSS at each stage (MiB, lower is better)",
                       "MiB (log2)", rows, an, data, True, term):
        made.append("rss_stages.png")
    # latency percentiles per allocator and THP mode
    lat = [c for c in cases if c.group == "latency"]
    rows, data = [], []
    for c in lat:
        for a in an:
            m = rep.med.get((c.id, a))
            if m:
                rows.append(f"{a} {c.id.split()[-1]}")
                data.append([m.get(k, 0) / 1000 for k in ("p50_ns", "p99_ns", "p999_ns")])
    if clustered_chart(os.path.join(out, "latency.png"),
                       "Request latency percentiles (us, lower is better)", "us (log2)",
                       rows, ["p50", "p99", "p99.9"], data, True, term):
        made.append("latency.png")
    # largefrag: ns/op against the number of free spans
    lf = [c for c in cases if c.group == "largefrag"]
    if lf:
        dat = os.path.join(out, "largefrag.dat")
        with open(dat, "w") as f:
            f.write("spans " + " ".join(gp_str(a) for a in an) + "\n")
            for c in lf:
                spans = c.args[0].split("=", 1)[1]
                f.write(spans + " " + " ".join(
                    "?" if (v := rep.value(c, a)) is None else f"{v:.6g}" for a in an) + "\n")
        script = f"""
set terminal {term.replace('1600,800', '1000,700')}
set output {gp_str(os.path.join(out, 'largefrag.png'))}
set title "1 MiB malloc/free on a fragmented heap: ns per cycle vs free spans (flat is good)"
set xlabel "free spans"
set ylabel "ns per malloc/free (log)"
set datafile missing "?"
set logscale xy
set grid
set key top left
plot for [i=2:{len(an) + 1}] {gp_str(dat)} using 1:i with linespoints lw 2 title columnheader(i)
"""
        if run_gnuplot(script):
            made.append("largefrag.png")
    return made


# ---------------------------------------------------------------- main

def write_outputs(rep: Report, args: argparse.Namespace, charts: list[str]) -> None:
    out = args.out
    with open(os.path.join(out, "RESULTS.md"), "w") as f:
        f.write(rep.markdown(charts))
    metric_keys = sorted({k for r in rep.runs for k in r.metrics})
    with open(os.path.join(out, "results.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["case", "allocator", "rep", "ok", "wall_s", "maxrss_kb", "error"] + metric_keys)
        for r in rep.runs:
            w.writerow([r.case, r.alloc, r.rep, int(r.ok), f"{r.wall_s:.4f}", r.maxrss_kb,
                        r.error] + [r.metrics.get(k, "") for k in metric_keys])
    doc = {
        "profile": rep.profile_name, "reps": rep.p["reps"], "machine": rep.machine,
        "allocators": [a.__dict__ for a in rep.allocs], "elapsed_s": rep.elapsed,
        "notes": rep.notes, "load": list(rep.load),
        "cases": [{"id": c.id, "group": c.group, "prog": c.prog, "args": c.args,
                   "metric": c.metric, "medians": {a: rep.med.get((c.id, a))
                                                   for a in rep.anames
                                                   if (c.id, a) in rep.med},
                   "failures": {a: rep.fail[(c.id, a)] for a in rep.anames
                                if (c.id, a) in rep.fail}} for c in rep.cases],
        "callgrind_instr_per_pair": {str(k): v for k, v in rep.cg.items()},
        "largefrag_steady_syscalls": rep.sc,
    }
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
    if args.readme:
        update_readme(args.readme, rep, charts, os.path.relpath(out, os.path.dirname(args.readme)))


def update_readme(path: str, rep: Report, charts: list[str], reldir: str) -> None:
    begin, end = "<!-- results:begin -->", "<!-- results:end -->"
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return
    if begin not in text or end not in text:
        print(f"note: {path} has no results markers; not updated", file=sys.stderr)
        return
    body = ["", f"Measured with `make bench` (profile {rep.profile_name}, "
            f"{rep.p['reps']} repetitions, medians) on:", ""] + rep.machine_lines() + \
           ["", f"Full tables: [{reldir}/RESULTS.md]({reldir}/RESULTS.md).", ""] + \
           rep.main_table() + [""] + [f"![{c}]({reldir}/{c})" for c in charts] + [""]
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    with open(path, "w") as f:
        f.write(head + begin + "\n".join(body) + end + tail)


def rerender(args: argparse.Namespace) -> int:
    """Rebuilds RESULTS.md, charts and README summary from a finished run."""
    src = args.rerender
    with open(os.path.join(src, "results.json")) as f:
        doc = json.load(f)
    p = dict(PROFILES[doc["profile"]])
    p["reps"] = doc["reps"]
    stored = {c["id"]: c for c in doc["cases"]}
    cases = [c for c in build_cases(p) if c.id in stored]
    for c in cases:  # the arguments the run really used, not today's profile
        c.args = stored[c.id]["args"]
    allocs = [Allocator(**a) for a in doc["allocators"]]
    runs = []
    with open(os.path.join(src, "results.csv"), newline="") as f:
        for row in csv.DictReader(f):
            fixed = ("case", "allocator", "rep", "ok", "wall_s", "maxrss_kb", "error")
            metrics = {k: float(v) for k, v in row.items() if k not in fixed and v != ""}
            runs.append(Run(row["case"], row["allocator"], int(row["rep"]), row["ok"] == "1",
                            float(row["wall_s"]), int(row["maxrss_kb"]), metrics, row["error"]))
    cg = {int(k): v for k, v in doc.get("callgrind_instr_per_pair", {}).items()}
    rep = Report(cases, allocs, runs, cg, doc.get("largefrag_steady_syscalls", {}),
                 doc["machine"], doc["profile"], p, doc.get("notes", []), doc["elapsed_s"],
                 tuple(doc.get("load", ["?", "?"])))
    if args.out == os.path.join(HERE, "out", "default"):
        args.out = src
    os.makedirs(args.out, exist_ok=True)
    charts = draw_charts(rep, args.out)
    write_outputs(rep, args, charts)
    print(f"re-rendered {src} into {args.out}: RESULTS.md, {', '.join(charts)}")
    return 0


def loadavg() -> str:
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "?"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--profile", choices=sorted(PROFILES), default="default")
    ap.add_argument("--bin", default=os.path.join(REPO, "build", "bench"),
                    help="directory of the workload programs")
    ap.add_argument("--xalloc", default=os.path.join(REPO, "build", "libxalloc.so.1"))
    ap.add_argument("--out", default=os.path.join(HERE, "out", "default"))
    ap.add_argument("--readme", default="", help="README to refresh between results markers")
    ap.add_argument("--allocators", default="", help="comma list, e.g. glibc,xalloc,jemalloc")
    ap.add_argument("--only", default="",
                    help="regex: run only the cases whose id matches (`callgrind` and "
                         "`syscalls` name the two counting passes)")
    ap.add_argument("--reps", type=int, default=0, help="override the profile's repetitions")
    ap.add_argument("--env", action="append", default=[], metavar="[ALLOC:]NAME=VALUE",
                    help="extra environment for every run (or only ALLOC's), e.g. "
                         "--env xalloc:XALLOC_CONF=arenas:8; repeatable")
    ap.add_argument("--rss-cap-mb", type=int, default=8192,
                    help="kill a run whose RSS passes this (protects the machine)")
    ap.add_argument("--strict", action="store_true",
                    help="exit 1 if any run failed (for make check-bench)")
    ap.add_argument("--no-callgrind", action="store_true")
    ap.add_argument("--no-strace", action="store_true")
    ap.add_argument("--list", action="store_true", help="list the cases and exit")
    ap.add_argument("--rerender", metavar="DIR", default="",
                    help="rebuild tables and charts from DIR/results.{csv,json} without running")
    args = ap.parse_args()
    if args.rerender:
        return rerender(args)

    t_start = time.monotonic()
    load_before = loadavg()
    p = dict(PROFILES[args.profile])
    if args.reps:
        p["reps"] = args.reps
    cases = build_cases(p)
    if args.only:
        cases = [c for c in cases if re.search(args.only, c.id)]
    if args.list:
        for c in cases:
            print(f"{c.id:40s} {c.prog} {' '.join(c.args)}")
        return 0
    os.makedirs(args.out, exist_ok=True)
    notes: list[str] = []
    if args.env:
        notes.append("Extra environment given with --env: " + ", ".join(args.env) + ".")
    allocs = discover_allocators(args.xalloc, [x for x in args.allocators.split(",") if x] or None,
                                 notes)
    missing = [c.prog for c in cases if c.prog not in REAL_PROGRAMS
               and not os.access(os.path.join(args.bin, c.prog), os.X_OK)]
    if missing:
        print(f"error: workload programs missing in {args.bin}: {sorted(set(missing))}; "
              "run `make bench-build`", file=sys.stderr)
        return 2
    # a real program that is not installed skips its rows, never the bench
    have = {"redis": shutil.which("redis-server") and shutil.which("redis-benchmark"),
            "python3": find_python(), "sqlite3": shutil.which("sqlite3")}
    for prog, pkgs in REAL_PROGRAMS.items():
        if not have[prog] and any(c.prog == prog for c in cases):
            what = "redis-server/redis-benchmark" if prog == "redis" else prog
            notes.append(f"SKIP {prog}: {what} not installed (apt-get install -y {pkgs}).")
            cases = [c for c in cases if c.prog != prog]
    if any(c.prog in REAL_PROGRAMS for c in cases):
        notes.append(program_versions(find_python()))
    for nt in notes:
        print(nt, file=sys.stderr)

    runner = Runner(args, p, allocs)
    runs: list[Run] = []
    total = sum(p["reps"] * sum(1 for a in allocs if (c.allocs is None or a.name in c.allocs)
                                and c.env(a.name) is not None) for c in cases)
    k = 0
    # Cases of the "stats" group compare one allocator with itself under
    # two settings: their repetitions run interleaved too (off, on, off,
    # on...), or a change of load between the two cases shows as overhead.
    blocks: list[list[Case]] = []
    for c in cases:
        if blocks and c.group == "stats" and blocks[-1][0].group == "stats":
            blocks[-1].append(c)
        else:
            blocks.append([c])
    schedule = [(c, rep) for blk in blocks for rep in range(p["reps"]) for c in blk]
    for c, rep in schedule:
        for a in allocs:   # interleaved: A,B,C,D,E then again
            if c.allocs is not None and a.name not in c.allocs:
                continue
            k += 1
            r = {"redis": runner.run_redis, "python3": runner.run_real,
                 "sqlite3": runner.run_real}.get(c.prog, runner.run_prog)(c, a, rep)
            runs.append(r)
            shown = (f"{r.metrics.get(c.metric, 0) * c.scale_metric:.4g} {c.unit}"
                     if r.ok else "FAIL " + r.error)
            print(f"[{k}/{total} {time.monotonic() - t_start:5.0f}s] {c.id} | {a.name} "
                  f"| rep {rep + 1}: {shown}, peak {r.maxrss_kb / 1024:.1f} MiB",
                  flush=True)

    cg: dict[int, dict[str, float | str]] = {}
    want_cg = not args.no_callgrind and (not args.only or re.search(args.only, "callgrind"))
    want_sc = not args.no_strace and (not args.only or re.search(args.only, "syscalls"))
    if want_cg and shutil.which("valgrind"):
        n1, n2 = p["cg_pairs"]
        # the three sizes: a small class, 1 KiB, and the FreeBSD seed's
        for size in (64, 1024, 9300):
            cg[size] = {}
            variants = [(a, a.name, {}) for a in allocs]
            variants += [(a, f"xalloc stats:{st}", {"XALLOC_CONF": f"stats:{st}"})
                         for a in allocs if a.name == "xalloc" and size == 64
                         for st in ("off", "on")]
            for a, label, extra in variants:
                try:
                    i1 = runner.callgrind_ir(a, extra, size, n1)
                    i2 = runner.callgrind_ir(a, extra, size, n2)
                    cg[size][label] = (i2 - i1) / (n2 - n1)
                    print(f"callgrind {size} B {label}: {cg[size][label]:.1f} instructions/pair",
                          flush=True)
                except (RuntimeError, subprocess.SubprocessError, OSError) as e:
                    cg[size][label] = str(e)[:200]
                    print(f"callgrind {size} B {label}: FAIL {e}", flush=True)
    elif want_cg:
        notes.append("SKIP callgrind: valgrind not installed (apt-get install -y valgrind).")

    sc: dict[str, dict[str, float] | str] = {}
    if want_sc and shutil.which("strace"):
        for a in allocs:
            try:
                sc[a.name] = runner.strace_counts(a, 10000, p["strace_cycles"])
                print(f"strace largefrag {a.name}: {sc[a.name]}", flush=True)
            except (RuntimeError, subprocess.SubprocessError, OSError) as e:
                sc[a.name] = str(e)[:200]
                print(f"strace largefrag {a.name}: FAIL {e}", flush=True)
    elif want_sc:
        notes.append("SKIP syscall counts: strace not installed (apt-get install -y strace).")

    elapsed = time.monotonic() - t_start
    rep_ = Report(cases, allocs, runs, cg, sc, machine_info(), args.profile, p, notes,
                  elapsed, (load_before, loadavg()))
    charts = draw_charts(rep_, args.out)
    write_outputs(rep_, args, charts)
    shutil.rmtree(runner.tmp, ignore_errors=True)
    nfail = sum(1 for r in runs if not r.ok)
    print(f"\nwrote {os.path.relpath(os.path.join(args.out, 'RESULTS.md'), os.getcwd())}, "
          f"results.csv, results.json, {', '.join(charts) or 'no charts'}")
    print(f"bench elapsed: {elapsed:.0f} s ({elapsed / 60:.1f} min; budget for "
          f"{args.profile}: {p['budget_s'] / 60:.0f} min), {nfail} failed runs of {len(runs)}")
    if elapsed > p["budget_s"]:
        print(f"warning: over the {args.profile} time budget", file=sys.stderr)
    cg_fail = [f"{k} {lbl}" for k, row in cg.items() for lbl, v in row.items()
               if isinstance(v, str)]
    sc_fail = [k for k, v in sc.items() if isinstance(v, str)]
    if args.strict and (nfail or cg_fail or sc_fail):
        for r in runs:
            if not r.ok:
                print(f"FAIL {r.case} | {r.alloc}: {r.error}", file=sys.stderr)
        for f_ in cg_fail + sc_fail:
            print(f"FAIL counting pass: {f_}", file=sys.stderr)
        return 1
    return 1 if nfail and nfail == len(runs) else 0


if __name__ == "__main__":
    sys.exit(main())
