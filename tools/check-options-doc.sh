#!/bin/sh
# check-options-doc.sh: the option table (src/options.def) and the man page
# (man/xalloc.conf.5) must list the same options, in the same order, with
# the same defaults; the man page must also render without a warning.
# The table is read through the C preprocessor, so its exact layout does
# not matter. In the man page an option is a ".TP" followed by ".B name"
# in the OPTIONS section, and its default is the first "Default: \fB...\fR"
# after it.
# Usage: tools/check-options-doc.sh [src/options.def] [man/xalloc.conf.5]
set -eu
def=${1:-src/options.def}
man=${2:-man/xalloc.conf.5}
CC=${CC:-cc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# name<TAB>default from the table.
printf '#define XA_OPTION(name, type, def, ...) XA_DOC_ROW name def\n#include "%s"\n' \
    "$(basename "$def")" |
    $CC -E -P -I "$(dirname "$def")" -x c - |
    sed -n 's/^ *XA_DOC_ROW \([a-z_0-9]*\) "\(.*\)" *$/\1	\2/p' >"$tmp/table"
[ -s "$tmp/table" ] || { echo "check-options-doc: FAIL: no options read from $def" >&2; exit 1; }

# name<TAB>default from the man page.
awk '
    /^\.SH / { in_opts = ($0 == ".SH OPTIONS"); next }
    !in_opts { next }
    /^\.TP/ { tp = 1; next }
    tp && /^\.B [a-z_0-9]+$/ { if (name != "") print name "\t" (have ? def : "?");
                               name = $2; have = 0; tp = 0; next }
    { tp = 0 }
    name != "" && !have && index($0, "Default: \\fB") {
        s = substr($0, index($0, "Default: \\fB") + 12)
        def = substr(s, 1, index(s, "\\fR") - 1); have = 1
    }
    END { if (name != "") print name "\t" (have ? def : "?") }
' "$man" | sed 's/	""$/	/' >"$tmp/man"

if ! diff -u "$tmp/table" "$tmp/man" >"$tmp/diff"; then
    echo "check-options-doc: FAIL: $def and $man disagree (name<TAB>default; - table, + man page):" >&2
    cat "$tmp/diff" >&2
    exit 1
fi

# The man page renders cleanly (groff prints nothing when all is well).
if command -v groff >/dev/null 2>&1; then
    out=$(groff -ww -man -z "$man" 2>&1)
    if [ -n "$out" ]; then
        echo "check-options-doc: FAIL: groff warnings for $man:" >&2
        echo "$out" >&2
        exit 1
    fi
else
    echo "check-options-doc: note: groff not installed, rendering not checked"
fi
echo "check-options-doc: ok: $(wc -l <"$tmp/table") options, names and defaults agree"
