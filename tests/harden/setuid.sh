#!/bin/bash
# tests/harden/setuid.sh LIB PROBE: a set-uid root copy of PROBE (linked
# with LIB), run by the user nobody with XALLOC_CONF, XALLOC_CONF_FILE and
# a stats_dir of nobody's: xalloc must ignore all of it and keep its
# statistics file out of nobody's reach. The same program run without
# set-uid is the control: there the environment must apply. Needs root
# (to make a set-uid file and switch to nobody): skipped otherwise.
set -u
lib=$1 probe=$2 stat=${3:-}
if [ "$(id -u)" != 0 ]; then echo "ok - set-uid # SKIP not root"; exit 0; fi
if ! id nobody >/dev/null 2>&1 || ! command -v setpriv >/dev/null; then
    echo "ok - set-uid # SKIP no user nobody or no setpriv"; exit 0
fi
work=$(mktemp -d /tmp/xalloc-suid.XXXXXX)
trap 'rm -rf "$work"' EXIT
chmod 0755 "$work"
mkdir "$work/user" && chown nobody "$work/user"
printf 'junk:true\nverbose:true\n' > "$work/user/evil.conf"
cp "$probe" "$work/suidprobe" && chown root:root "$work/suidprobe" && chmod 4755 "$work/suidprobe"
if findmnt -n -o OPTIONS -T "$work" | grep -qw nosuid; then
    echo "ok - set-uid # SKIP $work is on a nosuid mount"; exit 0
fi
env_conf="junk:true,verbose:true,stats:on,stats_dir:$work/user"
fail=0
for mode in 4755:set-uid 2755:set-gid; do
    chmod "${mode%%:*}" "$work/suidprobe"
    out=$(setpriv --reuid=nobody --regid=nogroup --clear-groups env XALLOC_CONF="$env_conf" \
        XALLOC_CONF_FILE="$work/user/evil.conf" "$work/suidprobe" "$work/user" secure 2>&1)
    rc=$?
    if [ $rc -eq 0 ] && ! grep -q '^xalloc: ' <<< "$out"; then
        echo "ok - ${mode#*:} root run by nobody: environment ignored, statistics file safe"
    else
        echo "not ok - ${mode#*:} root run by nobody (exit $rc)"; fail=1
    fi
    sed 's/^/#   /' <<< "$out"
    # The real user must not tune the privileged process through the
    # statistics file either (regression test setgid-stats-request).
    [ -x "$stat" ] || continue
    setpriv --reuid=nobody --regid=nogroup --clear-groups "$work/suidprobe" "$work/user" \
        secure wait > "$work/wait.out" 2>&1 &
    pid=$!
    for _ in $(seq 50); do grep -q ready "$work/wait.out" && break; sleep 0.1; done
    ans=$(setpriv --reuid=nobody --regid=nogroup --clear-groups "$stat" --timeout 2 \
        --set decay_ms:7 "$pid" 2>&1)
    wait "$pid"
    rc=$?
    name="${mode#*:}-stats-request"
    if [ $rc -eq 0 ]; then echo "ok - $name: the real user cannot set options ($ans)"
    elif [ "${mode#*:}" = set-gid ]; then
        echo "not ok - $name # TODO known gap: the file is the real user's, who set decay_ms:7"
    else echo "not ok - $name: $ans"; fail=1; fi
    sed 's/^/#   /' "$work/wait.out"
done
# Control: the same binary, not set-uid, as nobody: the environment applies.
cp "$probe" "$work/plainprobe" && chmod 0755 "$work/plainprobe"
out=$(setpriv --reuid=nobody --regid=nogroup --clear-groups env XALLOC_CONF="$env_conf" \
    "$work/plainprobe" "$work/user" plain 2>&1)
rc=$?
if [ $rc -eq 0 ]; then echo "ok - control without set-uid: the environment applies"; else
    echo "not ok - control without set-uid (exit $rc)"; sed 's/^/#   /' <<< "$out"; fail=1; fi
exit $fail
