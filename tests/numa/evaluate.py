#!/usr/bin/env python3
"""evaluate.py: reads the serial console logs of the numa-check guests and
prints one table of checks (rows) by guest (columns). Exit status 1 when
any check failed or a guest did not finish, 0 otherwise.

Besides the CHECK lines the probes print, it evaluates here the check that
needs the host's tools: xalloc-stat's per-node bytes against the kernel's
/proc/PID/numa_maps (within 5%), over the heap's own mappings. That check needs a per-node section in
`xalloc-stat --json`: a list "nodes" of objects with "node" (the node id)
and "resident" (bytes). Without it the check fails and says so.

Usage: evaluate.py LOG... (file names console-<nodes>-check.log)"""
import json
import os
import re
import sys


def section(text, name):
    m = re.search(r"^BEGIN %s\r?\n(.*?)^END %s" % (name, name), text, re.S | re.M)
    return m.group(1) if m else None


def xalloc_vmas(maps):
    """Start addresses of the mappings the kernel names [anon:xalloc...]
    (PR_SET_VMA_ANON_NAME), or None when it names none (a kernel without
    CONFIG_ANON_VMA_NAME)."""
    if not maps:
        return None
    starts = set()
    for line in maps.splitlines():
        if "[anon:xalloc" in line:
            starts.add(line.split("-", 1)[0].lstrip("0") or "0")
    return starts or None


def numa_maps_bytes(text, starts):
    """Resident bytes per node of xalloc's heap (its chunks and huge
    mappings). numa_maps gives pages per node (N<k>=) and the page size.
    The heap's mappings are those named [anon:xalloc...] in maps; without
    names, the anonymous mappings with a NUMA policy (xalloc binds each
    chunk to its arena's node; thread stacks and other anonymous memory of
    the program keep the default policy, and glibc writes the top of a new
    thread's stack from the creating thread, so they are not the heap's)."""
    per = {}
    for line in text.splitlines():
        if "anon=" not in line or " stack" in line or "file=" in line:
            continue
        fields = line.split()
        if starts is not None:
            if (fields[0].lstrip("0") or "0") not in starts:
                continue
        elif len(fields) < 2 or fields[1] == "default":
            continue
        kb = re.search(r"kernelpagesize_kB=(\d+)", line)
        size = int(kb.group(1)) * 1024 if kb else 4096
        for node, pages in re.findall(r"\bN(\d+)=(\d+)", line):
            per[int(node)] = per.get(int(node), 0) + int(pages) * size
    return per


def stats_check(text):
    js = section(text, "stats_json")
    nm = section(text, "numa_maps")
    name = "stats_per_node_vs_numa_maps"
    if js is None or nm is None:
        return (name, "FAIL", "the guest printed no xalloc-stat/numa_maps section")
    try:
        doc = json.loads(js)
    except ValueError:
        first = js.strip().splitlines()[:1]
        return (name, "FAIL", "xalloc-stat --json gave no JSON: %s" % (first[0] if first else "(empty)"))
    nodes = doc.get("nodes")
    if not isinstance(nodes, list) or not nodes:
        return (name, "FAIL", "xalloc-stat --json has no per-node section "
                "(\"nodes\": [{\"node\", \"resident\"}]); per-node statistics not implemented yet")
    starts = xalloc_vmas(section(text, "maps"))
    kernel = numa_maps_bytes(nm, starts)
    bad, parts = [], []
    for entry in nodes:
        node = entry.get("node")
        xs = entry.get("resident")
        if not isinstance(node, int) or not isinstance(xs, int):
            return (name, "FAIL", "per-node entry without integer node/resident: %r" % entry)
        k = kernel.get(node, 0)
        parts.append("node%d xalloc=%d kernel=%d" % (node, xs, k))
        if k == 0 and xs == 0:
            continue
        if abs(xs - k) > 0.05 * max(k, 1):
            bad.append(node)
    parts.append("heap mappings by %s" % ("name" if starts is not None else "NUMA policy"))
    detail = "; ".join(parts) + (" (need each within 5%%; off: %s)" % bad if bad else " (each within 5%)")
    return (name, "FAIL" if bad else "PASS", detail)


def main():
    results = {}  # guest -> list of (name, verdict, detail)
    guests = []
    for path in sys.argv[1:]:
        m = re.search(r"console-(\d+)-", os.path.basename(path))
        guest = "%s nodes" % (m.group(1) if m else path)
        guests.append(guest)
        try:
            text = open(path, errors="replace").read()
        except OSError as e:
            results[guest] = [("guest_log", "FAIL", str(e))]
            continue
        rows = []
        for line in text.splitlines():
            m = re.match(r"CHECK (\S+) (PASS|FAIL) ?(.*)", line.strip())
            if m:
                rows.append((m.group(1), m.group(2), m.group(3)))
        # A program that died (signal, time limit) without its checks.
        for name, rc in re.findall(r"^RC (\S+) (\d+)", text, re.M):
            if int(rc) not in (0, 1):
                rows.append((name + "_exit", "FAIL", "exit status %s (crash or time limit)" % rc))
        if re.search(r"^RUN ", text, re.M):
            rows.append(stats_check(text))
        done = "GUEST-DONE" in text
        rows.append(("guest_finished", "PASS" if done else "FAIL",
                     "powered off normally" if done else "no GUEST-DONE on the console (see %s)" % path))
        results[guest] = rows

    names = []
    for g in sorted(guests, key=lambda g: -len(results[g])):
        for r in results[g]:
            if r[0] not in names:
                names.append(r[0])
    width = max([len(n) for n in names] + [10])
    print("%-*s  %s" % (width, "check", "  ".join("%-9s" % g for g in guests)))
    failed = 0
    for n in names:
        cells = []
        for g in guests:
            v = [r for r in results[g] if r[0] == n]
            cells.append("%-9s" % (v[0][1] if v else "-"))
            failed += sum(1 for r in v if r[1] == "FAIL")
        print("%-*s  %s" % (width, n, "  ".join(cells)))
    print()
    for g in guests:
        for n, v, d in results[g]:
            if v == "FAIL":
                print("FAIL [%s] %s: %s" % (g, n, d))
    for g in guests:
        for n, v, d in results[g]:
            if v == "PASS":
                print("pass [%s] %s: %s" % (g, n, d))
    total = sum(len(results[g]) for g in guests)
    print("\nnuma-check: %d of %d checks failed" % (failed, total))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
