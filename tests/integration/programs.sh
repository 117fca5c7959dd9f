#!/bin/bash
# tests/integration/programs.sh: real programs under LD_PRELOAD=libxalloc.so.1
# (make check-programs). Each program runs the same deterministic workload
# twice, without and with xalloc preloaded; the outputs must be identical
# byte for byte, and each preloaded run must prove xalloc was really in use:
# python3 and perl read their own /proc/self/maps, sqlite3 imports it as a
# table, redis-server's /proc/PID/maps is read while it runs, and for gcc and
# git (which spawn helpers) the dynamic linker's LD_DEBUG=bindings log must
# show malloc of cc1/as and of git bound to libxalloc.so.1.
# Output is TAP. Every run is bounded by `timeout`.
#
# usage: programs.sh LIBXALLOC WORKDIR [TEST...]
#   TEST: python perl sqlite gcc git redis (default: all)
set -u

LIB=$(readlink -f "$1")
W=$2
shift 2
HERE=$(cd "$(dirname "$0")" && pwd)
TESTS=${*:-python perl sqlite gcc git redis}
PY=${PYTHON:-python3}
T=${XT_PROGRAM_TIMEOUT:-300}

rm -rf "$W"
mkdir -p "$W"
W=$(cd "$W" && pwd) # absolute: the runs below change directory
n=0
failures=0

# The environment of the baseline run: no preload at all.
base() { env -u LD_PRELOAD "$@"; }
xa() { env LD_PRELOAD="$LIB" "$@"; }

ok() {
    n=$((n + 1))
    echo "ok $n - $1"
}
not_ok() {
    n=$((n + 1))
    failures=$((failures + 1))
    echo "not ok $n - $1"
    shift
    for f in "$@"; do # diagnostics: tails of the named files
        [ -s "$f" ] && tail -n 15 "$f" | sed "s|^|# $(basename "$f"): |"
    done
    return 0
}

# same NAME: compares $W/NAME.base.out with $W/NAME.xa.out.
same() {
    if cmp -s "$W/$1.base.out" "$W/$1.xa.out" && [ -s "$W/$1.base.out" ]; then
        ok "$1: output identical with and without xalloc ($(wc -c <"$W/$1.base.out") bytes)"
    else
        not_ok "$1: output differs with xalloc" "$W/$1.base.out" "$W/$1.xa.out"
        diff "$W/$1.base.out" "$W/$1.xa.out" | head -n 20 | sed 's/^/# /'
    fi
}

# status NAME RC_BASE RC_XA: both runs must have exited 0.
status() {
    if [ "$2" -eq 0 ] && [ "$3" -eq 0 ]; then
        ok "$1: exit status 0 with and without xalloc"
    else
        not_ok "$1: exit status $2 without xalloc, $3 with" "$W/$1.base.err" "$W/$1.xa.err"
    fi
}

# bound DIR NAME: some process whose executable is NAME (any directory) had malloc
# bound to libxalloc.so.1 (LD_DEBUG=bindings log files under DIR).
bound() {
    grep -qsE "binding file ([^ ]*/)?$2 \[0\] to [^ ]*libxalloc\.so\.1 \[0\]: normal symbol \`malloc'" "$1"/*
}

test_python() {
    timeout "$T" env -u LD_PRELOAD "$PY" "$HERE/workload.py" >"$W/python.base.out" 2>"$W/python.base.err"
    local rb=$?
    timeout "$T" env LD_PRELOAD="$LIB" "$PY" "$HERE/workload.py" >"$W/python.xa.out" 2>"$W/python.xa.err"
    local rx=$?
    status python $rb $rx
    same python
    if grep -qx "xalloc-loaded=True" "$W/python.xa.err" &&
        grep -qx "xalloc-loaded=False" "$W/python.base.err"; then
        ok "python: libxalloc.so.1 mapped r-xp in the preloaded run only"
    else
        not_ok "python: /proc/self/maps does not show xalloc as expected" "$W/python.xa.err"
    fi
}

test_perl() {
    timeout "$T" env -u LD_PRELOAD perl "$HERE/workload.pl" >"$W/perl.base.out" 2>"$W/perl.base.err"
    local rb=$?
    timeout "$T" env LD_PRELOAD="$LIB" perl "$HERE/workload.pl" >"$W/perl.xa.out" 2>"$W/perl.xa.err"
    local rx=$?
    status perl $rb $rx
    same perl
    if grep -qx "xalloc-loaded=True" "$W/perl.xa.err" &&
        grep -qx "xalloc-loaded=False" "$W/perl.base.err"; then
        ok "perl: libxalloc.so.1 mapped r-xp in the preloaded run only"
    else
        not_ok "perl: /proc/self/maps does not show xalloc as expected" "$W/perl.xa.err"
    fi
}

# sqlite_sql MODE: the script; the maps check writes to a side file.
sqlite_sql() {
    cat <<EOF
CREATE TABLE maps(line TEXT);
.mode csv
.import /proc/self/maps maps
.output $W/sqlite.$1.maps
SELECT count(*) FROM maps WHERE line LIKE '%r-xp%libxalloc.so.1%';
.output stdout
.mode list
PRAGMA cache_size = -65536;
BEGIN;
CREATE TABLE t(id INTEGER PRIMARY KEY, grp INTEGER, name TEXT, payload BLOB, score REAL);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 200000)
INSERT INTO t SELECT x, (x * 7919) % 97, printf('name-%08d', (x * 104729) % 200003),
       zeroblob(x % 300), (x % 1000) / 7.0 FROM c;
COMMIT;
CREATE INDEX t_name ON t(name);
CREATE INDEX t_grp_score ON t(grp, score);
SELECT grp, count(*), sum(length(payload)), printf('%.3f', avg(score)), min(name), max(name)
  FROM t GROUP BY grp ORDER BY grp;
SELECT name FROM t WHERE name BETWEEN 'name-00100000' AND 'name-00100100' ORDER BY name;
SELECT count(DISTINCT name), group_concat(id, ' ') FROM (SELECT * FROM t WHERE grp = 13 AND score > 140 ORDER BY id LIMIT 50);
DELETE FROM t WHERE id % 3 = 0;
UPDATE t SET name = name || '-x' WHERE id % 5 = 0;
SELECT count(*), sum(id), max(name) FROM t;
PRAGMA integrity_check;
EOF
}

test_sqlite() {
    sqlite_sql base >"$W/sqlite.base.sql"
    sqlite_sql xa >"$W/sqlite.xa.sql"
    timeout "$T" env -u LD_PRELOAD sqlite3 "$W/sqlite.base.db" <"$W/sqlite.base.sql" \
        >"$W/sqlite.base.out" 2>"$W/sqlite.base.err"
    local rb=$?
    timeout "$T" env LD_PRELOAD="$LIB" sqlite3 "$W/sqlite.xa.db" <"$W/sqlite.xa.sql" \
        >"$W/sqlite.xa.out" 2>"$W/sqlite.xa.err"
    local rx=$?
    status sqlite $rb $rx
    same sqlite
    if [ "$(cat "$W/sqlite.xa.maps" 2>/dev/null)" = 1 ] && [ "$(cat "$W/sqlite.base.maps" 2>/dev/null)" = 0 ]; then
        ok "sqlite: libxalloc.so.1 mapped r-xp in the preloaded run only"
    else
        not_ok "sqlite: /proc/self/maps does not show xalloc as expected" "$W/sqlite.xa.maps" "$W/sqlite.xa.err"
    fi
}

test_gcc() {
    perl "$HERE/gen_source.pl" 300 >"$W/gen.c"
    local d rb rx
    for d in base xa; do
        mkdir -p "$W/gcc.$d" "$W/gcc.$d.ld"
        cp "$W/gen.c" "$W/gcc.$d/gen.c"
    done
    (cd "$W/gcc.base" && timeout "$T" env -u LD_PRELOAD gcc -O2 -g -Wall -c gen.c -o gen.o &&
        gcc gen.o -o gen) >"$W/gcc.base.err" 2>&1
    rb=$?
    (cd "$W/gcc.xa" && timeout "$T" env LD_PRELOAD="$LIB" LD_DEBUG=bindings \
        LD_DEBUG_OUTPUT="$W/gcc.xa.ld/ld" gcc -O2 -g -Wall -c gen.c -o gen.o &&
        timeout "$T" env LD_PRELOAD="$LIB" gcc gen.o -o gen) >"$W/gcc.xa.err" 2>&1
    rx=$?
    status gcc $rb $rx
    for d in base xa; do
        (cd "$W/gcc.$d" && objdump -d gen.o && ./gen) >"$W/gcc.$d.out" 2>&1
    done
    same gcc
    if bound "$W/gcc.xa.ld" cc1 && bound "$W/gcc.xa.ld" as && bound "$W/gcc.xa.ld" gcc; then
        ok "gcc: malloc of gcc, cc1 and as bound to libxalloc.so.1"
    else
        not_ok "gcc: LD_DEBUG shows gcc/cc1/as not using xalloc"
    fi
}

# git_run DIR: a repository built with fixed names and dates, so that every
# hash is the same in both runs; prints what is compared.
git_script() {
    set -e
    export HOME="$1/home" GIT_CONFIG_NOSYSTEM=1 TZ=UTC LC_ALL=C
    export GIT_AUTHOR_NAME=Tester GIT_AUTHOR_EMAIL=t@example.org GIT_AUTHOR_DATE='2021-03-04T05:06:07Z'
    export GIT_COMMITTER_NAME=Tester GIT_COMMITTER_EMAIL=t@example.org GIT_COMMITTER_DATE='2021-03-04T05:06:07Z'
    mkdir -p "$HOME" "$1/repo"
    cd "$1/repo"
    git init -q -b main .
    git config gc.auto 0
    perl -e 'for my $i (0..399) { open(my $f, ">", sprintf("f%03d.txt", $i)) or die;
        print $f map { "line $_ of file $i " . ("x" x ($_ % 50)) . "\n" } 1 .. 40 + $i % 60; }'
    mkdir -p src/a src/b
    cp "$2" src/a/gen.c
    git add -A
    git commit -q -m "initial import"
    perl -e 'for my $i (grep { $_ % 3 == 0 } 0..399) { open(my $f, ">>", sprintf("f%03d.txt", $i)) or die;
        print $f "appended to $i\n"; }'
    git mv f001.txt src/b/moved.txt
    git commit -q -am "append and move"
    git checkout -q -b topic
    sed -i 's/line 1 of/LINE ONE of/' f0[0-4]*.txt
    git commit -q -am "topic edit"
    git checkout -q main
    echo "main change" >>f399.txt
    git commit -q -am "main edit"
    git merge -q --no-ff -m "merge topic" topic
    git tag -a v1 -m "tag v1"
    git log --graph --stat --format='%H %an <%ae> %ad %s' --date=iso
    git diff --stat HEAD~2 HEAD
    git ls-tree -r HEAD | md5sum
    git archive --format=tar HEAD | md5sum
    git blame -s f002.txt | head -n 5
    git gc -q --aggressive
    git fsck --no-progress --full
    git rev-list --objects --all | sort | md5sum
    git cat-file -p v1
}

test_git() {
    perl "$HERE/gen_source.pl" 60 >"$W/git-src.c"
    mkdir -p "$W/git.base" "$W/git.xa" "$W/git.xa.ld"
    timeout "$T" env -u LD_PRELOAD bash -c "$(declare -f git_script); git_script '$W/git.base' '$W/git-src.c'" \
        >"$W/git.base.out" 2>"$W/git.base.err"
    local rb=$?
    timeout "$T" env LD_PRELOAD="$LIB" LD_DEBUG=bindings LD_DEBUG_OUTPUT="$W/git.xa.ld/ld" \
        bash -c "$(declare -f git_script); git_script '$W/git.xa' '$W/git-src.c'" \
        >"$W/git.xa.out" 2>"$W/git.xa.err"
    local rx=$?
    status git $rb $rx
    same git
    if bound "$W/git.xa.ld" git; then
        ok "git: malloc of git bound to libxalloc.so.1"
    else
        not_ok "git: LD_DEBUG shows git not using xalloc"
    fi
    rm -rf "$W/git.xa.ld" # large; not needed once checked
}

# ---- redis ----

REDIS_PID=
REDIS_PORT=

# redis_start MODE: starts redis-server on 127.0.0.1 and a free port.
redis_start() {
    local mode=$1 try port
    for try in 1 2 3 4 5 6 7 8; do
        port=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
        # Skip ports something already listens on (hex in /proc/net/tcp).
        if grep -qi ":$(printf '%04X' "$port") 00000000:0000 0A" /proc/net/tcp /proc/net/tcp6 2>/dev/null; then
            continue
        fi
        if [ "$mode" = xa ]; then
            env LD_PRELOAD="$LIB" redis-server --save '' --appendonly no --port "$port" \
                --bind 127.0.0.1 --daemonize no --logfile "$W/redis.$mode.log" &
        else
            env -u LD_PRELOAD redis-server --save '' --appendonly no --port "$port" \
                --bind 127.0.0.1 --daemonize no --logfile "$W/redis.$mode.log" &
        fi
        REDIS_PID=$!
        local i
        for i in $(seq 1 100); do
            if [ "$(redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null)" = PONG ]; then
                REDIS_PORT=$port
                return 0
            fi
            kill -0 "$REDIS_PID" 2>/dev/null || break
            sleep 0.1
        done
        kill "$REDIS_PID" 2>/dev/null
        wait "$REDIS_PID" 2>/dev/null
    done
    REDIS_PID=
    return 1
}

# redis_stop: SHUTDOWN NOSAVE and wait; returns the server's exit status
# (a crash at shutdown, e.g. freeing a pointer of the wrong allocator, is a
# failure).
redis_stop() {
    redis-cli -h 127.0.0.1 -p "$REDIS_PORT" shutdown nosave >/dev/null 2>&1
    local i
    for i in $(seq 1 100); do
        kill -0 "$REDIS_PID" 2>/dev/null || break
        sleep 0.1
    done
    kill -9 "$REDIS_PID" 2>/dev/null
    wait "$REDIS_PID"
}

redis_deterministic() {
    local c="redis-cli -h 127.0.0.1 -p $REDIS_PORT"
    $c flushall
    $c set greeting "hello xalloc"
    $c get greeting
    $c append greeting ", again"
    $c get greeting
    $c incrby counter 41
    $c incr counter
    $c rpush list a b c d e f g h i j
    $c lpush list z y x
    $c lrange list 0 -1
    $c lpop list 2
    $c rpop list
    $c llen list
    $c hset h f1 v1 f2 v2 f3 v3
    $c hgetall h
    $c zadd z 3 c 1 a 2 b 10 j
    $c zrange z 0 -1 withscores
    $c sadd s 5 3 9 1
    $c smembers s
    $c setrange big 1000000 end
    $c strlen big
    $c getrange big 999998 1000003
    local i
    for i in $(seq 1 200); do echo "SET key:$i $(printf 'v%0*d' $((i * 37 % 3000)) "$i")"; done | $c >/dev/null
    for i in $(seq 1 200 | awk '$1 % 7 == 0'); do echo "DEL key:$i"; done | $c >/dev/null
    $c mget key:1 key:7 key:100 key:199 | cut -c1-40
    $c dbsize
}

test_redis() {
    local mode rc_bench
    for mode in base xa; do
        if ! redis_start $mode; then
            not_ok "redis: redis-server ($mode) did not start" "$W/redis.$mode.log"
            continue
        fi
        if [ $mode = xa ]; then
            if grep -q "r-xp .*libxalloc\.so\.1" "/proc/$REDIS_PID/maps"; then
                ok "redis: libxalloc.so.1 mapped r-xp in redis-server (pid $REDIS_PID)"
            else
                not_ok "redis: libxalloc.so.1 not mapped in redis-server"
            fi
        fi
        timeout 180 redis-benchmark -h 127.0.0.1 -p "$REDIS_PORT" -q -n 20000 -P 8 \
            -t set,get,incr,lpush,lpop >"$W/redis.$mode.bench" 2>&1
        rc_bench=$?
        if [ $rc_bench -eq 0 ] && [ "$(grep -c 'requests per second' "$W/redis.$mode.bench")" -ge 5 ]; then
            ok "redis ($mode): redis-benchmark set,get,incr,lpush,lpop completed"
        else
            not_ok "redis ($mode): redis-benchmark failed (status $rc_bench)" "$W/redis.$mode.bench" "$W/redis.$mode.log"
        fi
        timeout 120 bash -c "$(declare -f redis_deterministic); REDIS_PORT=$REDIS_PORT; redis_deterministic" \
            >"$W/redis.$mode.out" 2>&1
        # Stats paths that call jemalloc's mallctl while xalloc owns the heap.
        redis-cli -h 127.0.0.1 -p "$REDIS_PORT" info memory >"$W/redis.$mode.info" 2>&1
        redis-cli -h 127.0.0.1 -p "$REDIS_PORT" memory stats >>"$W/redis.$mode.info" 2>&1
        redis-cli -h 127.0.0.1 -p "$REDIS_PORT" memory doctor >>"$W/redis.$mode.info" 2>&1
        if [ "$(redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping 2>/dev/null)" = PONG ]; then
            ok "redis ($mode): server alive after INFO MEMORY / MEMORY STATS / MEMORY DOCTOR"
        else
            not_ok "redis ($mode): server died on the memory stats commands" "$W/redis.$mode.info" "$W/redis.$mode.log"
        fi
        redis_stop
        local rc=$?
        if [ $rc -eq 0 ]; then
            ok "redis ($mode): clean shutdown (exit status 0)"
        else
            not_ok "redis ($mode): redis-server exit status $rc at shutdown" "$W/redis.$mode.log"
        fi
    done
    same redis
}

echo "TAP version 13"
for t in $TESTS; do
    echo "# $t"
    start=$(date +%s)
    "test_$t"
    echo "# $t: $(($(date +%s) - start)) s"
done
echo "1..$n"
[ $failures -eq 0 ]
