#!/usr/bin/env bash
# tests/stats/lifetime.sh: statistics never outlive their process (issue 16).
#   - 1,000 processes under LD_PRELOAD, each publishing for longer than
#     stats_interval_ms, end by SIGKILL, SIGTERM (default action) and _exit
#     in turn; afterwards the xalloc entries in the statistics directories,
#     the tmpfs usage of /dev/shm and the shared memory charged to this
#     test's own memory cgroup (where the memory files live) are what they
#     were before, with no xalloc-stat run in between;
#   - a process that execs: one entry (the new image's) or none;
#   - /dev/shm read-only or full: the program runs, exits 0 and says
#     nothing, and its statistics can still be read.
# Usage: lifetime.sh LIB XALLOC_STAT LIFER HOLDER [N]
# As root the whole run happens in a mount namespace of its own with a
# fresh tmpfs on /dev/shm, so the counts are this test's alone (other
# tests run at the same time); without root only our own pids are counted
# and the read-only/full cases are skipped, saying so.
set -u
LIB=$1 TOOL=$2 LIFER=$3 HOLDER=$4 N=${5:-1000}

if [ "${XS_LIFETIME_INNER:-}" != 1 ] && [ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null; then
    exec env XS_LIFETIME_INNER=1 unshare -m --propagation private \
        sh -c 'mount -t tmpfs -o size=64m,mode=1777 xs-lifetime /dev/shm && exec "$0" "$@"' \
        "$0" "$@"
fi
private=${XS_LIFETIME_INNER:-0}

work=$(mktemp -d /tmp/xs-life.XXXXXX)
pids=()
memcg='' memcg_home=''
cleanup() {
    for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
    wait 2>/dev/null
    if [ -n "$memcg" ]; then
        echo "$BASHPID" >"$memcg_home/cgroup.procs" 2>/dev/null
        rmdir "$memcg" 2>/dev/null
    fi
    rm -rf "$work"
}
trap cleanup EXIT
# shellcheck source=tests/stats/checks.sh
. "$(dirname "$0")/checks.sh"

# Entries that name one of the pids in $work/pids, in the directories
# where xalloc before format 1.1 put its files (and any stats_dir-like
# name under /dev/shm).
own_entries() {
    local n=0 p
    while read -r p; do
        for f in /dev/shm/xalloc."$p" /run/xalloc/"$p"; do
            [ -e "$f" ] && n=$((n + 1))
        done
    done <"$work/pids"
    echo "$n"
}
shm_used_kb() { df -k --output=used /dev/shm | tail -1 | tr -d ' '; }
shmem_kb() { awk '/^Shmem:/ {print $2}' /proc/meminfo; }
memfds_of() {
    local n=0 f
    for f in /proc/"$1"/fd/*; do
        [ "$(readlink "$f" 2>/dev/null)" = "/memfd:xalloc-stats (deleted)" ] && n=$((n + 1))
    done
    echo "$n"
}

: >"$work/pids"
if [ "$private" = 1 ]; then
    echo "# in a private mount namespace: /dev/shm is a fresh tmpfs of this test"
else
    echo "# not root: counting only this test's pids; tmpfs usage is the shared one"
fi
# A memory cgroup of this test (cgroup v1, as root): every memory file its
# processes make is charged there as shmem, and stays charged for as long
# as anything keeps the file alive.
if [ "$private" = 1 ] && [ -w /sys/fs/cgroup/memory/cgroup.procs ]; then
    home=$(awk -F: '$2 == "memory" {print $3}' /proc/self/cgroup)
    memcg_home=/sys/fs/cgroup/memory$home
    memcg=$memcg_home/xs-lifetime-$$
    if mkdir "$memcg" 2>/dev/null && echo "$BASHPID" >"$memcg/cgroup.procs"; then
        echo "# memory cgroup $memcg"
    else
        rmdir "$memcg" 2>/dev/null
        memcg=''
    fi
fi
memcg_shmem_kb() { awk '$1 == "shmem" {print int($2 / 1024)}' "$memcg/memory.stat"; }
if [ -n "$memcg" ]; then
    # The measure is sensitive: 50 live publishers show up in it.
    s0=$(memcg_shmem_kb)
    live=()
    for i in $(seq 50); do
        : >"$work/live.$i"
        env LD_PRELOAD="$LIB" XALLOC_CONF=stats_interval_ms:10 "$LIFER" 15 wait 3>"$work/live.$i" 2>/dev/null &
        live+=("$!")
    done
    for i in $(seq 50); do
        for _ in $(seq 500); do [ -s "$work/live.$i" ] && break; sleep 0.01; done
    done
    s1=$(memcg_shmem_kb)
    kill -KILL "${live[@]}"
    { wait; } 2>/dev/null
    s2=$(memcg_shmem_kb)
    # A live file has at least four pages written (header, totals, the
    # arenas in use, classes): 16 kB; the arena entries not in use stay
    # untouched.
    check "50 live publishers: shmem of the cgroup ${s0} -> ${s1} kB (>= 50 x 16 kB); killed: ${s2} kB" \
        test "$((s1 - s0))" -ge 800 -a "$((s2 - s0))" -lt 512
else
    echo "skip - shmem per cgroup needs root and a v1 memory cgroup"
fi

before_entries=$(own_entries)
before_used=$(shm_used_kb)
before_all=$(ls /dev/shm | wc -l)
before_shmem=$(shmem_kb)
[ -n "$memcg" ] && before_cg=$(memcg_shmem_kb)

# ---- 1,000 processes, three ways to die ----
modes=(kill term exit)
declare -A died=([kill]=0 [term]=0 [exit]=0)
batch=25 started=0 notup=0
t0=$(date +%s%N)
while [ "$started" -lt "$N" ]; do
    bp=()
    for ((i = 0; i < batch && started < N; i++)); do
        m=${modes[$((started % 3))]}
        r="$work/ready.$started"
        : >"$r"
        if [ "$m" = exit ]; then arg='_exit'; else arg='wait'; fi
        env LD_PRELOAD="$LIB" XALLOC_CONF=stats_interval_ms:10 "$LIFER" 15 "$arg" 3>"$r" 2>>"$work/lifer.err" &
        p=$!
        bp+=("$p:$m:$r")
        echo "$p" >>"$work/pids"
        started=$((started + 1))
    done
    for e in "${bp[@]}"; do
        IFS=: read -r p m r <<<"$e"
        for _ in $(seq 500); do [ -s "$r" ] && break; sleep 0.01; done
        [ -s "$r" ] || notup=$((notup + 1))
        case $m in
            kill) kill -KILL "$p" ;;
            term) kill -TERM "$p" ;;
        esac
        died[$m]=$((died[$m] + 1))
    done
    { wait; } 2>/dev/null # no "Killed" line per process
done
ms=$((($(date +%s%N) - t0) / 1000000))
check "$N processes published before they died (SIGKILL ${died[kill]}, SIGTERM ${died[term]}, _exit ${died[exit]}; ${ms} ms)" \
    test "$notup" = 0
after_entries=$(own_entries)
after_used=$(shm_used_kb)
after_all=$(ls /dev/shm | wc -l)
after_shmem=$(shmem_kb)
# Machine-wide, so other tests move it too: shown, not asserted. The
# memory files are freed by the kernel with their process; 1,000 left
# behind would be about $((N * 56 / 1024)) MiB.
echo "# Shmem (whole machine): ${before_shmem} kB before, ${after_shmem} kB after"
if [ -n "$memcg" ]; then
    after_cg=$(memcg_shmem_kb)
    check "the memory files died with them: shmem of this test's cgroup ${before_cg} kB before, ${after_cg} kB after (1,000 left would be ~52,000 kB)" \
        test "$((after_cg - before_cg))" -lt 1024
fi
check "no statistics entry left by them ($before_entries before, $after_entries after)" \
    test "$after_entries" = "$before_entries"
if [ "$private" = 1 ]; then
    check "/dev/shm holds what it held ($before_all entries, ${before_used} kB before; $after_all, ${after_used} kB after)" \
        test "$after_all" = "$before_all" -a "$after_used" = "$before_used"
else
    echo "skip - tmpfs usage of a shared /dev/shm cannot be attributed to this test without root"
fi
[ -s "$work/lifer.err" ] && { echo "# lifer stderr:"; head -5 "$work/lifer.err"; }

# ---- exec ----
# Into a program without xalloc: no entry at all.
env LD_PRELOAD="$LIB" XALLOC_CONF=stats_interval_ms:10 "$LIFER" 15 exec /usr/bin/env env -u LD_PRELOAD sleep 30 \
    3>"$work/ready.exec1" &
e1=$!; pids+=("$e1")
for _ in $(seq 300); do [ "$(cat /proc/$e1/comm 2>/dev/null)" = sleep ] && break; sleep 0.01; done
check "exec into a program without xalloc (pid $e1 now $(cat /proc/$e1/comm 2>/dev/null))" \
    test "$(cat /proc/$e1/comm 2>/dev/null)" = sleep
check "... leaves no statistics memory file ($(memfds_of "$e1"))" test "$(memfds_of "$e1")" = 0
check "... nor a named one" bash -c '! ls /dev/shm/xalloc."$1" /run/xalloc/"$1" 2>/dev/null' _ "$e1"
"$TOOL" "$e1" >/dev/null 2>&1; rc=$?
check "... and xalloc-stat says it does not use xalloc (rc $rc)" test "$rc" = 4
kill "$e1"
# Into a program with xalloc: exactly one entry, the new image's.
env LD_PRELOAD="$LIB" XALLOC_CONF=stats_interval_ms:10 "$LIFER" 15 exec "$HOLDER" holder 1 0 30 \
    3>"$work/ready.exec2" >"$work/exec2.out" &
e2=$!; pids+=("$e2")
for _ in $(seq 300); do grep -q ready "$work/exec2.out" 2>/dev/null && break; sleep 0.01; done
for _ in $(seq 100); do [ "$(memfds_of "$e2")" = 1 ] && break; sleep 0.01; done
check "exec into a program with xalloc: exactly one statistics memory file ($(memfds_of "$e2"))" \
    test "$(memfds_of "$e2")" = 1
json=$("$TOOL" --json "$e2" 2>&1)
check "... the new image's (xalloc-stat names holder)" \
    bash -c 'jq -e --argjson p "$1" ".pid == \$p and .program == \"holder\"" <<<"$2" >/dev/null' _ "$e2" "$json"
kill "$e2"
wait 2>/dev/null

# ---- /dev/shm read-only, full ----
if [ "$private" = 1 ]; then
    shm_case() { # shm_case DESC MOUNT-OPTIONS [fill]
        local desc=$1 opts=$2 fill=${3:-}
        umount /dev/shm 2>/dev/null
        mount -t tmpfs -o "$opts" xs-shm /dev/shm || { bad "$desc: mount failed"; return; }
        [ -n "$fill" ] && dd if=/dev/zero of=/dev/shm/fill bs=4k count=100 status=none 2>/dev/null
        if [ -n "$fill" ]; then
            check "$desc: /dev/shm is full" bash -c '! dd if=/dev/zero of=/dev/shm/more bs=4k count=1 status=none 2>/dev/null'
        fi
        env LD_PRELOAD="$LIB" XALLOC_CONF=stats_interval_ms:10 "$HOLDER" 4 4 3 >"$work/shm.out" 2>"$work/shm.err" &
        local h=$!
        for _ in $(seq 100); do grep -q ready "$work/shm.out" 2>/dev/null && break; sleep 0.05; done
        local ok=1
        for _ in $(seq 50); do "$TOOL" --no-kernel "$h" >/dev/null 2>&1 && break; sleep 0.05; done
        "$TOOL" --no-kernel "$h" >/dev/null 2>&1 || ok=0
        kill -TERM "$h"; wait "$h"; local rc=$?
        check "$desc: the program runs and exits 0 (rc $rc)" test "$rc" = 0
        check "$desc: it says nothing ($(head -c 200 "$work/shm.err"))" test ! -s "$work/shm.err"
        check "$desc: its statistics are still read (they need no /dev/shm)" test "$ok" = 1
        env LD_PRELOAD="$LIB" XALLOC_CONF=verbose:true "$HOLDER" 1 0 0 >/dev/null 2>"$work/shm.verr"
        check "$desc: verbose prints no statistics error" bash -c '! grep -q "stats:" "$1"' _ "$work/shm.verr"
    }
    shm_case "/dev/shm read-only" "ro,size=64k"
    shm_case "/dev/shm full" "size=400k" fill
else
    echo "skip - read-only and full /dev/shm need root (a tmpfs in a mount namespace)"
fi

echo "lifetime.sh: $pass passed, $fail failed"
[ "$fail" = 0 ]
