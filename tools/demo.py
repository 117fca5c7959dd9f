#!/usr/bin/env python3
"""demo.py: what xalloc is for, in under a minute (make demo).

Runs the situations of the design brief (tools/demo/seeds.c) under glibc,
jemalloc (when installed) and xalloc, side by side, then two real programs
(python3, sqlite3), then starts the table server under xalloc and prints a
live `xalloc-stat` of it. Every figure is measured here and now, one run
each: timings on a shared machine are noisy.

Usage: tools/demo.py LIB SEEDS XALLOC_STAT [--quick] [--check]
  --quick  small workloads (make check), same rows
  --check  exit 1 unless every row printed has a number in every column
"""
import os
import re
import subprocess
import sys
import tempfile
import time

args = [a for a in sys.argv[1:] if not a.startswith("--")]
QUICK = "--quick" in sys.argv
CHECK = "--check" in sys.argv
LIB = os.path.abspath(args[0] if len(args) > 0 else "build/libxalloc.so.1")
SEEDS = os.path.abspath(args[1] if len(args) > 1 else "build/demo/seeds")
STAT = os.path.abspath(args[2] if len(args) > 2 else "build/xalloc-stat")

JEMALLOC = next((p for p in ("/usr/lib/x86_64-linux-gnu/libjemalloc.so.2",
                             "/usr/lib/aarch64-linux-gnu/libjemalloc.so.2",
                             "/usr/lib64/libjemalloc.so.2") if os.path.exists(p)), None)

# name, LD_PRELOAD, environment for "huge pages on"
ALLOCATORS = [("glibc", None, {"GLIBC_TUNABLES": "glibc.malloc.hugetlb=1"})]
if JEMALLOC:
    ALLOCATORS.append(("jemalloc", JEMALLOC, {"MALLOC_CONF": "thp:always,metadata_thp:auto"}))
ALLOCATORS.append(("xalloc", LIB, {"XALLOC_CONF": "thp:always"}))

if QUICK:
    TABLE = ["4", "20000", "5000"]
    QUEUE = ["2", "40000", "5000"]
    LAT = ["200"]
    PY_ROWS, SQL_ROWS = 20000, 20000
else:
    TABLE = ["10", "100000", "40000"]
    QUEUE = ["4", "400000", "50000"]
    LAT = ["1500"]
    PY_ROWS, SQL_ROWS = 80000, 150000

PY_WORKLOAD = r"""
import json, random, sys
n = int(sys.argv[1])
random.seed(7)
rows = {}
for i in range(n):
    rows["key%d" % i] = {"id": i, "name": "n" * (i % 40), "tags": [random.random() for _ in range(i % 8)]}
for r in range(3):
    for i in range(0, n, 3):
        rows["key%d" % i]["name"] = "x" * ((i + r) % 60)
s = json.dumps(rows)
print(len(s), sum(len(v["tags"]) for v in rows.values()))
"""

SQL = """
create table t(a integer, b integer, c text);
with recursive c(x) as (select 1 union all select x+1 from c where x<%d)
insert into t select x, x %% 1000, printf('row-%%08d', x) from c;
create index i on t(b);
select b, count(*), sum(a), max(c) from t group by b order by b limit 3;
""" % SQL_ROWS


def env_for(preload, extra=None):
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    for k in ("XALLOC_CONF", "MALLOC_CONF", "GLIBC_TUNABLES"):
        env.pop(k, None)
    if preload:
        env["LD_PRELOAD"] = preload
    env.update(extra or {})
    return env


def run(cmd, preload, extra=None):
    """Runs cmd; returns (wall s, stdout)."""
    start = time.monotonic()
    p = subprocess.run(cmd, env=env_for(preload, extra), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    if p.returncode != 0:
        sys.exit("demo: %s failed (%s): %s" % (" ".join(cmd), p.returncode, p.stderr.decode()[-400:]))
    return time.monotonic() - start, p.stdout.decode()


def seeds(what, params, preload, extra=None):
    _, out = run([SEEDS, what] + params, preload, extra)
    return {k: float(v) for k, v in re.findall(r"(\w+)=([0-9.]+)", out)}


def real_program(cmd, preload, stdin=None):
    start = time.monotonic()
    p = subprocess.Popen(cmd, env=env_for(preload), stdin=subprocess.PIPE if stdin else None,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if stdin:
        p.stdin.write(stdin.encode())
        p.stdin.close()
    out = p.stdout.read()
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - start
    if status != 0:
        sys.exit("demo: %s failed (%s): %s" % (cmd[0], status, err.decode()[-400:]))
    return wall, ru.ru_maxrss / 1024.0, out


rows = []  # (situation, metric, [value per allocator])


def add(situation, metric, values):
    rows.append((situation, metric, values))
    cells = "".join("%12s" % ("-" if v is None else ("%.1f" % v)) for v in values)
    print("%-34s %-22s%s" % (situation, metric, cells), flush=True)


def main():
    for f, what in ((LIB, "the library (make lib)"), (SEEDS, "the seeds program"), (STAT, "xalloc-stat")):
        if not os.path.exists(f):
            sys.exit("demo: %s not built: %s" % (what, f))
    names = [a[0] for a in ALLOCATORS]
    t_start = time.monotonic()
    print("xalloc demo%s: the situations xalloc was written for, one run each, on this machine" %
          (" (quick)" if QUICK else ""))
    if not JEMALLOC:
        print("(jemalloc not installed: apt-get install libjemalloc2 adds its column)")
    print()
    print("%-34s %-22s%s" % ("situation", "measure", "".join("%12s" % n for n in names)))

    res = [seeds("table", TABLE, pre) for _, pre, _ in ALLOCATORS]
    sit = "table server: %s threads update" % TABLE[0]
    add(sit, "peak RSS MiB", [r["peak_mib"] for r in res])
    add("  %sk rows, then delete 90%%" % (int(TABLE[1]) // 1000), "RSS after delete MiB",
        [r["after_delete_mib"] for r in res])
    add("", "RSS 1 s later MiB", [r["after_idle_mib"] for r in res])
    add("", "time s", [r["seconds"] for r in res])

    res = [seeds("queue", QUEUE, pre) for _, pre, _ in ALLOCATORS]
    add("producer/consumer queue: %s" % QUEUE[0], "peak RSS MiB", [r["peak_mib"] for r in res])
    add("  producers, bursts of %sk msgs" % (int(QUEUE[2]) // 1000), "RSS after drain MiB",
        [r["after_drain_mib"] for r in res])
    add("", "RSS 1 s later MiB", [r["after_idle_mib"] for r in res])
    add("", "time s", [r["seconds"] for r in res])

    res = [seeds("latency", LAT, pre, huge) for _, pre, huge in ALLOCATORS]
    add("request latency, huge pages on", "p50 us", [r["p50_us"] for r in res])
    add("  (%s requests, 12 buffers" % LAT[0], "p99 us", [r["p99_us"] for r in res])
    add("  of 1-256 KiB each)", "mean us", [r["mean_us"] for r in res])
    add("", "THP-backed MiB", [r["huge_mib"] for r in res])

    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(PY_WORKLOAD)
        script = f.name
    try:
        outs = []
        res = []
        for _, pre, _ in ALLOCATORS:
            wall, peak, out = real_program(["python3", script, str(PY_ROWS)], pre)
            res.append((wall, peak))
            outs.append(out)
        same = len(set(outs)) == 1
        add("python3: %dk dict rows, json" % (PY_ROWS // 1000), "time s", [r[0] for r in res])
        add("  (%s)" % ("same output" if same else "OUTPUT DIFFERS"), "peak RSS MiB", [r[1] for r in res])
        outs = []
        res = []
        for _, pre, _ in ALLOCATORS:
            wall, peak, out = real_program(["sqlite3", ":memory:"], pre, SQL)
            res.append((wall, peak))
            outs.append(out)
        same2 = len(set(outs)) == 1
        add("sqlite3: %dk rows, index, group" % (SQL_ROWS // 1000), "time s", [r[0] for r in res])
        add("  (%s)" % ("same output" if same2 else "OUTPUT DIFFERS"), "peak RSS MiB", [r[1] for r in res])
    finally:
        os.unlink(script)

    print()
    print("RSS is the process's resident set (VmRSS; peak: VmHWM). 'Huge pages on' means each")
    print("allocator's own switch: glibc.malloc.hugetlb=1, jemalloc thp:always, xalloc thp:always.")
    print()
    live(names)
    print()
    print("demo: %.0f s" % (time.monotonic() - t_start))
    if CHECK:
        bad = [(s, m) for s, m, v in rows if any(x is None or x != x for x in v) or len(v) != len(names)]
        if bad or not same or not same2:
            sys.exit("demo: rows without numbers or outputs differ: %s" % bad)
        print("demo: every row has a number for every allocator (%d rows)" % len(rows))


def live(names):
    """The table server under xalloc, held after its delete: a live report."""
    params = TABLE + ["6"]
    p = subprocess.Popen([SEEDS, "table"] + params, env=env_for(LIB), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        for line in p.stdout:
            if line.strip() == "deleted":
                break
        print("$ xalloc-stat %d     # the table server under xalloc, after its delete" % p.pid)
        r = subprocess.run([STAT, str(p.pid)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, timeout=20)
        lines = r.stdout.splitlines()
        # Up to the size classes: the header, totals, kernel view, arenas.
        cut = next((i for i, l in enumerate(lines) if l.startswith("Size classes")), len(lines))
        print("\n".join(lines[:cut]).rstrip())
        if cut < len(lines):
            print("(%d more lines: per size class, configuration)" % (len(lines) - cut))
        if r.returncode != 0:
            sys.exit("demo: xalloc-stat failed (%d)" % r.returncode)
    finally:
        p.kill()
        p.wait()


if __name__ == "__main__":
    main()
