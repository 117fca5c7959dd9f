#!/bin/bash
# systemd/xalloc.conf.sh: writes the commented /etc/xalloc.conf on stdout,
# from the option table (src/options.def), so that its names, defaults and
# one-line docs never drift from the library. Run by `make install`
# (install-examples). Usage: systemd/xalloc.conf.sh src/options.def [CPP]
set -euo pipefail

def=${1:-src/options.def}
cpp=${2:-cpp}

cat <<'HEAD'
# /etc/xalloc.conf: system-wide options of the xalloc memory allocator.
#
# Read once at start by every process that loads libxalloc.so.1. Later
# sources win: built-in defaults < this file < the XALLOC_CONF environment
# variable (set per service by xalloc-enable(8)). XALLOC_CONF_FILE names
# another file instead. Set-uid and other secure-mode processes ignore both
# variables. See xalloc.conf(5) for every option.
#
# Syntax: one "key:value" per line (or several, separated by commas);
# "#" starts a comment. A bad line gives one "xalloc:" message on stderr and
# the default is kept. Every option is shown commented out, set to its
# default unless the comment says otherwise.
HEAD

# One line per option: name @@ type @@ default @@ min @@ max @@ values @@ flags @@ doc
$cpp -P -undef -nostdinc \
    -D'XA_OPTION(n,t,d,mi,ma,v,f,doc)=XAOPT n@@t@@d@@mi@@ma@@v@@f@@doc' "$def" |
    awk -F'@@' '
    function unq(s) { sub(/^[ \t]*"/, "", s); sub(/"[ \t]*$/, "", s); return s }
    /^XAOPT / {
        name = $1; sub(/^XAOPT /, "", name)
        def = unq($3); vals = unq($6); flags = $7; doc = unq($8)
        min = $4 + 0; max = $5 + 0
        printf "\n# %s%s", toupper(substr(doc, 1, 1)), substr(doc, 2)
        if (flags ~ /XA_OF_PROF/) printf " (profiling build only)"
        if (vals != "") printf ". One of: %s", vals
        printf ".\n"
        if (flags ~ /XA_OF_PER_CPU/) {
            ex = 8
            if (ex < min) ex = min
            if (ex > max) ex = max
            printf "# Default: %s; this example sets %d.\n#%s:%d\n", def, ex, name, ex
        } else {
            printf "#%s:%s\n", name, def
        }
        count++
    }
    END { if (count == 0) { print "xalloc.conf.sh: no XA_OPTION rows" > "/dev/stderr"; exit 1 } }'
