#!/usr/bin/env python3
"""pywork.py: the python3 real-program workload of tools/bench (run.py).

    python3 pywork.py N

A CPU-bound, allocation-heavy pure-Python job of the kind services run,
with the interpreter's default allocator (pymalloc serves objects up to
512 B from its arenas; bigger objects and the arenas come from malloc):

  1. records   N nested records (dicts, lists, floats, strings of 0-2000
               characters: short names, mid-size addresses, long bios)
  2. json      the records dumped to one JSON text, loaded back, compared;
               every 16th record dumped on its own with indent
  3. index     records grouped by city (dict of lists, sorted), an inverted
               index of tags (dict of sets), set intersections
  4. text      bios split into words, counted (dict), rejoined, formatted,
               encoded to bytes and back
  5. graph     N objects with instance dicts and adjacency lists, random
               edges (cycles), breadth-first distances, then dropped
  6. churn     3 rounds: a third of the records replaced by new ones of
               other sizes, a sixth deleted and re-added, re-dumped

Prints one deterministic line per phase (counts and CRC-32 digests): the
runner checks that the output is the same under every allocator. With
XBENCH_MAPS=FILE in the environment it also writes the executable mappings
of the process (/proc/self/maps, r-xp lines) to FILE, so the runner can
check that the preloaded allocator really was loaded.
"""
import gc
import json
import os
import random
import sys
import zlib

WORDS = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima "
         "mike november oscar papa quebec romeo sierra tango uniform victor whiskey "
         "xray yankee zulu allocator arena slab chunk page heap thread cache").split()
CITIES = ["city%02d" % i for i in range(40)]


def crc(s):
    return "%08x" % (zlib.crc32(s.encode() if isinstance(s, str) else s) & 0xffffffff)


def text(rng, nwords):
    return " ".join(rng.choice(WORDS) for _ in range(nwords))


def record(rng, i):
    # bio sizes: mostly short, a tail of long ones (> 512 B goes to malloc)
    k = rng.random()
    nbio = rng.randint(0, 8) if k < 0.6 else rng.randint(20, 80) if k < 0.9 else rng.randint(150, 300)
    return {
        "id": i,
        "name": "user%07d" % i,
        "email": "user%d@%s.example" % (i, rng.choice(WORDS)),
        "city": rng.choice(CITIES),
        "address": {"street": "%d %s street" % (rng.randint(1, 999), rng.choice(WORDS)),
                    "zip": "%05d" % rng.randint(0, 99999),
                    "lines": [text(rng, rng.randint(1, 4)) for _ in range(rng.randint(0, 3))]},
        "tags": sorted({rng.choice(WORDS) for _ in range(rng.randint(0, 6))}),
        "scores": [round(rng.random() * 100, 3) for _ in range(rng.randint(0, 12))],
        "bio": text(rng, nbio),
        "active": rng.random() < 0.7,
    }


def phase_records(rng, n):
    recs = [record(rng, i) for i in range(n)]
    size = sum(len(r["bio"]) for r in recs)
    print("records", len(recs), size, crc(repr(recs[n // 2])))
    return recs


def phase_json(recs):
    s = json.dumps(recs, separators=(",", ":"))
    back = json.loads(s)
    assert back == recs
    pretty = [json.dumps(r, indent=2, sort_keys=True) for r in recs[::16]]
    again = [json.loads(p) for p in pretty]
    assert again == recs[::16]
    print("json", len(s), crc(s), sum(len(p) for p in pretty), crc(pretty[-1]))


def phase_index(recs):
    by_city = {}
    for r in recs:
        by_city.setdefault(r["city"], []).append(r)
    for lst in by_city.values():
        lst.sort(key=lambda r: (-sum(r["scores"]), r["id"]))
    tops = [(c, [r["id"] for r in by_city[c][:3]]) for c in sorted(by_city)]
    inv = {}
    for r in recs:
        for t in r["tags"]:
            inv.setdefault(t, set()).add(r["id"])
    pairs = 0
    for a in sorted(inv)[:12]:
        for b in sorted(inv)[12:24]:
            pairs += len(inv[a] & inv[b])
    print("index", len(by_city), crc(repr(tops)), len(inv), pairs)


def phase_text(recs):
    counts = {}
    out = []
    for r in recs:
        words = r["bio"].split()
        for w in words:
            counts[w] = counts.get(w, 0) + 1
        line = "%s|%s|%s" % (r["name"], r["city"], "-".join(w.upper() for w in words[:20]))
        out.append(line.replace("-", "+").encode("utf-8").decode("utf-8"))
    top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:5]
    blob = "\n".join(out)
    print("text", len(counts), repr(top), len(blob), crc(blob))


class Node:
    def __init__(self, i, label):
        self.id = i
        self.label = label
        self.edges = []
        self.dist = -1


def build_graph(rng, n):
    """The graph lives only in here: on return it is cyclic garbage."""
    nodes = [Node(i, "n%d-%s" % (i, rng.choice(WORDS))) for i in range(n)]
    for nd in nodes:
        for _ in range(rng.randint(1, 4)):
            other = nodes[rng.randrange(n)]
            nd.edges.append(other)
            other.edges.append(nd)
    nodes[0].dist = 0
    frontier = [nodes[0]]
    while frontier:
        nxt = []
        for nd in frontier:
            for o in nd.edges:
                if o.dist < 0:
                    o.dist = nd.dist + 1
                    nxt.append(o)
        frontier = nxt
    hist = {}
    for nd in nodes:
        hist[nd.dist] = hist.get(nd.dist, 0) + 1
    return sum(len(nd.edges) for nd in nodes), sorted(hist.items())


def phase_graph(rng, n):
    edges, hist = build_graph(rng, n)
    gc.collect()  # the graph is cyclic garbage now: this frees it
    print("graph", n, edges, hist)


def phase_churn(rng, recs):
    n = len(recs)
    for rnd in range(3):
        for i in rng.sample(range(n), n // 3):
            recs[i] = record(rng, n * (rnd + 1) + i)
        gone = rng.sample(range(n), n // 6)
        for i in sorted(gone, reverse=True):
            del recs[i]
        recs.extend(record(rng, n * 10 + rnd * n + k) for k in range(len(gone)))
        s = json.dumps(recs, separators=(",", ":"))
        print("churn", rnd, len(recs), len(s), crc(s))


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    rng = random.Random(20240611)
    recs = phase_records(rng, n)
    phase_json(recs)
    phase_index(recs)
    phase_text(recs)
    phase_graph(rng, n)
    phase_churn(rng, recs)
    maps = os.environ.get("XBENCH_MAPS")
    if maps:
        with open("/proc/self/maps") as f, open(maps, "w") as out:
            out.writelines(line for line in f if " r-xp " in line)


if __name__ == "__main__":
    main()
