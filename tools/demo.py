#!/usr/bin/env python3
"""demo.py: runs real programs with and without xalloc and prints wall time
and peak RSS side by side (peak RSS from the kernel's accounting of the
finished child, wait4 rusage). Usage: tools/demo.py path/to/libxalloc.so.1"""
import os
import subprocess
import sys
import tempfile
import time

LIB = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/libxalloc.so.1")

PY_WORKLOAD = r"""
import json, random
random.seed(7)
rows = {}
for i in range(300000):
    rows["key%d" % i] = {"id": i, "name": "n" * (i % 40), "tags": [random.random() for _ in range(i % 8)]}
for r in range(3):
    for i in range(0, 300000, 3):
        rows["key%d" % i]["name"] = "x" * ((i + r) % 60)
s = json.dumps(rows)
print(len(s), sum(len(v["tags"]) for v in rows.values()))
"""

SQL = """
create table t(a integer, b integer, c text);
with recursive c(x) as (select 1 union all select x+1 from c where x<300000)
insert into t select x, x % 1000, printf('row-%08d', x) from c;
create index i on t(b);
select b, count(*), sum(a), max(c) from t group by b order by b limit 3;
"""


def run(cmd, preload, stdin=None):
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    if preload:
        env["LD_PRELOAD"] = LIB
    start = time.monotonic()
    p = subprocess.Popen(cmd, env=env, stdin=subprocess.PIPE if stdin else None,
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
    return wall, ru.ru_maxrss, out


def main():
    if not os.path.exists(LIB):
        sys.exit("demo: %s not built (run make)" % LIB)
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(PY_WORKLOAD)
        script = f.name
    programs = [
        ("python3 (300k dict rows, json)", ["python3", script], None),
        ("sqlite3 (300k rows, index, group by)", ["sqlite3", ":memory:"], SQL),
    ]
    print("%-40s %12s %12s %12s %12s" % ("program", "glibc s", "xalloc s", "glibc RSS", "xalloc RSS"))
    for name, cmd, stdin in programs:
        best = {}
        outputs = {}
        for preload in (False, True, False, True, False, True):
            wall, rss, out = run(cmd, preload, stdin)
            outputs.setdefault(preload, out)
            w, r = best.get(preload, (1e9, 0))
            best[preload] = (min(w, wall), max(r, rss))
        same = "same output" if outputs[False] == outputs[True] else "OUTPUT DIFFERS"
        g, x = best[False], best[True]
        print("%-40s %12.3f %12.3f %9.1f MiB %9.1f MiB  (%s)" %
              (name, g[0], x[0], g[1] / 1024, x[1] / 1024, same))
        if same != "same output":
            sys.exit(1)
    os.unlink(script)
    print("(best of 3 runs each; RSS is the peak resident set of the whole process)")


if __name__ == "__main__":
    main()
