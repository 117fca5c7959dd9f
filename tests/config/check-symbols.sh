#!/bin/sh
# check-symbols.sh: the configuration parser runs before the allocator
# exists, so config.o may call only the os layer (raw syscalls), xa_fatal,
# and the pure memory/string primitives the compiler emits for loops and
# struct copies (they neither allocate nor do I/O). Any other undefined
# symbol (malloc, stdio, getenv, open, strerror...) fails.
# Usage: tests/config/check-symbols.sh build/obj/config.o
set -eu
obj=${1:?usage: check-symbols.sh OBJECT}
[ -f "$obj" ] || { echo "check-symbols: FAIL: $obj not found" >&2; exit 1; }
bad=$(nm -u "$obj" | awk '{print $NF}' |
      grep -Ev '^(xa_os_[a-z_]+|xa_fatal|memcpy|memset|memmove|memcmp|memchr|strlen|_GLOBAL_OFFSET_TABLE_)$' || true)
if [ -n "$bad" ]; then
    echo "check-symbols: FAIL: $obj calls outside the os layer:" >&2
    echo "$bad" | sed 's/^/  /' >&2
    exit 1
fi
echo "check-symbols: ok: $obj calls only: $(nm -u "$obj" | awk '{print $NF}' | tr '\n' ' ')"
