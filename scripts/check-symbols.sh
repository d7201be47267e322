#!/usr/bin/env bash
# Fails if the shared library LIB exports a symbol outside the bfh_ API: the library is
# built with hidden visibility and include/bfh.h marks its functions BFH_API.
#   bash scripts/check-symbols.sh P/lib/libbfh.so
set -euo pipefail
if [ $# -ne 1 ]; then
  echo "usage: bash scripts/check-symbols.sh LIB" >&2
  exit 2
fi
lib=$1
# The linker's own entries (_init, _fini, the _edata/_end markers) are not bfh's.
symbols=$(nm -D --defined-only "$lib" | awk '{print $3}')
stray=$(grep -Ev '^(bfh_|_init$|_fini$|_edata$|_end$|__bss_start$)' <<<"$symbols" || true)
count=$(grep -c '^bfh_' <<<"$symbols" || true)
if [ -n "$stray" ]; then
  echo "check-symbols: $lib exports symbols outside the bfh_ API:" >&2
  while read -r name; do echo "  $name" >&2; done <<<"$stray"
  exit 1
fi
if [ "$count" -eq 0 ]; then
  echo "check-symbols: $lib exports no bfh_ symbol at all" >&2
  exit 1
fi
echo "check-symbols: $lib exports $count bfh_ symbols and nothing else"
