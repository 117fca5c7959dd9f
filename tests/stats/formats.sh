#!/usr/bin/env bash
# tests/stats/formats.sh: every mode of xalloc-stat with every output
# format (issue 15). Each combination either prints that format or is
# refused with exit status 2 and one line saying why. JSON goes through a
# JSON parser (python3's json), Prometheus through `promtool check metrics`
# (Debian package prometheus) or, without promtool, a line-format check;
# the option table (src/options.def) must appear whole in every form of the
# configuration: --config text, --json, --config --json, --prometheus,
# --config --prometheus, and --all --json / --all --prometheus.
# Usage: formats.sh LIB XALLOC_STAT HOLDER
set -u
LIB=$1 TOOL=$2 HOLDER=$3
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/stats/checks.sh
. "$here/checks.sh"
work=$(mktemp -d /tmp/xs-fmt.XXXXXX)
h=
cleanup() {
    [ -n "$h" ] && kill "$h" 2>/dev/null
    wait 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

mapfile -t options < <(sed -n 's/^XA_OPTION(\([a-z_0-9]*\),.*/\1/p' "$here/../../src/options.def")
check "the option table has options (${#options[@]})" test "${#options[@]}" -gt 10

promtool=$(command -v promtool || true)
[ -n "$promtool" ] || echo "# promtool not found (apt-get install prometheus): line-format check only"

is_json() { python3 -c 'import json,sys; json.load(sys.stdin)' <"$1"; }
is_prom() {
    if [ -n "$promtool" ]; then
        # promtool prints lint notes (e.g. counter naming) on stdout and
        # fails only on a malformed exposition
        "$promtool" check metrics <"$1" >"$1.lint" 2>&1 || { cat "$1.lint"; return 1; }
    fi
    # Every line a HELP/TYPE comment or a sample "name{labels} value".
    ! grep -vE '^# (HELP|TYPE) [a-zA-Z_:][a-zA-Z0-9_:]* |^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[^}]*\})? -?[0-9.e+]+$' "$1"
}
jqt() { jq -e "$@" >/dev/null; }
is_text() { [ -s "$1" ] && ! is_json "$1" 2>/dev/null; }
has_options_json() { # FILE JQ-PATH-TO-CONFIG-ARRAY
    local o
    for o in "${options[@]}"; do
        jq -e --arg n "$o" "[$2[] | select(.name == \$n)] | length == 1" "$1" >/dev/null ||
            { echo "option $o missing"; return 1; }
    done
}
has_options_prom() {
    local o
    for o in "${options[@]}"; do
        grep -q "^xalloc_config_info{.*option=\"$o\"" "$1" || { echo "option $o missing"; return 1; }
    done
}
has_options_text() {
    local o
    for o in "${options[@]}"; do
        grep -qE "^  $o( |$)" "$1" || { echo "option $o missing"; return 1; }
    done
}

env LD_PRELOAD="$LIB" XALLOC_CONF=stats_interval_ms:50 "$HOLDER" 4 4 120 >"$work/h.out" 2>&1 &
h=$!
for _ in $(seq 100); do grep -q ready "$work/h.out" 2>/dev/null && break; sleep 0.05; done
for _ in $(seq 100); do "$TOOL" --no-kernel "$h" >/dev/null 2>&1 && break; sleep 0.05; done
memfd=
for f in /proc/"$h"/fd/*; do
    [ "$(readlink "$f")" = "/memfd:xalloc-stats (deleted)" ] && memfd=$f
done

# run NAME ARGS...: output in $work/NAME, status in $rc, stderr in $work/NAME.err
run() {
    local name=$1
    shift
    "$TOOL" "$@" >"$work/$name" 2>"$work/$name.err"
    rc=$?
}
refused() { # a clear refusal: status 2 and one line naming the flags
    [ "$rc" = 2 ] && [ "$(wc -l <"$2")" = 1 ] && grep -q -- "$1" "$2"
}

for fmt in text json prometheus; do
    flag=()
    [ "$fmt" = text ] || flag=(--"$fmt")
    # report
    run "report.$fmt" "${flag[@]}" "$h"
    case $fmt in
        text) check "report text (rc $rc)" is_text "$work/report.$fmt" ;;
        json) check "report --json parses (rc $rc)" is_json "$work/report.$fmt"
              check "report --json has every option" has_options_json "$work/report.$fmt" .config ;;
        prometheus) check "report --prometheus passes ${promtool:+promtool }(rc $rc)" is_prom "$work/report.$fmt"
              check "report --prometheus has every option" has_options_prom "$work/report.$fmt" ;;
    esac
    # --config
    run "config.$fmt" --config "${flag[@]}" "$h"
    case $fmt in
        text) check "--config text has every option (rc $rc)" has_options_text "$work/config.$fmt" ;;
        json) check "--config --json parses (rc $rc)" is_json "$work/config.$fmt"
              check "--config --json has every option, and only the configuration" \
                  bash -c 'jq -e ".pid == $2 and (has(\"totals\") | not)" "$1" >/dev/null' _ "$work/config.$fmt" "$h"
              check "... every option" has_options_json "$work/config.$fmt" .config ;;
        prometheus) check "--config --prometheus passes ${promtool:+promtool }(rc $rc)" is_prom "$work/config.$fmt"
              check "--config --prometheus has every option and no statistics" \
                  bash -c '! grep -q "^xalloc_allocated_bytes" "$1"' _ "$work/config.$fmt"
              check "... every option" has_options_prom "$work/config.$fmt" ;;
    esac
    # --all
    run "all.$fmt" --all "${flag[@]}"
    case $fmt in
        text) check "--all text lists the holder (rc $rc)" grep -qE "^ *$h holder " "$work/all.$fmt" ;;
        json) check "--all --json parses (rc $rc)" is_json "$work/all.$fmt"
              check "--all --json: the holder, with every option" \
                  has_options_json "$work/all.$fmt" ".[] | select(.pid == $h) | .config" ;;
        prometheus) check "--all --prometheus passes ${promtool:+promtool }(rc $rc)" is_prom "$work/all.$fmt"
              check "--all --prometheus: one HELP per family" \
                  bash -c '[ -z "$(grep "^# HELP" "$1" | sort | uniq -d)" ]' _ "$work/all.$fmt"
              check "--all --prometheus has the holder" grep -q "^xalloc_allocated_bytes{pid=\"$h\"" "$work/all.$fmt" ;;
    esac
    # --file (the memory file itself)
    run "file.$fmt" --file "$memfd" "${flag[@]}"
    case $fmt in
        text) check "--file text (rc $rc)" is_text "$work/file.$fmt" ;;
        json) check "--file --json parses (rc $rc)" is_json "$work/file.$fmt" ;;
        prometheus) check "--file --prometheus passes (rc $rc)" is_prom "$work/file.$fmt" ;;
    esac
    # --watch
    if [ "$fmt" = prometheus ]; then
        run "watch.$fmt" --watch 0.1 --count 2 "${flag[@]}" "$h"
        check "--watch --prometheus refused clearly (rc $rc): $(cat "$work/watch.$fmt.err")" \
            refused "--watch --prometheus" "$work/watch.$fmt.err"
    else
        run "watch.$fmt" --watch 0.1 --count 2 "${flag[@]}" "$h"
        if [ "$fmt" = json ]; then
            check "--watch --json: a stream of 2 JSON objects (rc $rc)" \
                bash -c '[ "$(jq -s length "$1")" = 2 ]' _ "$work/watch.$fmt"
        else
            check "--watch text: 2 reports (rc $rc)" bash -c '[ "$(grep -c "^Totals$" "$1")" = 2 ]' _ "$work/watch.$fmt"
        fi
        run "allwatch.$fmt" --all --watch 0.1 --count 2 "${flag[@]}"
        check "--all --watch ${flag[*]}: 2 listings (rc $rc)" test "$rc" = 0 -a -s "$work/allwatch.$fmt"
    fi
    # requests
    for req in purge set dump; do
        args=(--"$req")
        [ "$req" = set ] && args=(--set decay_ms:700)
        run "$req.$fmt" "${args[@]}" "${flag[@]}" "$h"
        case $fmt in
            text) if [ "$req" = dump ]; then
                      check "--dump text: refused by the plain library (rc $rc)" test "$rc" = 7
                  else
                      check "--$req text (rc $rc): $(cat "$work/$req.$fmt")" grep -q "^pid $h (holder): " "$work/$req.$fmt"
                  fi ;;
            json) check "--$req --json parses (rc $rc): $(cat "$work/$req.$fmt")" is_json "$work/$req.$fmt"
                  if [ "$req" = dump ]; then
                      check "... and says no profiler, ok false (rc $rc)" \
                          jqt '.ok == false and (.message | test("no profiler"))' "$work/$req.$fmt"
                  else
                      check "... ok true" jqt ".ok == true and .pid == $h and .request == \"$req\"" "$work/$req.$fmt"
                  fi ;;
            prometheus) check "--$req --prometheus refused clearly (rc $rc): $(cat "$work/$req.$fmt.err")" \
                  refused "--prometheus" "$work/$req.$fmt.err" ;;
        esac
    done
done
echo "formats.sh: $pass passed, $fail failed"
[ "$fail" = 0 ]
