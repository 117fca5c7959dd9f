#!/usr/bin/env python3
"""tools/prof-bench/run.py: what heap profiling costs (make bench-prof).

Runs workloads of the benchmark suite (the programs tools/bench builds into
build/bench/) under five configurations, interleaved within each
repetition so that machine noise hits all of them alike:

  xalloc          libxalloc.so.1
  prof:false      libxalloc-prof.so.1, XALLOC_CONF=prof:false
  prof:true       libxalloc-prof.so.1, XALLOC_CONF=prof:true (512 KiB mean)
  jemalloc        Debian's libjemalloc.so.2
  jemalloc prof   libjemalloc.so.2, MALLOC_CONF=prof:true (512 KiB mean)

and prints a markdown table of the median of the time each workload
measures itself (secs: its timed phase, without start-up and set-up) and
of its peak RSS (rss_peak_kb, read by the workload from /proc), with the
ratios prof:false / xalloc, prof:true / xalloc and jemalloc prof / jemalloc.
Then two micro figures from tests/prof/prof_cost.c: the cost of one unwind
and of one dump of a 10,000-stack profile.

usage: run.py --build DIR [--reps N] [--out FILE.md]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

WORKLOADS = [
    ("malloc-test 64 B t1", "malloc_test", ["threads=1", "size=64", "pairs=10000000"]),
    ("malloc-test 1 KiB t2", "malloc_test", ["threads=2", "size=1024", "pairs=6000000"]),
    ("malloc-test 9300 B t1", "malloc_test", ["threads=1", "size=9300", "pairs=6000000"]),
    ("malloc-test 64 KiB t1", "malloc_test", ["threads=1", "size=65536", "pairs=3000000"]),
    ("ovsdb update 1000 rows", "ovsdb",
     ["mode=update", "rows=1000", "workers=10", "rowmap=256", "rpt=1", "ops=750"]),
    ("ovsdb insert-only 200000 rows", "ovsdb",
     ["mode=insert", "rows=200000", "workers=10", "rowmap=4", "rpt=16"]),
    ("larson t2", "larson", ["threads=2", "slots=1000", "ops=250000", "rounds=20"]),
    ("thread churn 200", "churn", ["threads=200", "live=2", "bytes=4m"]),
    ("producer/consumer 1+1", "prodcons", ["pairs=1", "items=3000000"]),
    ("realloc-grow", "realloc_grow", ["builders=8", "target=256k", "append=128", "rounds=250"]),
    ("largefrag 1000 spans", "largefrag", ["spans=1000", "cycles=2000000", "secs=0.3"]),
    ("false sharing active t2", "falseshare", ["mode=active", "threads=2", "iters=125000"]),
    ("latency t2", "latency", ["threads=2", "requests=50000"]),
    ("rss-return 256 MiB", "rssret",
     ["total=256M", "small=64", "other=256", "free_pct=90", "pause_ms=200"]),
]

JEMALLOC = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"


def configs(build, prof_dir):
    plain = os.path.join(build, "libxalloc.so.1")
    prof = os.path.join(build, "libxalloc-prof.so.1")
    cs = [
        ("xalloc", {"LD_PRELOAD": plain}),
        ("prof:false", {"LD_PRELOAD": prof, "XALLOC_CONF": "prof:false"}),
        ("prof:true", {"LD_PRELOAD": prof, "XALLOC_CONF": f"prof:true,prof_dir:{prof_dir}"}),
    ]
    if os.path.exists(JEMALLOC):
        cs.append(("jemalloc", {"LD_PRELOAD": JEMALLOC}))
        cs.append(("jemalloc prof", {"LD_PRELOAD": JEMALLOC, "MALLOC_CONF": "prof:true"}))
    return cs


def run_once(argv, extra):
    env = {k: v for k, v in os.environ.items()
           if k not in ("LD_PRELOAD", "XALLOC_CONF", "MALLOC_CONF")}
    env.update(extra)
    env["LC_ALL"] = "C"
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)
    kv = {}
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            kv = dict(w.split("=", 1) for w in line.split()[1:] if "=" in w)
    if proc.returncode != 0 or "secs" not in kv or "rss_peak_kb" not in kv:
        raise RuntimeError(f"{' '.join(argv)} with {extra}: status {proc.returncode}: "
                           f"{proc.stderr[-500:]}")
    # largefrag runs for a fixed time; its cost is ns_per_op (shown as s
    # per million operations, so the ratios read the same way).
    if "ns_per_op" in kv and kv.get("workload") == "largefrag":
        return float(kv["ns_per_op"]) / 1000.0, int(kv["rss_peak_kb"])
    return float(kv["secs"]), int(kv["rss_peak_kb"])


def ratio(a, b):
    return f"{a / b:.3f}" if a and b else "-"


def callgrind_table(build, cs):
    """Instructions per malloc/free pair (valgrind --tool=callgrind, whole
    process, 200,000 pairs minus 100,000 pairs so start-up cancels out):
    unlike time on a shared machine, these do not vary from run to run."""
    exe = os.path.join(build, "bench", "malloc_test")
    if not shutil.which("valgrind"):
        return []

    def ir(extra, size, pairs):
        env = {k: v for k, v in os.environ.items()
               if k not in ("LD_PRELOAD", "XALLOC_CONF", "MALLOC_CONF")}
        env.update(extra)
        out = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                              exe, "threads=1", f"size={size}", f"pairs={pairs}"],
                             env=env, capture_output=True, text=True, check=True).stderr
        for line in out.splitlines():
            if "Collected :" in line:
                return int(line.split()[-1])
        raise RuntimeError("callgrind: no count")
    sizes = (64, 1024, 9300, 65536)
    lines = ["", "Instructions per malloc/free pair (callgrind, malloc-test t1; "
             "(Ir(200k pairs) - Ir(100k pairs)) / 100k):", "",
             "| size | " + " | ".join(n for n, _ in cs) + " |",
             "|---|" + "---|" * len(cs)]
    for size in sizes:
        cells = []
        for _, extra in cs:
            cells.append(f"{(ir(extra, size, 200000) - ir(extra, size, 100000)) / 100000:.1f}")
        lines.append(f"| {size} B | " + " | ".join(cells) + " |")
    return lines


def micro(build):
    """Unwind and dump costs from build/tests/prof/prof_cost (if built)."""
    exe = os.path.join(build, "tests", "prof", "prof_cost")
    if not os.path.exists(exe):
        return None
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, LD_PRELOAD=os.path.join(build, "libxalloc-prof.so.1"),
                   XALLOC_CONF=f"prof:true,prof_sample:1,prof_dir:{d}")
        out = subprocess.run([exe], env=env, capture_output=True, text=True, check=True)
        return out.stdout.strip()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--only", default="", help="substring of the workload names to run")
    ap.add_argument("--out", default="")
    ap.add_argument("--no-callgrind", action="store_true")
    args = ap.parse_args()
    bench = os.path.join(args.build, "bench")
    lines = []
    with tempfile.TemporaryDirectory() as prof_dir:
        cs = configs(args.build, prof_dir)
        names = [c[0] for c in cs]
        results = {}
        for label, prog, argv in WORKLOADS:
            if args.only and args.only not in label:
                continue
            exe = os.path.join(bench, prog)
            samples = {n: [] for n in names}
            for _ in range(args.reps):
                for n, extra in cs:
                    samples[n].append(run_once([exe] + argv, extra))
            results[label] = {n: (statistics.median(w for w, _ in s),
                                  statistics.median(r for _, r in s))
                              for n, s in samples.items()}
            r = results[label]
            print(f"# {label}: " + ", ".join(f"{n} {r[n][0]:.3f}s {r[n][1] / 1024:.1f}MiB"
                                             for n in names), file=sys.stderr)
        lines.append(f"Median of {args.reps} runs per cell, configurations interleaved; "
                     "seconds of the timed phase (peak RSS MiB).")
        lines.append("")
        head = "| workload | " + " | ".join(names) + \
            " | prof:false/xalloc time | prof:true/xalloc time | prof:true/xalloc RSS |"
        if "jemalloc" in names:
            head += " jemalloc prof/jemalloc time | jemalloc prof/jemalloc RSS |"
        lines.append(head)
        lines.append("|" + "---|" * (head.count("|") - 1))
        for label, r in results.items():
            row = f"| {label} | " + " | ".join(f"{r[n][0]:.3f} ({r[n][1] / 1024:.1f})"
                                             for n in names)
            row += (f" | {ratio(r['prof:false'][0], r['xalloc'][0])}"
                    f" | {ratio(r['prof:true'][0], r['xalloc'][0])}"
                    f" | {ratio(r['prof:true'][1], r['xalloc'][1])} |")
            if "jemalloc" in names:
                row += (f" {ratio(r['jemalloc prof'][0], r['jemalloc'][0])}"
                        f" | {ratio(r['jemalloc prof'][1], r['jemalloc'][1])} |")
            lines.append(row)
        if results:
            def geo(key, idx, a, b):
                vals = [r[a][idx] / r[b][idx] for r in results.values() if r[b][idx]]
                return statistics.geometric_mean(vals) if vals else 0
            lines.append("")
            lines.append(f"Geometric means: prof:false/xalloc time "
                         f"{geo('t', 0, 'prof:false', 'xalloc'):.3f}, prof:true/xalloc time "
                         f"{geo('t', 0, 'prof:true', 'xalloc'):.3f}, RSS "
                         f"{geo('r', 1, 'prof:true', 'xalloc'):.3f}" +
                         (f"; jemalloc prof/jemalloc time "
                          f"{geo('t', 0, 'jemalloc prof', 'jemalloc'):.3f}, RSS "
                          f"{geo('r', 1, 'jemalloc prof', 'jemalloc'):.3f}"
                          if "jemalloc" in names else "") + ".")
        if not args.no_callgrind:
            lines.extend(callgrind_table(args.build, cs))
    m = micro(args.build)
    if m:
        lines.append("")
        lines.append(m)
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
