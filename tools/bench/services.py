#!/usr/bin/env python3
"""services.py: steady RSS of two real Debian services, per allocator and THP mode.

What: issue 18 ("small services: no bigger than glibc under any huge-page
mode") asks that a small, long-running service preloaded with xalloc be no
bigger than the same service on glibc's malloc, whatever the system-wide
transparent-huge-page setting is. The synthetic "small service" workload in
run.py only models that; this script measures two real services from Debian:

- ovsdb-server (openvswitch-switch), idle: a fresh database created from
  vswitch.ovsschema, the server started in the foreground, left alone for a
  few seconds, then its Rss and AnonHugePages read from
  /proc/PID/smaps_rollup (summed page by page, exact; VmRSS is a per-CPU
  cached counter that can be off by a few hundred kB).
- searchd (sphinxsearch 2.2), after a query load: a deterministic corpus
  (seeded RNG, Zipf-like pseudo-word vocabulary) is indexed once by
  `indexer`; for every run a fresh searchd serves 3 client threads that send
  full-text SphinxQL queries over a small MySQL-4.1 protocol client written
  here; after the load and a short pause, Rss/AnonHugePages are read the
  same way. Every query must answer without an ERR packet, most must return
  rows, and a checksum of every returned row must be the same under every
  allocator (the same index and queries give the same answers), or the run
  fails.

Each service runs under glibc (no preload), xalloc (--xalloc), jemalloc,
mimalloc and tcmalloc (LD_PRELOAD), with allocator-tuning variables removed
from its environment, and a run whose preloaded library is not mapped in the
service fails. This is repeated under the THP modes always, madvise and never
written to /sys/kernel/mm/transparent_hugepage/enabled (root only; the
original mode is always restored, and /tmp/thp.lock is held with an
exclusive flock for the whole measurement since other tests switch the mode
too). Allocators are interleaved inside each repetition; the tables show
medians, with the issue-18 bound max(glibc + 1 MiB, glibc * 1.05).

Why smaps_rollup after a pause, not a peak: the issue is about what a small
service costs while it sits there, which is what a machine running hundreds
of them pays for.

Usage:
  python3 tools/bench/services.py --quick                # smoke run, current THP mode
  python3 tools/bench/services.py --out /tmp/svc         # full: 3 modes x 3 reps
  python3 tools/bench/services.py --services ovsdb --reps 5 --modes never,always
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
import os
import random
import re
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time

from run import proc_alive  # tools/bench/run.py: the benchmark runner beside this script

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LIBDIR = "/usr/lib/x86_64-linux-gnu"
ALLOCATORS = [  # column order
    ("glibc", None),
    ("xalloc", "XALLOC"),  # path from --xalloc
    ("jemalloc", f"{LIBDIR}/libjemalloc.so.2"),
    ("mimalloc", f"{LIBDIR}/libmimalloc.so.2"),
    ("tcmalloc", f"{LIBDIR}/libtcmalloc_minimal.so.4"),
]
TUNING_VARS = {"LD_PRELOAD", "XALLOC_CONF", "MALLOC_CONF", "GLIBC_TUNABLES"}
TUNING_PREFIXES = ("MIMALLOC_", "TCMALLOC_")
THP_FILE = "/sys/kernel/mm/transparent_hugepage/enabled"
THP_DEFRAG = "/sys/kernel/mm/transparent_hugepage/defrag"
THP_LOCK = "/tmp/thp.lock"
MODES = ["always", "madvise", "never"]

OVSDB_SERVER = "/usr/sbin/ovsdb-server"
OVSDB_TOOL = "/usr/bin/ovsdb-tool"
OVS_SCHEMA = "/usr/share/openvswitch/vswitch.ovsschema"
SEARCHD = "/usr/bin/searchd"
INDEXER = "/usr/bin/indexer"
# The service model of make bench and tests/policy: 32 threads, sparse frees, parked.
MEMPHASE = os.path.join(REPO, "build/bench/memphase")

MIN_ROWS_FRACTION = 0.5  # a searchd run where fewer queries return rows is an error


class RunError(Exception):
    pass


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- processes

def base_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in TUNING_VARS and not k.startswith(TUNING_PREFIXES)}
    env["LC_ALL"] = "C"
    return env


def alloc_env(lib: str | None) -> dict[str, str]:
    env = base_env()
    if lib:
        env["LD_PRELOAD"] = lib
    return env


def smaps_rollup(pid: int) -> dict[str, int]:
    """Rss, AnonHugePages, ... in kB from /proc/PID/smaps_rollup."""
    out = {}
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            k, _, v = line.partition(":")
            parts = v.split()
            if len(parts) == 2 and parts[1] == "kB":
                out[k] = int(parts[0])
    if "Rss" not in out:
        raise RunError(f"no Rss in /proc/{pid}/smaps_rollup")
    return out


def proc_status_kb(pid: int, key: str) -> int | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def mapped_libs(pid: int) -> set[str]:
    libs = set()
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            parts = line.split(None, 5)
            if len(parts) == 6 and parts[5].startswith("/"):
                libs.add(parts[5].strip())
    return libs


def check_preload(pid: int, name: str, lib: str | None, all_libs: dict[str, str]) -> None:
    """The preloaded library must be mapped; under glibc none of the others may be."""
    maps = mapped_libs(pid)
    real = {os.path.realpath(m) for m in maps} | maps
    if lib:
        if lib not in real and os.path.realpath(lib) not in real:
            raise RunError(f"{name}: preload not in effect ({lib} not in /proc/{pid}/maps)")
    else:
        other = [p for p in all_libs.values() if p in real or os.path.realpath(p) in real]
        if other:
            raise RunError(f"glibc run has an allocator mapped: {', '.join(other)}")


def stop(proc: subprocess.Popen, grace: float = 10.0) -> None:
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)


def tail(path: str, n: int = 15) -> str:
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-n:])
    except OSError:
        return ""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---------------------------------------------------------------- THP mode

def thp_mode() -> str | None:
    try:
        with open(THP_FILE) as f:
            m = re.search(r"\[(\w+)\]", f.read())
            return m.group(1) if m else None
    except OSError:
        return None


def thp_set(mode: str) -> None:
    with open(THP_FILE, "w") as f:
        f.write(mode)
    got = thp_mode()
    if got != mode:
        raise OSError(f"wrote {mode!r} to {THP_FILE} but it reads {got!r}")


def thp_writable() -> str | None:
    """None if the mode can be switched, else why not (tested by writing the current mode back)."""
    cur = thp_mode()
    if cur is None:
        return f"{THP_FILE} is not readable"
    try:
        thp_set(cur)
    except OSError as e:
        return f"cannot write {THP_FILE}: {e}"
    return None


def take_thp_lock():
    """Exclusive flock on THP_LOCK, held until the returned file is closed
    (other tests on the machine switch the THP mode under the same lock)."""
    try:
        f = open(THP_LOCK, "a+")
    except OSError:
        try:
            f = open(THP_LOCK)  # flock works on a read-only descriptor too
        except OSError as e:
            log(f"WARNING cannot open {THP_LOCK} ({e}): measuring without the THP lock")
            return None
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        log(f"waiting for the exclusive lock on {THP_LOCK} (another test is switching THP)")
        fcntl.flock(f, fcntl.LOCK_EX)
    return f


# ---------------------------------------------------------------- MySQL 4.1 client

CLIENT_LONG_PASSWORD = 0x1
CLIENT_PROTOCOL_41 = 0x200
CLIENT_TRANSACTIONS = 0x2000
CLIENT_SECURE_CONNECTION = 0x8000


class MySQLError(RunError):
    pass


class MySQL:
    """The least of the MySQL client/server protocol 4.1 that SphinxQL needs:
    greeting, handshake response with an empty user and password, COM_QUERY,
    text result sets; an ERR packet raises MySQLError."""

    def __init__(self, port: int, timeout: float = 60.0):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.buf = b""
        self.seq = 0
        greet = self.read_packet()
        if greet[:1] == b"\xff":
            raise MySQLError(f"server refused the connection: {self.err_text(greet)}")
        if greet[0] != 10:
            raise MySQLError(f"unexpected protocol version {greet[0]} in the greeting")
        self.server_version = greet[1:greet.index(b"\0", 1)].decode(errors="replace")
        caps = CLIENT_LONG_PASSWORD | CLIENT_PROTOCOL_41 | CLIENT_TRANSACTIONS | CLIENT_SECURE_CONNECTION
        resp = (struct.pack("<IIB", caps, 1 << 24, 33) + b"\0" * 23
                + b"\0"        # user "" (NUL-terminated)
                + b"\0")       # auth response: length 0
        self.write_packet(resp)
        ok = self.read_packet()
        if ok[:1] == b"\xff":
            raise MySQLError(f"handshake refused: {self.err_text(ok)}")
        if ok[:1] != b"\0":
            raise MySQLError(f"handshake: expected OK, got {ok[:16]!r}")

    def close(self) -> None:
        try:
            self.seq = 0
            self.write_packet(b"\x01")  # COM_QUIT
        except OSError:
            pass
        self.sock.close()

    def _recv(self, n: int) -> bytes:
        while len(self.buf) < n:
            chunk = self.sock.recv(max(65536, n - len(self.buf)))
            if not chunk:
                raise MySQLError("connection closed by the server")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def read_packet(self) -> bytes:
        payload = b""
        while True:
            hdr = self._recv(4)
            length = hdr[0] | hdr[1] << 8 | hdr[2] << 16
            self.seq = (hdr[3] + 1) & 0xff
            payload += self._recv(length)
            if length < 0xffffff:
                return payload

    def write_packet(self, payload: bytes) -> None:
        self.sock.sendall(struct.pack("<I", len(payload))[:3] + bytes([self.seq]) + payload)
        self.seq = (self.seq + 1) & 0xff

    @staticmethod
    def err_text(p: bytes) -> str:
        code = struct.unpack_from("<H", p, 1)[0]
        msg = p[3:]
        if msg[:1] == b"#":
            msg = msg[6:]
        return f"ERR {code}: {msg.decode(errors='replace')}"

    @staticmethod
    def lenenc(p: bytes, i: int) -> tuple[int | None, int]:
        c = p[i]
        if c < 0xfb:
            return c, i + 1
        if c == 0xfb:
            return None, i + 1
        if c == 0xfc:
            return struct.unpack_from("<H", p, i + 1)[0], i + 3
        if c == 0xfd:
            return int.from_bytes(p[i + 1:i + 4], "little"), i + 4
        return struct.unpack_from("<Q", p, i + 1)[0], i + 9

    @staticmethod
    def is_eof(p: bytes) -> bool:
        return p[:1] == b"\xfe" and len(p) < 9

    def query(self, sql: str) -> tuple[list[str], list[tuple]]:
        self.seq = 0
        self.write_packet(b"\x03" + sql.encode())
        first = self.read_packet()
        if first[:1] == b"\xff":
            raise MySQLError(f"{self.err_text(first)} (query: {sql})")
        if first[:1] == b"\0":
            return [], []  # OK: no result set
        ncols, _ = self.lenenc(first, 0)
        cols = []
        for _ in range(ncols or 0):
            p = self.read_packet()
            i = 0
            fields = []
            for _ in range(6):  # catalog, schema, table, org_table, name, org_name
                n, i = self.lenenc(p, i)
                fields.append(p[i:i + (n or 0)])
                i += n or 0
            cols.append(fields[4].decode(errors="replace"))
        p = self.read_packet()
        if not self.is_eof(p):
            raise MySQLError(f"expected EOF after the column definitions, got {p[:16]!r}")
        rows = []
        while True:
            p = self.read_packet()
            if self.is_eof(p):
                break
            if p[:1] == b"\xff":
                raise MySQLError(f"{self.err_text(p)} (in the rows of: {sql})")
            i = 0
            row = []
            for _ in range(ncols or 0):
                n, i = self.lenenc(p, i)
                if n is None:
                    row.append(None)
                else:
                    row.append(p[i:i + n].decode(errors="replace"))
                    i += n
            rows.append(tuple(row))
        return cols, rows


# ---------------------------------------------------------------- corpus and queries

def vocabulary(n: int, rng: random.Random) -> list[str]:
    """n distinct pronounceable pseudo-words (latin letters only: one token each)."""
    cons = "bcdfghjklmnprstvwz"
    vows = "aeiou"
    words: list[str] = []
    seen = set()
    while len(words) < n:
        w = "".join(rng.choice(cons) + rng.choice(vows) for _ in range(rng.randint(2, 4)))
        if rng.random() < 0.3:
            w += rng.choice(cons)
        if w not in seen:
            seen.add(w)
            words.append(w)
    return words


def zipf_cum(n: int, s: float = 1.05) -> list[float]:
    cum, acc = [], 0.0
    for r in range(1, n + 1):
        acc += 1.0 / r ** s
        cum.append(acc)
    return cum


def write_corpus(path: str, docs: int, vocab: list[str], seed: int) -> None:
    """TSV: id, title (2-6 words), body (30-60 words), cat (0-49), year (1990-2024)."""
    rng = random.Random(seed)
    cum = zipf_cum(len(vocab))
    with open(path, "w") as f:
        for doc_id in range(1, docs + 1):
            title = " ".join(rng.choices(vocab, cum_weights=cum, k=rng.randint(2, 6)))
            body = " ".join(rng.choices(vocab, cum_weights=cum, k=rng.randint(30, 60)))
            f.write(f"{doc_id}\t{title}\t{body}\t{rng.randrange(50)}\t{1990 + rng.randrange(35)}\n")


def make_queries(vocab: list[str], n: int, seed: int) -> list[str]:
    """n SphinxQL queries: 1-3 words (ranks 10-1,500, Zipf-weighted: they match
    hundreds to thousands of documents), LIMIT 20, some sorted or grouped on an
    attribute, a few OR queries. Orders are total, so results are deterministic."""
    rng = random.Random(seed)
    pool = vocab[10:1500]
    cum = zipf_cum(len(pool), 0.8)
    out = []
    for _ in range(n):
        words = rng.choices(pool, cum_weights=cum, k=rng.choice((1, 1, 2, 2, 3)))
        kind = rng.random()
        if kind < 0.5:
            q = (f"SELECT id, cat, year, WEIGHT() AS w FROM idx WHERE MATCH('{' '.join(words)}') "
                 f"ORDER BY w DESC, id ASC LIMIT 20")
        elif kind < 0.7:
            q = (f"SELECT id, cat, year FROM idx WHERE MATCH('{' '.join(words)}') "
                 f"ORDER BY year DESC, id ASC LIMIT 20")
        elif kind < 0.9:
            q = (f"SELECT cat, COUNT(*) AS c FROM idx WHERE MATCH('{' '.join(words)}') "
                 f"GROUP BY cat ORDER BY cat ASC LIMIT 20")
        else:
            q = (f"SELECT id, year FROM idx WHERE MATCH('{' | '.join(words + [rng.choice(pool)])}') "
                 f"ORDER BY id ASC LIMIT 20")
        out.append(q)
    return out


# ---------------------------------------------------------------- services

class Bench:
    def __init__(self, args: argparse.Namespace, allocs: list[tuple[str, str | None]], tmp: str):
        self.args = args
        self.allocs = allocs
        self.all_libs = {n: l for n, l in allocs if l}
        self.tmp = tmp
        self.searchd_ready = False
        self.queries: list[list[str]] = []
        self.ref_checksum: str | None = None

    # ---------------- ovsdb-server

    def run_ovsdb(self, name: str, lib: str | None, tag: str) -> dict:
        d = os.path.join(self.tmp, f"ovs-{tag}")
        os.makedirs(d)
        db = os.path.join(d, "conf.db")
        r = subprocess.run([OVSDB_TOOL, "create", db, OVS_SCHEMA], env=base_env(),
                           capture_output=True, text=True, timeout=60)
        if r.returncode:
            raise RunError(f"ovsdb-tool create failed: {r.stderr.strip()}")
        sock = os.path.join(d, "db.sock")
        argv = [OVSDB_SERVER, db, f"--remote=punix:{sock}", f"--unixctl={d}/ctl",
                "--no-chdir", f"--log-file={d}/log"]
        errf = open(os.path.join(d, "stderr"), "w")
        proc = subprocess.Popen(argv, env=alloc_env(lib), stdin=subprocess.DEVNULL,
                                stdout=errf, stderr=errf, cwd=d)
        t0 = time.monotonic()
        try:
            while not os.path.exists(sock):
                if proc.poll() is not None:
                    raise RunError(f"ovsdb-server exited with {proc.returncode}: "
                                   f"{tail(os.path.join(d, 'stderr'))}{tail(os.path.join(d, 'log'))}")
                if time.monotonic() - t0 > 30:
                    raise RunError("ovsdb-server did not create its socket in 30 s")
                time.sleep(0.05)
            time.sleep(max(0.0, self.args.ovsdb_settle - (time.monotonic() - t0)))
            if proc.poll() is not None:
                raise RunError(f"ovsdb-server exited with {proc.returncode}: {tail(os.path.join(d, 'log'))}")
            sm = smaps_rollup(proc.pid)
            hwm = proc_status_kb(proc.pid, "VmHWM")
            check_preload(proc.pid, name, lib, self.all_libs)
            dbs = ovsdb_list_dbs(sock)  # after the reading: it proves the server works
            if "Open_vSwitch" not in dbs:
                raise RunError(f"ovsdb-server list_dbs answered {dbs!r}")
            return {"rss_kb": sm["Rss"], "anon_huge_kb": sm.get("AnonHugePages", 0),
                    "anon_kb": sm.get("Anonymous", 0), "hwm_kb": hwm,
                    "settle_s": round(time.monotonic() - t0, 2)}
        finally:
            stop(proc)
            errf.close()

    # ---------------- the service model (tools/bench/src/memphase.c)

    def run_model(self, name: str, lib: str | None, tag: str) -> dict:
        argv = [self.args.memphase, "mode=service", "threads=32", "pause_ms=1000"]
        r = subprocess.run(argv, env=alloc_env(lib), capture_output=True, text=True, timeout=120)
        m = re.search(r"^RESULT (.*)$", r.stdout, re.M)
        if r.returncode or not m:
            raise RunError(f"memphase exited with {r.returncode}: {r.stderr.strip()[-300:]}")
        kv = dict(x.split("=", 1) for x in m.group(1).split() if "=" in x)
        # The workload names the allocator it found mapped (libc.so.6 for glibc).
        want = os.path.basename(lib) if lib else "libc.so.6"
        if kv.get("alloc") != want:
            raise RunError(f"preload not in effect: the model reports alloc={kv.get('alloc')}, "
                           f"expected {want}")
        return {"rss_kb": int(kv["rss_parked_kb"]), "anon_huge_kb": int(kv["anon_huge_kb"]),
                "hwm_kb": int(kv["rss_peak_kb"])}

    # ---------------- searchd

    def prepare_searchd(self) -> None:
        a = self.args
        d = os.path.join(self.tmp, "sphinx")
        os.makedirs(d)
        t0 = time.monotonic()
        rng = random.Random(a.seed)
        vocab = vocabulary(a.vocab, rng)
        tsv = os.path.join(d, "docs.tsv")
        write_corpus(tsv, a.docs, vocab, a.seed + 1)
        log(f"  corpus: {a.docs:,} documents, {os.path.getsize(tsv) / 1048576:.1f} MiB "
            f"({time.monotonic() - t0:.1f} s)")
        self.sphinx_dir = d
        self.write_sphinx_conf(port=0)
        t1 = time.monotonic()
        r = subprocess.run([INDEXER, "--config", self.sphinx_conf, "--all"], env=base_env(),
                           capture_output=True, text=True, timeout=1200, cwd=d)
        if r.returncode or "ERROR" in r.stdout:
            raise RunError(f"indexer failed ({r.returncode}):\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
        m = re.search(r"total (\d+) docs", r.stdout)
        if not m or int(m.group(1)) != a.docs:
            raise RunError(f"indexer did not index {a.docs} documents:\n{r.stdout[-2000:]}")
        log(f"  indexer: {m.group(1)} docs ({time.monotonic() - t1:.1f} s)")
        self.queries = [make_queries(vocab, a.queries, a.seed + 100 + t) for t in range(a.threads)]
        self.searchd_ready = True

    def write_sphinx_conf(self, port: int, run_dir: str | None = None) -> str:
        d = self.sphinx_dir
        rd = run_dir or d
        conf = f"""
source src
{{
    type = tsvpipe
    tsvpipe_command = cat {d}/docs.tsv
    tsvpipe_field = title
    tsvpipe_field = body
    tsvpipe_attr_uint = cat
    tsvpipe_attr_uint = year
}}

index idx
{{
    source = src
    path = {d}/idx
    docinfo = extern
}}

indexer
{{
    mem_limit = 256M
}}

searchd
{{
    listen = 127.0.0.1:{port or 9306}:mysql41
    log = {rd}/searchd.log
    query_log = {rd}/query.log
    pid_file = {rd}/searchd.pid
    workers = threads
    watchdog = 0
    binlog_path =
    read_timeout = 30
    max_children = 0
    seamless_rotate = 0
}}
"""
        path = os.path.join(rd, "sphinx.conf")
        with open(path, "w") as f:
            f.write(conf)
        if run_dir is None:
            self.sphinx_conf = path
        return path

    def run_searchd(self, name: str, lib: str | None, tag: str) -> dict:
        a = self.args
        d = os.path.join(self.tmp, f"searchd-{tag}")
        os.makedirs(d)
        port = free_port()
        conf = self.write_sphinx_conf(port, d)
        outf = open(os.path.join(d, "stdout"), "w")
        proc = subprocess.Popen([SEARCHD, "--config", conf, "--nodetach"], env=alloc_env(lib),
                                stdin=subprocess.DEVNULL, stdout=outf, stderr=subprocess.STDOUT,
                                cwd=d)

        def died() -> RunError:
            return RunError(f"searchd exited with {proc.returncode}:\n"
                            f"{tail(os.path.join(d, 'stdout'))}{tail(os.path.join(d, 'searchd.log'))}")
        try:
            t0 = time.monotonic()
            while True:  # wait until it answers a query
                if proc.poll() is not None:
                    raise died()
                try:
                    c = MySQL(port, timeout=5)
                    c.query("SELECT id FROM idx LIMIT 1")
                    c.close()
                    break
                except MySQLError as e:
                    if "closed" not in str(e) and "refused" not in str(e):
                        raise
                except OSError:
                    pass
                if time.monotonic() - t0 > 60:
                    raise RunError("searchd did not answer within 60 s")
                time.sleep(0.1)
            start_s = time.monotonic() - t0
            check_preload(proc.pid, name, lib, self.all_libs)
            sm0 = smaps_rollup(proc.pid)

            results: list[dict | None] = [None] * a.threads
            errors: list[str] = []

            def client(t: int) -> None:
                try:
                    c = MySQL(port)
                    h = hashlib.sha256()
                    with_rows = nrows = 0
                    lat = 0.0
                    for i, q in enumerate(self.queries[t]):
                        q0 = time.perf_counter()
                        _, rows = c.query(q)
                        lat += time.perf_counter() - q0
                        nrows += len(rows)
                        with_rows += bool(rows)
                        h.update(f"{t}:{i}:{rows!r}\n".encode())
                    c.close()
                    results[t] = {"digest": h.hexdigest(), "rows": nrows, "with_rows": with_rows,
                                  "lat_s": lat, "n": len(self.queries[t])}
                except Exception as e:  # noqa: BLE001 - reported as the run's failure
                    errors.append(f"client {t}: {e}")

            peak = {"rss": sm0["Rss"], "ahp": sm0.get("AnonHugePages", 0)}
            done = threading.Event()

            def sampler() -> None:
                while not done.wait(a.sample_interval):
                    try:
                        s = smaps_rollup(proc.pid)
                    except (OSError, RunError):
                        return
                    peak["rss"] = max(peak["rss"], s["Rss"])
                    peak["ahp"] = max(peak["ahp"], s.get("AnonHugePages", 0))

            ths = [threading.Thread(target=client, args=(t,)) for t in range(a.threads)]
            smp = threading.Thread(target=sampler)
            l0 = time.monotonic()
            smp.start()
            for th in ths:
                th.start()
            for th in ths:
                th.join()
            wall = time.monotonic() - l0
            done.set()
            smp.join()
            if errors:
                raise RunError("; ".join(errors) + ("" if proc.poll() is None else "\n" + str(died())))
            if proc.poll() is not None:
                raise died()
            time.sleep(a.searchd_settle)
            if proc.poll() is not None:
                raise died()
            sm = smaps_rollup(proc.pid)
            hwm = proc_status_kb(proc.pid, "VmHWM")
            res = [r for r in results if r]
            total_q = sum(r["n"] for r in res)
            with_rows = sum(r["with_rows"] for r in res)
            if sum(r["rows"] for r in res) == 0 or with_rows < MIN_ROWS_FRACTION * total_q:
                raise RunError(f"queries returned nothing: {with_rows} of {total_q} returned rows")
            checksum = hashlib.sha256("".join(r["digest"] for r in res).encode()).hexdigest()[:16]
            return {"rss_kb": sm["Rss"], "anon_huge_kb": sm.get("AnonHugePages", 0),
                    "anon_kb": sm.get("Anonymous", 0), "hwm_kb": hwm,
                    "rss_idle_before_kb": sm0["Rss"],
                    "peak_sampled_kb": peak["rss"], "peak_anon_huge_kb": peak["ahp"],
                    "queries": total_q, "queries_with_rows": with_rows,
                    "rows": sum(r["rows"] for r in res),
                    "qps": round(total_q / wall, 1),
                    "mean_ms": round(1000 * sum(r["lat_s"] for r in res) / total_q, 3),
                    "load_s": round(wall, 2), "start_s": round(start_s, 2),
                    "checksum": checksum}
        finally:
            stop(proc)
            outf.close()


def ovsdb_list_dbs(sock_path: str) -> list:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(10)
        s.connect(sock_path)
        s.sendall(b'{"method":"list_dbs","params":[],"id":0}')
        buf = b""
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            buf += chunk
            try:
                msg = json.loads(buf)
                return msg.get("result") or []
            except ValueError:
                continue
    raise RunError(f"ovsdb-server list_dbs: no answer ({buf[:200]!r})")


# ---------------------------------------------------------------- report

def mib(kb: float) -> str:
    return f"{kb / 1024:.2f}"


def med(runs: list[dict], key: str) -> float | None:
    xs = [r[key] for r in runs if r.get("ok") and r.get(key) is not None]
    return statistics.median(xs) if xs else None


def report(runs: list[dict], services: list[str], modes: list[str], alloc_names: list[str],
           meta: dict) -> str:
    L = [f"# Service RSS per allocator and THP mode ({meta['date']})", "",
         f"Machine: {meta['machine']}; THP defrag=`{meta['thp_defrag']}`, original enabled="
         f"`{meta['thp_original']}`. {meta['reps']} repetition(s), allocators interleaved, medians. "
         f"Cells: Rss MiB from /proc/PID/smaps_rollup (AnonHugePages MiB in parentheses when "
         f"non-zero). Bound (issue 18): xalloc <= max(glibc + 1 MiB, glibc * 1.05).", ""]
    if meta.get("xalloc"):
        x = meta["xalloc"]
        L += [f"xalloc: `{x['path']}` sha256 {x['sha256']}, built {x['mtime']}.", ""]
    if meta.get("thp_note"):
        L += [f"Note: {meta['thp_note']}", ""]
    for svc in services:
        srun = [r for r in runs if r["service"] == svc]
        if not srun:
            continue
        title = {"model": ("service model, parked (tools/bench/src/memphase.c mode=service: 32 threads, "
                           "about 13 MB live after sparse frees; VmRSS while parked)"),
                 "ovsdb": f"ovsdb-server idle ({meta['ovsdb_settle']:.0f} s after start, fresh vswitch database)",
                 "searchd": (f"searchd after the query load ({meta['docs']:,} documents, "
                             f"{meta['threads']} clients x {meta['queries']:,} queries, "
                             f"read {meta['searchd_settle']:.0f} s after the load)")}[svc]
        L += [f"## {title}", ""]
        L.append("| THP | " + " | ".join(alloc_names)
                 + " | xalloc - glibc (kB) | bound max(glibc+1 MiB, glibc*1.05) | met? | best other anchor |")
        L.append("|---" * (len(alloc_names) + 5) + "|")
        xr = {}
        for mode in modes:
            cells, rss = [], {}
            for a in alloc_names:
                rs = [r for r in srun if r["mode"] == mode and r["allocator"] == a]
                if not rs:
                    cells.append("–")
                    continue
                v, h = med(rs, "rss_kb"), med(rs, "anon_huge_kb")
                nok = sum(1 for r in rs if r.get("ok"))
                if v is None:
                    cells.append("FAIL")
                    continue
                rss[a] = v
                c = mib(v) + (f" ({mib(h)})" if h else "")
                if nok < len(rs):
                    c += f" [{nok}/{len(rs)} ok]"
                cells.append(c)
            g, x = rss.get("glibc"), rss.get("xalloc")
            if x is not None:
                xr[mode] = x
            others = {a: v for a, v in rss.items() if a != "xalloc"}
            best = min(others, key=others.get) if others else None
            if g is not None and x is not None:
                bound = max(g + 1024, g * 1.05)
                diff = f"{x - g:+,.0f}"
                bnd = mib(bound)
                met = "yes" if x <= bound else "NO"
            else:
                diff = bnd = met = "–"
            anchor = (f"{best} {mib(others[best])}" + (f" (xalloc {x / others[best]:.3f}x)" if x else "")
                      ) if best else "–"
            L.append(f"| {mode} | " + " | ".join(cells) + f" | {diff} | {bnd} | {met} | {anchor} |")
        L.append("")
        if "always" in xr and "never" in xr:
            L.append(f"xalloc RSS always/never: {mib(xr['always'])} / {mib(xr['never'])} MiB "
                     f"= {xr['always'] / xr['never']:.3f}x")
        else:
            L.append("xalloc RSS always/never: – (not both modes measured)")
        L.append("")
        if svc == "searchd":
            L += ["Load figures (medians): queries/s · mean latency ms · peak Rss MiB (sampled "
                  "every %.2f s during the load) · VmHWM MiB" % meta["sample_interval"], ""]
            L.append("| THP | " + " | ".join(alloc_names) + " |")
            L.append("|---" * (len(alloc_names) + 1) + "|")
            for mode in modes:
                cells = []
                for a in alloc_names:
                    rs = [r for r in srun if r["mode"] == mode and r["allocator"] == a]
                    q, l, p, hw = (med(rs, k) for k in ("qps", "mean_ms", "peak_sampled_kb", "hwm_kb"))
                    cells.append("FAIL" if q is None else f"{q:.0f} · {l:.2f} · {mib(p)} · {mib(hw)}")
                L.append(f"| {mode} | " + " | ".join(cells) + " |")
            sums = sorted({r["checksum"] for r in srun if r.get("checksum")})
            L += ["", f"Result checksums: {', '.join(sums) or '–'} "
                      f"({'identical in every run' if len(sums) == 1 else 'MISMATCH'})", ""]
    fails = [r for r in runs if not r.get("ok")]
    if fails:
        L += ["## Failed runs", ""]
        for r in fails:
            L.append(f"- {r['service']} {r['mode']} rep {r['rep']} {r['allocator']}: "
                     f"{r.get('error', '?').splitlines()[0] if r.get('error') else '?'}")
        L.append("")
    L.append(f"Command: `{meta['command']}` ({meta['elapsed_s']:.0f} s)")
    return "\n".join(L) + "\n"


# ---------------------------------------------------------------- main

def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--xalloc", default=os.path.join(REPO, "build/libxalloc.so.1"),
                    help="xalloc library (default: build/libxalloc.so.1 of this repository)")
    ap.add_argument("--services", default="ovsdb,searchd,model",
                    help="comma list of ovsdb,searchd,model (the 32-thread service model)")
    ap.add_argument("--memphase", default=MEMPHASE, help="the model's program (make bench-build)")
    ap.add_argument("--allocators", default=",".join(n for n, _ in ALLOCATORS),
                    help="comma list (default: all five)")
    ap.add_argument("--modes", default=",".join(MODES),
                    help="THP modes to switch through (default always,madvise,never)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", help="write DIR/services.md and DIR/services.json")
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: 20,000 documents, 150 queries per client, 1 rep, current THP mode")
    ap.add_argument("--docs", type=int, default=None, help="documents in the corpus (default 200,000)")
    ap.add_argument("--vocab", type=int, default=4000)
    ap.add_argument("--queries", type=int, default=None, help="queries per client (default 1,500)")
    ap.add_argument("--threads", type=int, default=3, help="searchd client threads")
    ap.add_argument("--ovsdb-settle", type=float, default=6.0, help="seconds from start to the reading")
    ap.add_argument("--searchd-settle", type=float, default=2.0,
                    help="seconds between the end of the load and the reading")
    ap.add_argument("--sample-interval", type=float, default=0.25)
    ap.add_argument("--seed", type=int, default=18)
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = ap.parse_args()
    if args.quick:
        args.docs = args.docs or 20_000
        args.queries = args.queries or 150
        args.reps = 1
        args.ovsdb_settle = min(args.ovsdb_settle, 3.0)
    args.docs = args.docs or 200_000
    args.queries = args.queries or 1500
    t_start = time.monotonic()
    # SIGTERM unwinds like ^C, so the finally below restores the THP mode
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    xlib = os.path.abspath(args.xalloc)
    want = [a.strip() for a in args.allocators.split(",") if a.strip()]
    unknown = set(want) - {n for n, _ in ALLOCATORS}
    if unknown:
        ap.error(f"unknown allocator(s): {', '.join(sorted(unknown))}")
    allocs = []
    for name, lib in ALLOCATORS:
        if name not in want:
            continue
        if lib == "XALLOC":
            lib = xlib
            if not os.path.exists(lib):
                log(f"ERROR xalloc library {lib} not found (build it with make, or pass --xalloc)")
                return 2
        elif lib and not os.path.exists(lib):
            log(f"SKIP allocator {name}: {lib} not installed")
            continue
        allocs.append((name, lib))
    alloc_names = [n for n, _ in allocs]

    services = []
    for s in [s.strip() for s in args.services.split(",") if s.strip()]:
        if s == "ovsdb":
            missing = [p for p in (OVSDB_SERVER, OVSDB_TOOL, OVS_SCHEMA) if not os.path.exists(p)]
            pkg = "apt-get install openvswitch-switch"
        elif s == "searchd":
            missing = [p for p in (SEARCHD, INDEXER) if not os.path.exists(p)]
            pkg = "apt-get install sphinxsearch"
        elif s == "model":
            missing = [p for p in (args.memphase,) if not os.path.exists(p)]
            pkg = "make bench-build"
        else:
            ap.error(f"unknown service {s!r} (ovsdb, searchd, model)")
        if missing:
            print(f"SKIP {s}: {', '.join(missing)} not there ({pkg})", flush=True)
        else:
            services.append(s)

    runs: list[dict] = []
    failed = False
    tmp = tempfile.mkdtemp(prefix="xalloc-services-")
    # Preload a snapshot of the xalloc library: a rebuild of build/ during the
    # measurement must not mix two versions in one table.
    xinfo = {}
    for i, (name, lib) in enumerate(allocs):
        if name == "xalloc":
            with open(lib, "rb") as f:
                data = f.read()
            snap = os.path.join(tmp, "xalloc", os.path.basename(lib))
            os.makedirs(os.path.dirname(snap))
            with open(snap, "wb") as f:
                f.write(data)
            xinfo = {"path": lib, "sha256": hashlib.sha256(data).hexdigest()[:16],
                     "mtime": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(os.path.getmtime(lib))),
                     "snapshot": snap}
            allocs[i] = (name, snap)
            log(f"xalloc: {lib} (sha256 {xinfo['sha256']}, built {xinfo['mtime']}), preloaded from a copy")
    thp_original = thp_mode()
    thp_note = ""
    meta_modes: list[str] = []
    lockf = None
    try:
        if services:
            lockf = take_thp_lock()
            thp_original = thp_mode()
            modes = [m.strip() for m in args.modes.split(",") if m.strip()]
            bad = set(modes) - set(MODES)
            if bad:
                ap.error(f"unknown THP mode(s): {', '.join(sorted(bad))}")
            switch = True
            if args.quick:
                switch = False
                thp_note = f"--quick: measured in the current THP mode ({thp_original}) only"
            elif thp_original is None:
                switch = False
                thp_note = f"{THP_FILE} not readable: THP mode unknown, not switched"
            else:
                why = thp_writable()
                if why:
                    switch = False
                    thp_note = (f"{why}; THP modes NOT switched (needs root), measured in the "
                                f"current mode ({thp_original}) only")
                    print(f"NOTE {thp_note}", flush=True)
            if not switch:
                modes = [thp_original or "unknown"]
            meta_modes = modes

            bench = Bench(args, allocs, tmp)
            if "searchd" in services:
                log("searchd: preparing the corpus and the index")
                try:
                    bench.prepare_searchd()
                except (RunError, OSError, subprocess.SubprocessError) as e:
                    print(f"FAIL searchd preparation: {e}", flush=True)
                    failed = True
                    services.remove("searchd")

            for mode in modes:
                if switch:
                    thp_set(mode)
                    log(f"THP enabled={mode}")
                for rep in range(1, args.reps + 1):
                    for svc in services:
                        for name, lib in allocs:
                            tag = f"{mode}-{rep}-{name}"
                            rec = {"service": svc, "mode": mode, "rep": rep, "allocator": name,
                                   "lib": lib}
                            t0 = time.monotonic()
                            try:
                                fn = {"ovsdb": bench.run_ovsdb, "searchd": bench.run_searchd,
                                      "model": bench.run_model}[svc]
                                rec.update(fn(name, lib, tag))
                                rec["ok"] = True
                                if svc == "searchd":
                                    if bench.ref_checksum is None:
                                        bench.ref_checksum = rec["checksum"]
                                    elif rec["checksum"] != bench.ref_checksum:
                                        rec["ok"] = False
                                        rec["error"] = (f"result checksum {rec['checksum']} differs from "
                                                        f"the first run's {bench.ref_checksum}")
                            except (RunError, OSError, subprocess.SubprocessError) as e:
                                rec["ok"] = False
                                rec["error"] = str(e)
                            rec["wall_s"] = round(time.monotonic() - t0, 2)
                            runs.append(rec)
                            if rec["ok"]:
                                extra = (f" qps {rec['qps']:.0f} mean {rec['mean_ms']:.2f} ms"
                                         if svc == "searchd" else "")
                                log(f"  {svc:7} {mode:7} rep {rep} {name:8} Rss {rec['rss_kb']:>7,} kB "
                                    f"AnonHuge {rec['anon_huge_kb']:>6,} kB{extra} ({rec['wall_s']:.1f} s)")
                            else:
                                failed = True
                                print(f"FAIL {svc} {mode} rep {rep} {name}: {rec['error']}", flush=True)
    finally:
        if thp_original and thp_mode() != thp_original:
            try:
                thp_set(thp_original)
                log(f"THP enabled restored to {thp_original}")
            except OSError as e:
                print(f"ERROR could not restore THP mode {thp_original}: {e}", flush=True)
                failed = True
        if lockf:
            lockf.close()  # releases the flock
        if args.keep:
            log(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)

    if not runs:
        print("nothing measured", flush=True)
        return 1 if failed else 0
    try:
        with open(THP_DEFRAG) as f:
            defrag = (re.search(r"\[([\w+]+)\]", f.read()) or [None, "?"])[1]
    except OSError:
        defrag = "n/a"
    meta = {"date": time.strftime("%Y-%m-%d %H:%M"), "command": " ".join([sys.argv[0]] + sys.argv[1:]),
            "machine": f"{os.cpu_count()} CPUs, kernel {os.uname().release}",
            "thp_original": thp_original, "thp_defrag": defrag, "thp_note": thp_note,
            "modes": meta_modes, "reps": args.reps, "docs": args.docs, "vocab": args.vocab,
            "queries": args.queries, "threads": args.threads, "ovsdb_settle": args.ovsdb_settle,
            "searchd_settle": args.searchd_settle, "sample_interval": args.sample_interval,
            "seed": args.seed, "allocators": dict(allocs), "xalloc": xinfo,
            "elapsed_s": time.monotonic() - t_start}
    svcs_done = [s for s in ("model", "ovsdb", "searchd") if any(r["service"] == s for r in runs)]
    md = report(runs, svcs_done, meta_modes, alloc_names, meta)
    print(md, end="", flush=True)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "services.md"), "w") as f:
            f.write(md)
        with open(os.path.join(args.out, "services.json"), "w") as f:
            json.dump({"meta": meta, "runs": runs}, f, indent=1)
        log(f"wrote {args.out}/services.md and services.json")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
