#!/bin/bash
# tests/prof/run.sh: process-level tests of the profiling library (make
# check-prof). Output is TAP; every run is bounded by timeout(1).
#
# usage: run.sh LIBXALLOC_PROF BINDIR [XALLOC_STAT]
#   BINDIR holds the programs built from tests/prof/*.c (mk/prof.mk).
#
# readers   two_sites keeps ~80 MiB live from site_big and ~8 MiB from
#           site_small (mixed sizes); google-pprof --text and jeprof --text
#           of its final dump must each put both within 15% of the truth.
# deadlock  prof_sample:1 (every allocation unwinds) with threads
#           allocating, a thread looping dlopen/dlclose and a thread
#           forking (children exit through exit(): a final dump each).
# request   a dump asked of a live process through its statistics file
#           (tests/prof/dump_request.c speaks the protocol; xalloc-stat
#           --dump too when this xalloc-stat has it), of one running as
#           another user too, never over an existing file.
# leak      prof_leak names the leaked site and not the freed one; every
#           allocating entry point shows up in the dump.
# grow      buffers grown by realloc are estimated like blocks allocated at
#           once (growth counts against the sample distance).
# active    prof_active switched on at run time.
# failure   an unwritable prof_dir is reported once and the program runs on.
# sampled   with prof_sample:1 (every allocation sampled) small blocks are
#           served past a tagged header: every entry point (malloc,
#           calloc, realloc, reallocarray, the aligned ones, free_sized,
#           free_aligned_sized, cfree, malloc_usable_size), contents,
#           zeroing, alignment, frees from another thread and a fork child,
#           also in junk mode; a double free of a sampled block is reported.
# footprint what prof:true keeps resident in a small program beyond
#           prof:false: libm is not mapped, and the anonymous memory added
#           is libunwind's (a 256 KiB trace cache per thread that samples
#           a lot, its .bss and pools) plus little of the profiler's own.
# walks     threads that sample a few times each walk step by step and keep
#           no libunwind trace cache (32 such threads add little resident
#           memory); a thread that samples a lot moves to the cached walk,
#           and both walks give the same stack.
# stack_cache  with every allocation sampled, two callers that share the
#           stack cache's key (same frame, same depth), in runs, in turns
#           and at random, in three threads, a signal handler on an
#           alternate stack and on the thread's own, longjmp out of deeper
#           paths, and threads one after another on one stack (each takes
#           over the last one's cache): each site's live bytes are exactly
#           its truth, and
#           each caller has one stack per thread kind (a hit gives the same
#           stack as an unwind).
# tally     with every allocation sampled, twelve threads in two waves
#           record and drop small blocks without the table lock (their
#           tallies), a consumer thread frees blocks others allocated, a
#           thread forks children that allocate and dump at exit, and dumps
#           are requested meanwhile; buffers grown by realloc keep their
#           records (resized in place through the tally): each requested
#           dump is sane (no count below 0 shown), the children dumped, and
#           at exit each site holds exactly its live bytes.
set -u
LIB=$(readlink -f "$1")
BIN=$(readlink -f "$2")
STAT=${3:+$(readlink -f "$3")}
T=${XT_PROF_TIMEOUT:-120}
n=0
failures=0
W=$(mktemp -d /tmp/xalloc-prof-test.XXXXXX)
trap 'rm -rf "$W"' EXIT

# tap PASSED DESCRIPTION [LOG...]: one TAP line; a failure shows the logs.
tap() {
    local passed=$1 desc=$2 f
    shift 2
    n=$((n + 1))
    if [ "$passed" = yes ]; then
        echo "ok $n - $desc"
        return
    fi
    failures=$((failures + 1))
    echo "not ok $n - $desc"
    for f in "$@"; do
        [ -s "$f" ] && tail -n 20 "$f" | sed "s|^|# ${f##*/}: |"
    done
}
ok() { tap yes "$@"; }
not_ok() { tap no "$@"; }
skip() { tap yes "# SKIP $1"; }
run_prof() { # run_prof CONF CMD...: the command under the profiling library
    local conf=$1
    shift
    timeout "$T" env LD_PRELOAD="$LIB" XALLOC_CONF="$conf" "$@"
}
# newest DIR SUFFIX: the most recent file of DIR whose name ends in SUFFIX
newest() { find "$1" -maxdepth 1 -name "*$2" -printf '%T@ %p\n' | sort -rn | head -n 1 | cut -d' ' -f2-; }

# within15 TRUTH ESTIMATE
within15() {
    awk -v t="$1" -v e="$2" 'BEGIN { d = e - t; if (d < 0) d = -d; exit !(t > 0 && d / t <= 0.15) }'
}

# ---- readers ----
readers() {
    local d=$W/readers
    mkdir -p "$d"
    if ! run_prof "prof:true,prof_sample:4k,prof_final:true,prof_dir:$d" "$BIN/two_sites" \
        >"$d/out" 2>"$d/err"; then
        not_ok "readers: two_sites ran" "$d/err"
        return
    fi
    local heap collapsed
    heap=$(newest "$d" .heap)
    collapsed=$(newest "$d" .collapsed)
    if [ -z "$heap" ] || [ -z "$collapsed" ]; then
        not_ok "readers: prof_final wrote xalloc.PID.SEQ.heap and .collapsed" "$d/err"
        return
    fi
    ok "readers: prof_final wrote $(basename "$heap") and $(basename "$collapsed")"
    if head -n 1 "$heap" | grep -qE '^heap profile: +[0-9]+: +[0-9]+ \[ +[0-9]+: +[0-9]+\] @ heap_v2/4096$' &&
        grep -q '^MAPPED_LIBRARIES:$' "$heap"; then
        ok "readers: heap_v2 header and MAPPED_LIBRARIES section"
    else
        not_ok "readers: heap_v2 header and MAPPED_LIBRARIES section" "$heap"
    fi
    local site truth tool est
    for tool in google-pprof jeprof; do
        if ! command -v "$tool" >/dev/null; then
            not_ok "readers: $tool installed (google-perftools / libjemalloc-dev)"
            continue
        fi
        timeout "$T" "$tool" --text --show_bytes "$BIN/two_sites" "$heap" >"$d/$tool.txt" 2>"$d/$tool.err"
        for site in site_big site_small; do
            truth=$(awk -v s="$site" '$1 == s { print $2 }' "$d/out")
            # flat bytes of the line naming the function
            est=$(awk -v s="$site" '$NF == s { print $1 }' "$d/$tool.txt")
            if [ -n "$est" ] && within15 "$truth" "$est"; then
                ok "readers: $tool --text: $site $est bytes, truth $truth (within 15%)"
            else
                not_ok "readers: $tool --text: $site ${est:-missing} bytes, truth $truth" \
                    "$d/$tool.txt" "$d/$tool.err"
            fi
        done
    done
    for site in site_big site_small; do
        truth=$(awk -v s="$site" '$1 == s { print $2 }' "$d/out")
        est=$(awk -v s="$site" '{ n = split($1, f, ";"); if (f[n] == s) print $2 }' "$collapsed")
        if [ -n "$est" ] && grep -q "^_start;.*main;$site " "$collapsed" && within15 "$truth" "$est"; then
            ok "readers: collapsed stacks: main;$site $est bytes (within 15%)"
        else
            not_ok "readers: collapsed stacks: main;$site ${est:-missing}" "$collapsed"
        fi
    done
}

# ---- deadlock ----
deadlock() {
    local d=$W/deadlock rc start
    mkdir -p "$d"
    start=$(date +%s)
    run_prof "prof:true,prof_sample:1,prof_interval:8m,prof_final:true,prof_dir:$d" \
        "$BIN/deadlock" 5 "$BIN/dl_obj.so" >"$d/out" 2>"$d/err"
    rc=$?
    if [ "$rc" = 0 ]; then
        ok "deadlock: prof_sample:1 with dlopen/dlclose and fork finished in $(($(date +%s) - start)) s ($(cat "$d/out"))"
    else
        not_ok "deadlock: prof_sample:1 with dlopen/dlclose and fork (exit $rc; 124 = hung)" "$d/out" "$d/err"
        return
    fi
    local pids
    pids=$(find "$d" -maxdepth 1 -name 'xalloc.*.heap' -printf '%f\n' | cut -d. -f2 | sort -u | wc -l)
    if [ "$pids" -ge 2 ]; then
        ok "deadlock: fork children kept working and dumped ($pids processes wrote profiles)"
    else
        not_ok "deadlock: fork children dumped (profiles of $pids processes)" "$d/err"
    fi
}

# ---- dump on request ----
# start_holder DIR CONF [RUNAS...]: starts holder; sets HOLDER_PID (it
# prints "ready PID" once its blocks are allocated).
start_holder() {
    local d=$1 conf=$2
    shift 2
    mkfifo "$d/in"
    # The fifo stays open on fd 7 so that the holder waits until we close it.
    "$@" timeout "$T" env LD_PRELOAD="$LIB" XALLOC_CONF="$conf" "$BIN/holder" \
        <"$d/in" >"$d/out" 2>"$d/err" &
    HOLDER_JOB=$!
    exec 7>"$d/in"
    local _
    for _ in $(seq 100); do
        grep -q ready "$d/out" 2>/dev/null && break
        sleep 0.1
    done
    HOLDER_PID=$(awk '$1 == "ready" { print $2 }' "$d/out")
}
stop_holder() {
    exec 7>&-
    wait "$HOLDER_JOB" 2>/dev/null
}
names_holds() { # the dump names hold_big and hold_small
    timeout "$T" google-pprof --text "$BIN/holder" "$1" >"$2" 2>&1 &&
        grep -q 'hold_big$' "$2" && grep -q 'hold_small$' "$2"
}

request() {
    local d=$W/request path
    mkdir -p "$d/prof" "$d/stats"
    start_holder "$d" "prof:true,prof_sample:4k,prof_dir:$d/prof,stats_dir:$d/stats"
    if [ -z "$HOLDER_PID" ] || ! grep -q ready "$d/out"; then
        not_ok "request: holder started" "$d/err"
        stop_holder
        return
    fi
    # A file of that name already exists: the dump must take the next one.
    echo keep >"$d/prof/xalloc.$HOLDER_PID.0.heap"
    if path=$(timeout "$T" "$BIN/dump_request" "$HOLDER_PID" "$d/stats" 2>"$d/req.err"); then
        ok "request: the process answered with $path"
    else
        not_ok "request: dump requested through the statistics file" "$d/req.err" "$d/err"
        stop_holder
        return
    fi
    if [ "$path" = "$d/prof/xalloc.$HOLDER_PID.1.heap" ] && [ "$(cat "$d/prof/xalloc.$HOLDER_PID.0.heap")" = keep ]; then
        ok "request: an existing xalloc.PID.0.heap was not overwritten (wrote .1)"
    else
        not_ok "request: an existing dump was not overwritten (got $path)"
    fi
    if names_holds "$path" "$d/pprof.txt"; then
        ok "request: google-pprof reads the requested dump (hold_big, hold_small)"
    else
        not_ok "request: google-pprof reads the requested dump" "$d/pprof.txt"
    fi
    if [ -n "$STAT" ] && "$STAT" --help 2>&1 | grep -q -- '--dump'; then
        if path=$(timeout "$T" "$STAT" --dir "$d/stats" --dump "$HOLDER_PID" 2>"$d/stat.err" | grep -o '/[^ ]*\.heap' | head -n 1) &&
            [ -n "$path" ] && names_holds "$path" "$d/pprof2.txt"; then
            ok "request: xalloc-stat --dump PID returned a readable profile ($path)"
        else
            not_ok "request: xalloc-stat --dump PID" "$d/stat.err"
        fi
    else
        skip "request: this xalloc-stat has no --dump yet (the stats helper adds it); tested through dump_request"
    fi
    stop_holder

    # The same, of a process of another user: the statistics file (0600,
    # the process's user) decides who may ask; root may.
    if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null || ! id nobody >/dev/null 2>&1; then
        skip "request: another user's process (needs root, setpriv and user nobody)"
        return
    fi
    local o=$W/other
    mkdir -p "$o/prof" "$o/stats"
    chmod 0777 "$o" "$o/prof" "$o/stats"
    chmod 0755 "$W"
    start_holder "$o" "prof:true,prof_sample:4k,prof_dir:$o/prof,stats_dir:$o/stats" \
        setpriv --reuid=nobody --regid=nogroup --clear-groups
    if [ -z "$HOLDER_PID" ] || ! grep -q ready "$o/out"; then
        not_ok "request: holder started as nobody" "$o/err"
        stop_holder
        return
    fi
    if path=$(timeout "$T" "$BIN/dump_request" "$HOLDER_PID" "$o/stats" 2>"$o/req.err") &&
        [ "$(stat -c %U "$path")" = nobody ] && names_holds "$path" "$o/pprof.txt"; then
        ok "request: root asked a process of user nobody for a dump: $path, readable"
    else
        not_ok "request: root asked a process of user nobody for a dump" "$o/req.err" "$o/err" "$o/pprof.txt"
    fi
    if id daemon >/dev/null 2>&1; then
        if setpriv --reuid=daemon --regid=daemon --clear-groups "$BIN/dump_request" "$HOLDER_PID" "$o/stats" \
            >"$o/deny.out" 2>"$o/deny.err"; then
            not_ok "request: user daemon may not ask nobody's process for a dump" "$o/deny.out"
        else
            ok "request: user daemon is refused ($(head -c 100 "$o/deny.err"))"
        fi
    fi
    stop_holder
}

# ---- leak report and entry points ----
leak() {
    local d=$W/leak
    mkdir -p "$d"
    if ! run_prof "prof:true,prof_sample:1,prof_leak:true,prof_final:true,prof_dir:$d" \
        "$BIN/leaky" >"$d/out" 2>"$d/err"; then
        not_ok "leak: leaky ran" "$d/err"
        return
    fi
    if grep -q '^xalloc: prof_leak: .*bytes.*still allocated at exit' "$d/err" &&
        grep -q '^xalloc: prof_leak:     at leak_site$' "$d/err" &&
        ! grep -q 'freed_site' "$d/err"; then
        ok "leak: prof_leak names leak_site and not freed_site"
    else
        not_ok "leak: prof_leak names leak_site and not freed_site" "$d/err"
    fi
    local top
    top=$(grep -A1 '^xalloc: prof_leak: #1 ' "$d/err" | tail -n 1)
    if [ "$top" = "xalloc: prof_leak:     at leak_site" ]; then
        ok "leak: the largest leak (leak_site, 16 MiB) comes first"
    else
        not_ok "leak: the largest leak comes first (got '$top')" "$d/err"
    fi
    local c site missing=""
    c=$(newest "$d" .collapsed)
    for site in leak_site calloc_site realloc_site memalign_site; do
        grep -q ";$site " "$c" 2>/dev/null || missing="$missing $site"
    done
    if [ -z "$missing" ] && ! grep -q freed_site "$c"; then
        ok "leak: malloc, calloc, realloc, posix_memalign/aligned_alloc/memalign sampled; freed blocks left the profile"
    else
        not_ok "leak: entry points in the profile (missing:${missing:- none}; freed_site must be absent)" "$c"
    fi
}

# ---- realloc growth ----
grow() {
    local d=$W/grow c truth est
    mkdir -p "$d"
    if ! run_prof "prof:true,prof_sample:64k,prof_final:true,prof_dir:$d" "$BIN/grow" \
        >"$d/out" 2>"$d/err"; then
        not_ok "grow: program ran" "$d/err"
        return
    fi
    c=$(newest "$d" .collapsed)
    truth=$(awk '$1 == "grow_site" { print $2 }' "$d/out")
    est=$(awk '{ n = split($1, f, ";"); if (f[n] == "grow_site") s += $2 } END { print s + 0 }' "$c")
    if within15 "$truth" "$est"; then
        ok "grow: buffers grown by realloc: grow_site $est bytes, truth $truth (within 15%)"
    else
        not_ok "grow: buffers grown by realloc: grow_site $est bytes, truth $truth" "$c"
    fi
}

# ---- prof_active at run time ----
active() {
    local d=$W/active c
    mkdir -p "$d"
    if ! run_prof "prof:true,prof_active:false,prof_sample:1k,prof_final:true,prof_dir:$d" \
        "$BIN/active" >"$d/out" 2>"$d/err"; then
        not_ok "active: program ran" "$d/err"
        return
    fi
    c=$(newest "$d" .collapsed)
    if grep -q ';on_site ' "$c" 2>/dev/null && ! grep -q off_site "$c"; then
        ok "active: prof_active:false samples nothing; xalloc_config_set(prof_active:true) starts sampling"
    else
        not_ok "active: prof_active switched at run time" "$c" "$d/err"
    fi
}

# ---- failure reported once ----
failure() {
    local d=$W/failure rc lines
    mkdir -p "$d"
    run_prof "prof:true,prof_sample:4k,prof_interval:1m,prof_final:true,prof_dir:$d/missing" \
        "$BIN/two_sites" >"$d/out" 2>"$d/err"
    rc=$?
    lines=$(grep -c 'prof: .*cannot write a heap profile' "$d/err")
    if [ "$rc" = 0 ] && [ "$lines" = 1 ] && grep -q '^site_big ' "$d/out"; then
        ok "failure: an unwritable prof_dir is reported once ($(head -c 120 "$d/err")) and the program completes"
    else
        not_ok "failure: unwritable prof_dir (exit $rc, $lines messages)" "$d/err"
    fi
}

# ---- sampled blocks through every entry point ----
sampled() {
    local d=$W/sampled conf m
    mkdir -p "$d"
    for conf in prof:true,prof_sample:1 prof:true,prof_sample:1,junk:true; do
        if run_prof "$conf" "$BIN/sampled" --expect-sampled >"$d/out" 2>"$d/err" &&
            grep -q '^sampled.c: ok$' "$d/out"; then
            ok "sampled: every entry point on sampled blocks ($conf)"
        else
            not_ok "sampled: every entry point on sampled blocks ($conf)" "$d/out" "$d/err"
        fi
    done
    if run_prof prof:false "$BIN/sampled" >"$d/out" 2>"$d/err" && grep -q '^sampled.c: ok$' "$d/out"; then
        ok "sampled: the same program with prof:false"
    else
        not_ok "sampled: the same program with prof:false" "$d/out" "$d/err"
    fi
    for m in double-free:free double-free-aligned:free realloc-freed:realloc; do
        run_prof prof:true,prof_sample:1 "$BIN/sampled" --expect-sampled "${m%%:*}" >"$d/out" 2>"$d/err"
        local rc=$?
        # (bash adds its own "Aborted" line to the log)
        if [ "$rc" = 134 ] && [ "$(grep -c '^xalloc:' "$d/err")" = 1 ] &&
            grep -qE "^xalloc: fatal: ${m#*:}\(\): double free of 0x[0-9a-f]+ \(a sampled block" "$d/err"; then
            ok "sampled: ${m%%:*} of a sampled block reported: $(grep '^xalloc:' "$d/err")"
        else
            not_ok "sampled: ${m%%:*} of a sampled block reported (exit $rc)" "$d/out" "$d/err"
        fi
    done
}

# ---- resident footprint ----
# result FILE KEY: the value of KEY=... on the RESULT line of FILE
result() { sed -n "s/^RESULT .*\b$2=\([0-9]*\).*/\1/p" "$1"; }
footprint() {
    local d=$W/footprint c i
    mkdir -p "$d"
    # Three runs of each, interleaved; the smallest of each counts (page
    # cache and fault-around can only add file pages).
    for i in 1 2 3; do
        for c in false true; do
            if ! run_prof "prof:$c,prof_dir:$d" "$BIN/footprint" >"$d/$c.$i" 2>"$d/err"; then
                not_ok "footprint: footprint ran with prof:$c" "$d/err"
                return
            fi
        done
    done
    local rss_f rss_t anon_f anon_t libm
    rss_f=$(for i in 1 2 3; do result "$d/false.$i" rss_kb; done | sort -n | head -n 1)
    rss_t=$(for i in 1 2 3; do result "$d/true.$i" rss_kb; done | sort -n | head -n 1)
    anon_f=$(for i in 1 2 3; do result "$d/false.$i" anon_kb; done | sort -n | head -n 1)
    anon_t=$(for i in 1 2 3; do result "$d/true.$i" anon_kb; done | sort -n | head -n 1)
    libm=$(cat "$d"/*.[123] | result /dev/stdin libm | sort -u | tr '\n' ' ')
    if [ "$libm" = "0 " ]; then
        ok "footprint: the profiling library does not map libm"
    else
        not_ok "footprint: libm mapped by a program that does not link it (libm=$libm)"
    fi
    # Anonymous: libunwind's 256 KiB trace cache, its 28 KiB .bss and 12
    # KiB of pools, then the profiler's own (about 40 KiB here: 64 stacks
    # of up to 64 frames, the tables, a filter page). Whole process, with
    # the file pages of libunwind and of the .eh_frame it reads: about
    # 450 KiB here (650 KiB when the profiler linked libm).
    local anon=$((anon_t - anon_f)) rss=$((rss_t - rss_f))
    if [ -n "$anon_f" ] && [ -n "$anon_t" ] && [ "$anon" -le 416 ] && [ "$rss" -le 768 ]; then
        ok "footprint: prof:true adds $anon KiB anonymous (<= 416), $rss KiB resident in all (<= 768)"
    else
        not_ok "footprint: prof:true adds ${anon} KiB anonymous (<= 416), ${rss} KiB in all (<= 768)" \
            "$d/false.1" "$d/true.1"
    fi
}

# ---- walks ----
walks() {
    local d=$W/walks i c
    mkdir -p "$d"
    for i in 1 2 3; do
        for c in false true; do
            if ! run_prof "prof:$c,prof_dir:$d" "$BIN/walks" light 32 >"$d/$c.$i" 2>"$d/err"; then
                not_ok "walks: walks light 32 ran with prof:$c" "$d/err"
                return
            fi
        done
    done
    local anon_f anon_t
    anon_f=$(for i in 1 2 3; do result "$d/false.$i" anon_kb; done | sort -n | head -n 1)
    anon_t=$(for i in 1 2 3; do result "$d/true.$i" anon_kb; done | sort -n | head -n 1)
    # One 256 KiB trace cache a thread would add 8 MiB.
    if [ -n "$anon_f" ] && [ -n "$anon_t" ] && [ $((anon_t - anon_f)) -le 2048 ]; then
        ok "walks: 32 threads sampling about 8 times each: prof:true adds $((anon_t - anon_f)) KiB anonymous (<= 2048)"
    else
        not_ok "walks: 32 threads sampling about 8 times each: prof:true adds $((${anon_t:-0} - ${anon_f:-0})) KiB anonymous (<= 2048)" \
            "$d/false.1" "$d/true.1"
    fi
    if ! run_prof "prof:true,prof_sample:64k,prof_final:true,prof_dir:$d" "$BIN/walks" switch \
        >"$d/switch.out" 2>"$d/switch.err"; then
        not_ok "walks: walks switch ran" "$d/switch.err"
        return
    fi
    local collapsed stacks
    collapsed=$(newest "$d" .collapsed)
    stacks=$(awk '{ n = split($1, f, ";"); if (f[n] == "heavy_site") c++ } END { print c + 0 }' "$collapsed")
    if [ "$stacks" = 1 ] && grep -q "main;heavy_site " "$collapsed"; then
        ok "walks: step-by-step and cached walks give one stack for heavy_site"
    else
        not_ok "walks: $stacks stacks end in heavy_site (one expected)" "$collapsed" "$d/switch.err"
    fi
}

# ---- stack cache ----
# collapsed_bytes FILE TAIL: live bytes of the collapsed stacks of FILE
# whose innermost frames are TAIL (a;b: b innermost, called by a)
collapsed_bytes() {
    awk -v tail="$2" 'BEGIN { k = split(tail, w, ";") }
        { n = split($1, f, ";"); if (n < k) next
          for (i = 1; i <= k; i++) if (f[n - k + i] != w[i]) next
          t += $NF }
        END { printf "%d", t }' "$1" 2>/dev/null
}

# exact_bytes TEST COLLAPSED TAIL TRUTH LOG...: ok when the stacks of
# COLLAPSED ending in TAIL hold exactly TRUTH live bytes
exact_bytes() {
    local test=$1 file=$2 tail=$3 truth=$4 got
    shift 4
    got=$(collapsed_bytes "$file" "$tail")
    if [ -n "$truth" ] && [ "$got" = "$truth" ]; then
        ok "$test: $tail holds $got bytes, exactly the truth"
    else
        not_ok "$test: $tail holds ${got:-?} bytes, truth ${truth:-missing}" "$file" "$@"
    fi
}

stack_cache() {
    local d=$W/stack_cache site key truth got stacks
    mkdir -p "$d"
    if ! run_prof "prof:true,prof_sample:1,prof_final:true,prof_dir:$d" "$BIN/stack_cache" \
        >"$d/out" 2>"$d/err"; then
        not_ok "stack_cache: stack_cache ran" "$d/err"
        return
    fi
    local collapsed
    collapsed=$(newest "$d" .collapsed)
    for site in via_a:a_bytes via_b:b_bytes via_sig:sig_bytes deep:deep_bytes; do
        key=${site#*:}
        site=${site%%:*}
        exact_bytes stack_cache "$collapsed" "$site;leaf" "$(result "$d/out" "$key")" \
            "$d/out" "$d/err"
    done
    # main;calls;via_a;leaf, start_thread;...;thread_main;calls;via_a;leaf
    # and start_thread;...;seq_thread_main;via_a;leaf
    for site in via_a via_b; do
        stacks=$(awk -v s="$site" '{ n = split($1, f, ";"); if (n >= 2 && f[n] == "leaf" &&
            f[n - 1] == s) c++ } END { print c + 0 }' "$collapsed")
        if [ "$stacks" = 3 ]; then
            ok "stack_cache: $site;leaf has one stack in main, one in the threads, one in the sequential threads"
        else
            not_ok "stack_cache: $site;leaf has $stacks stacks (3 expected)" "$collapsed"
        fi
    done
}

tally() {
    local d=$W/tally path i bad=0 asked=0
    mkdir -p "$d/prof" "$d/stats"
    timeout "$T" env LD_PRELOAD="$LIB" \
        XALLOC_CONF="prof:true,prof_sample:1,prof_final:true,prof_dir:$d/prof,stats_dir:$d/stats" \
        "$BIN/tally" 3 >"$d/out" 2>"$d/err" &
    local job=$! pid=
    for i in $(seq 100); do
        pid=$(awk '$1 == "ready" { print $2 }' "$d/out" 2>/dev/null)
        [ -n "$pid" ] && break
        sleep 0.05
    done
    # Dumps asked while the threads run: each one folds every tally.
    for i in 1 2 3 4; do
        sleep 0.4
        [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || break
        if path=$(timeout "$T" "$BIN/dump_request" "$pid" "$d/stats" 2>>"$d/req.err"); then
            asked=$((asked + 1))
            # heap_v2 counts: a wrapped (negative) counter would print 20
            # digits. Only the counts, before each record's '@' and before
            # MAPPED_LIBRARIES: a stack address printed as 16 hex digits
            # can be all decimal digits (a PIE loaded at 0x5647351...).
            sed -n '/^MAPPED_LIBRARIES:/q; s/@.*//; p' "$path" | grep -Eq '[0-9]{16,}' &&
                bad=$((bad + 1))
        fi
    done
    if ! wait "$job"; then
        not_ok "tally: tally ran" "$d/err"
        return
    fi
    if [ "$asked" -ge 1 ] && [ "$bad" = 0 ]; then
        ok "tally: $asked dumps requested while threads sample, all sane"
    else
        not_ok "tally: $asked dumps requested, $bad with an absurd count" "$d/req.err" "$d/err"
    fi
    local children
    children=$(ls "$d/prof" | grep -c '\.heap$')
    if [ "$children" -gt $((asked + 2)) ]; then
        ok "tally: fork children dumped ($children profiles in all)"
    else
        not_ok "tally: fork children dumped (only $children profiles)" "$d/err"
    fi
    local collapsed site key truth
    collapsed=$(ls -v "$d/prof/xalloc.$pid".*.collapsed 2>/dev/null | tail -n 1) # the final one
    for site in keep_site:keep_bytes deep_site:deep_bytes grow_site:grow_bytes pass_site: gone_site:; do
        key=${site#*:}
        site=${site%%:*}
        truth=0
        [ -n "$key" ] && truth=$(result "$d/out" "$key")
        exact_bytes tally "$collapsed" "$site" "$truth" "$d/out" "$d/err"
    done
}

echo "# profiling library: $LIB"
readers
deadlock
request
leak
grow
active
failure
sampled
footprint
walks
stack_cache
tally
echo "1..$n"
if [ "$failures" -ne 0 ]; then
    echo "# $failures of $n failed"
    exit 1
fi
echo "# all $n passed"
